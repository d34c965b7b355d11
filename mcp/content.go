package mcp

import (
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lite-agent/lite-agent/tools"
)

// The two content models are the same MCP blocks; these functions only
// change the Go representation. Nothing is dropped: a block this side has
// no field for (annotations, _meta) is not part of what the model sees.

func toSDKContent(c tools.Content) (sdk.Content, error) {
	switch c.Type {
	case tools.ContentText:
		return &sdk.TextContent{Text: c.Text}, nil
	case tools.ContentImage:
		return &sdk.ImageContent{Data: c.Data, MIMEType: c.MIMEType}, nil
	case tools.ContentAudio:
		return &sdk.AudioContent{Data: c.Data, MIMEType: c.MIMEType}, nil
	case tools.ContentResourceLink:
		l := &sdk.ResourceLink{URI: c.URI, Name: c.Name, Title: c.Title, Description: c.Description, MIMEType: c.MIMEType}
		if c.Size > 0 {
			size := c.Size
			l.Size = &size
		}
		return l, nil
	case tools.ContentResource:
		if c.Resource == nil {
			return nil, fmt.Errorf("resource content without a resource")
		}
		r := c.Resource
		return &sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: r.URI, MIMEType: r.MIMEType, Text: r.Text, Blob: r.Blob}}, nil
	}
	return nil, fmt.Errorf("unknown content type %q", c.Type)
}

func fromSDKContent(c sdk.Content) (tools.Content, error) {
	switch v := c.(type) {
	case *sdk.TextContent:
		return tools.TextContent(v.Text), nil
	case *sdk.ImageContent:
		return tools.ImageContent(v.Data, v.MIMEType), nil
	case *sdk.AudioContent:
		return tools.AudioContent(v.Data, v.MIMEType), nil
	case *sdk.ResourceLink:
		out := tools.Content{Type: tools.ContentResourceLink, URI: v.URI, Name: v.Name, Title: v.Title, Description: v.Description, MIMEType: v.MIMEType}
		if v.Size != nil {
			out.Size = *v.Size
		}
		return out, nil
	case *sdk.EmbeddedResource:
		if v.Resource == nil {
			return tools.Content{}, fmt.Errorf("embedded resource without contents")
		}
		return tools.EmbeddedResource(fromSDKResourceContents(v.Resource)), nil
	}
	return tools.Content{}, fmt.Errorf("unsupported content block %T", c)
}

func fromSDKResourceContents(r *sdk.ResourceContents) tools.ResourceContents {
	return tools.ResourceContents{URI: r.URI, MIMEType: r.MIMEType, Text: r.Text, Blob: r.Blob}
}

// toCallToolResult turns a tool's result into the MCP result the server
// sends. Structured becomes structuredContent.
func toCallToolResult(r *tools.Result) *sdk.CallToolResult {
	out := &sdk.CallToolResult{Content: make([]sdk.Content, 0, len(r.Content)), IsError: r.IsError, StructuredContent: r.Structured}
	for i, c := range r.Content {
		sc, err := toSDKContent(c)
		if err != nil {
			// tools.Tool.Call validates blocks, so this is a block of a
			// type added to tools but not here: say so instead of
			// dropping it.
			sc = &sdk.TextContent{Text: fmt.Sprintf("[block %d could not be sent over MCP: %v]", i, err)}
		}
		out.Content = append(out.Content, sc)
	}
	return out
}

// fromCallToolResult turns what an MCP server returned into a tool result.
func fromCallToolResult(r *sdk.CallToolResult) (*tools.Result, error) {
	if r == nil {
		return nil, fmt.Errorf("the server returned no result")
	}
	out := &tools.Result{Content: make([]tools.Content, 0, len(r.Content)), IsError: r.IsError, Structured: r.StructuredContent}
	for i, c := range r.Content {
		tc, err := fromSDKContent(c)
		if err != nil {
			return nil, fmt.Errorf("block %d: %w", i, err)
		}
		out.Content = append(out.Content, tc)
	}
	return out, nil
}

// toSDKAnnotations maps our behaviour hints to MCP's.
func toSDKAnnotations(a tools.Annotations) *sdk.ToolAnnotations {
	if a == (tools.Annotations{}) {
		return nil
	}
	return &sdk.ToolAnnotations{
		Title:           a.Title,
		ReadOnlyHint:    a.ReadOnlyHint,
		DestructiveHint: a.DestructiveHint,
		OpenWorldHint:   a.OpenWorldHint,
	}
}

// fromSDKAnnotations maps a server's hints to ours. trustReadOnly says
// whether the server's readOnlyHint may be believed (see
// ServerConfig.TrustAnnotations): a read-only tool runs in plan mode and
// concurrently with other read-only calls, so an untrusted server must
// not be able to claim it.
func fromSDKAnnotations(t *sdk.Tool, trustReadOnly bool) tools.Annotations {
	var a tools.Annotations
	a.Title = t.Title
	if t.Annotations == nil {
		return a
	}
	if a.Title == "" {
		a.Title = t.Annotations.Title
	}
	a.ReadOnlyHint = t.Annotations.ReadOnlyHint && trustReadOnly
	a.DestructiveHint = t.Annotations.DestructiveHint
	a.OpenWorldHint = t.Annotations.OpenWorldHint
	return a
}
