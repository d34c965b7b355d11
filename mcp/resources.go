package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lite-agent/lite-agent/tools"
)

// Names of the two tools through which the model reaches servers'
// resources. They are not mcp__ names: they span every server.
const (
	ListResourcesTool = "list_mcp_resources"
	ReadResourceTool  = "read_mcp_resource"
)

// ResourceList is one page of one server's resources.
type ResourceList struct {
	Server     string                  `json:"server"`
	Resources  []*sdk.Resource         `json:"resources,omitempty"`
	Templates  []*sdk.ResourceTemplate `json:"resourceTemplates,omitempty"`
	NextCursor string                  `json:"nextCursor,omitempty"`
	Error      string                  `json:"error,omitempty"`
}

type listResourcesIn struct {
	Server string `json:"server,omitempty" jsonschema:"only this server's resources (default: every server that has resources)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"the nextCursor of a previous listing of the same server, for the next page"`
}

type readResourceIn struct {
	Server string `json:"server" jsonschema:"the server that has the resource, as named by list_mcp_resources"`
	URI    string `json:"uri" jsonschema:"the resource's URI"`
}

// resourceServers are the connected servers that offer resources.
func (m *Manager) resourceServers() []*conn {
	var out []*conn
	for _, name := range m.names {
		c := m.conns[name]
		c.mu.Lock()
		ok := c.state == StateConnected && c.caps != nil && c.caps.Resources != nil
		c.mu.Unlock()
		if ok {
			out = append(out, c)
		}
	}
	return out
}

// ListResources lists one page of the resources and resource templates of
// server, or of every server offering resources when server is empty
// (cursor then must be empty). A server's failure is reported in its
// entry, not as an error.
func (m *Manager) ListResources(ctx context.Context, server, cursor string) ([]ResourceList, error) {
	var targets []*conn
	if server != "" {
		c, err := m.resourceServer(server)
		if err != nil {
			return nil, err
		}
		targets = []*conn{c}
	} else {
		if cursor != "" {
			return nil, fmt.Errorf("a cursor belongs to one server's listing: give the server too")
		}
		targets = m.resourceServers()
	}
	out := make([]ResourceList, len(targets))
	for i, c := range targets {
		out[i] = c.listResources(ctx, cursor)
	}
	return out, nil
}

func (m *Manager) resourceServer(name string) (*conn, error) {
	c := m.conns[name]
	if c == nil {
		return nil, fmt.Errorf("no MCP server named %q (servers: %s)", name, strings.Join(m.names, ", "))
	}
	if _, err := c.live(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	has := c.caps != nil && c.caps.Resources != nil
	c.mu.Unlock()
	if !has {
		return nil, fmt.Errorf("the MCP server %s offers no resources", name)
	}
	return c, nil
}

func (c *conn) listResources(ctx context.Context, cursor string) ResourceList {
	out := ResourceList{Server: c.name}
	cs, err := c.live()
	if err != nil {
		out.Error = err.Error()
		return out
	}
	res, err := cs.ListResources(ctx, &sdk.ListResourcesParams{Cursor: cursor})
	if err != nil {
		out.Error = c.callError(ctx, "listing resources", err).Error()
		return out
	}
	out.Resources, out.NextCursor = res.Resources, res.NextCursor
	if cursor == "" {
		// Templates are few; they come with the first page only. A
		// server without templates answers with an error, which is not
		// worth reporting.
		if tr, err := cs.ListResourceTemplates(ctx, nil); err == nil {
			out.Templates = tr.ResourceTemplates
		}
	}
	return out
}

// ReadResource reads uri from server and returns its contents as content
// blocks: text as embedded text resources, images and audio as image and
// audio blocks (so that a model can see them), other binaries as embedded
// blobs.
func (m *Manager) ReadResource(ctx context.Context, server, uri string) ([]tools.Content, error) {
	c, err := m.resourceServer(server)
	if err != nil {
		return nil, err
	}
	cs, err := c.live()
	if err != nil {
		return nil, err
	}
	res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
	if err != nil {
		return nil, c.callError(ctx, "reading "+uri, err)
	}
	var out []tools.Content
	for _, rc := range res.Contents {
		if rc == nil {
			continue
		}
		switch {
		case rc.Blob != nil && strings.HasPrefix(rc.MIMEType, "image/"):
			out = append(out, tools.ImageContent(rc.Blob, rc.MIMEType))
		case rc.Blob != nil && strings.HasPrefix(rc.MIMEType, "audio/"):
			out = append(out, tools.AudioContent(rc.Blob, rc.MIMEType))
		default:
			out = append(out, tools.EmbeddedResource(fromSDKResourceContents(rc)))
		}
	}
	if len(out) == 0 {
		out = append(out, tools.TextContent("(the resource is empty)"))
	}
	return out, nil
}

// buildResourceTools makes list_mcp_resources and read_mcp_resource when a
// connected server offers resources. They declare the widest Security of
// those servers, since a read reaches any of them.
func (m *Manager) buildResourceTools() {
	servers := m.resourceServers()
	if len(servers) == 0 {
		return
	}
	sec := tools.Security{Network: tools.NetworkNone, Filesystem: tools.FilesystemNone, SideEffects: tools.SideEffectsNone}
	var names []string
	inProcess := false
	for _, c := range servers {
		names = append(names, c.name)
		s := c.sec
		if c.kind == TypeSDK {
			inProcess = true
			// An in-process server reads its resources in this process,
			// with the reach of its own code; its tools' declarations
			// are the best account of that reach.
			s = widest(c.cfg.Server.Tools())
		}
		sec = widen(sec, s)
	}
	sort.Strings(names)
	list := tools.Must(tools.New(ListResourcesTool,
		"List the resources (documents, files, data) that the connected MCP servers offer, with their URIs; read one with "+ReadResourceTool+". Servers with resources: "+strings.Join(names, ", ")+".",
		func(ctx *tools.Context, in listResourcesIn) (*tools.Result, error) {
			lists, err := m.ListResources(ctx.Context(), in.Server, in.Cursor)
			if err != nil {
				return nil, err
			}
			b, err := json.MarshalIndent(lists, "", " ")
			if err != nil {
				return nil, err
			}
			return &tools.Result{Content: []tools.Content{tools.TextContent(string(b))}, Structured: lists}, nil
		},
		&tools.Options{Security: &sec, Annotations: &tools.Annotations{Title: "List MCP resources", ReadOnlyHint: true}}))
	read := tools.Must(tools.New(ReadResourceTool,
		"Read a resource of a connected MCP server by its URI (see "+ListResourcesTool+").",
		func(ctx *tools.Context, in readResourceIn) (*tools.Result, error) {
			blocks, err := m.ReadResource(ctx.Context(), in.Server, in.URI)
			if err != nil {
				return nil, err
			}
			return &tools.Result{Content: blocks}, nil
		},
		&tools.Options{Security: &sec, Annotations: &tools.Annotations{Title: "Read an MCP resource", ReadOnlyHint: true}}))
	m.mu.Lock()
	m.resources = []*tools.Tool{list, read}
	m.forwards[list], m.forwards[read] = true, true
	m.resourcesInProcess = inProcess
	m.mu.Unlock()
}

// widest is the union of the tools' declarations (undeclared counts as
// unrestricted: nothing is known of it).
func widest(ts []*tools.Tool) tools.Security {
	s := tools.Security{Network: tools.NetworkNone, Filesystem: tools.FilesystemNone, SideEffects: tools.SideEffectsNone}
	for _, t := range ts {
		d := t.Security()
		if d == nil {
			d = &tools.Security{Network: tools.NetworkUnrestricted, Filesystem: tools.FilesystemUnrestricted, SideEffects: tools.SideEffectsExternal}
		}
		s = widen(s, *d)
	}
	return s
}

func widen(a, b tools.Security) tools.Security {
	b = b.Normalized()
	a.Network = a.Network.Wider(b.Network)
	a.Filesystem = a.Filesystem.Wider(b.Filesystem)
	a.SideEffects = a.SideEffects.Wider(b.SideEffects)
	return a
}
