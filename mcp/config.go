package mcp

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/lite-agent/lite-agent/internal/netmode"
	"github.com/lite-agent/lite-agent/internal/safefile"
	"github.com/lite-agent/lite-agent/tools"
)

// Transport types of ServerConfig.Type.
const (
	TypeStdio = "stdio"
	TypeHTTP  = "http" // streamable HTTP; "streamable-http" is accepted too
	TypeSSE   = "sse"  // the 2024-11-05 HTTP+SSE transport, for old servers
	TypeSDK   = "sdk"  // an in-process *Server
)

// Config is the set of MCP servers of a session, in the shape users already
// have in their files:
//
//	{"mcpServers": {
//	  "fs":    {"command": "mcp-server-filesystem", "args": ["/work"], "filesystem": "workspace"},
//	  "tools": {"type": "http", "url": "http://127.0.0.1:8080/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
//	}}
type Config struct {
	Servers map[string]ServerConfig `json:"mcpServers"`
}

// ServerConfig describes one server. Only the fields of its Type apply.
//
// Confinement of a stdio server: the server process runs inside the
// sandbox. Network (default none) is its network mode; Filesystem (default
// none) says what of the workspace it sees: none (only a private temporary
// directory), workspace (read-write, or read-only when SideEffects is
// "none"), or unrestricted (the whole file system, read-write). The program
// itself, the system paths, and ReadOnlyPaths are readable. Every tool of
// the server carries the resulting tools.Security, so the strict assembler
// judges it as it judges any custom tool — and the sandbox enforces it.
//
// An HTTP or SSE server is reached from this process: Network (default:
// loopback for a localhost or loopback URL, private for a private address,
// unrestricted otherwise) is enforced on every connection the client
// makes, whatever the host name resolves to.
type ServerConfig struct {
	// Type is "stdio" (the default when Command is set), "http" (also
	// "streamable-http"), "sse", or "sdk" (Server set; Go only).
	Type string `json:"type,omitempty"`

	// stdio: the program, its arguments, and environment variables set
	// for it on top of the sandbox's allowlist (the agent's own
	// environment is not passed on).
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`

	// http, sse: the endpoint and headers sent with every request.
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`

	// Network, Filesystem and SideEffects declare what the server may
	// touch, with the values and meaning of tools.Security. Empty
	// SideEffects is derived: external when the server has network,
	// workspace when it has the workspace or more, otherwise none.
	Network     tools.Network     `json:"network,omitempty"`
	Filesystem  tools.Filesystem  `json:"filesystem,omitempty"`
	SideEffects tools.SideEffects `json:"sideEffects,omitempty"`

	// ReadOnlyPaths are further paths a stdio server may read (its
	// installation, its data), absolute.
	ReadOnlyPaths []string `json:"readOnlyPaths,omitempty"`

	// TrustAnnotations believes the server's readOnlyHint. The hint is
	// never a permission (a call still needs an allow rule, a mode, a hook
	// or CanUseTool), but it lets a call run in plan mode and concurrently
	// with other read-only calls, so by default the hint of an external
	// server is only kept when its sandbox makes it true anyway (stdio,
	// network none, side effects none). The other hints always pass.
	TrustAnnotations bool `json:"trustAnnotations,omitempty"`

	// Server is the in-process server of an "sdk" entry; its name must be
	// the entry's name.
	Server *Server `json:"-"`

	// FromWorkspace says the entry was read from a file in the workspace,
	// which an agent's bash could have written in an earlier session. Set
	// by the loader (never by the file). Such an entry may not widen its
	// server's sandbox beyond what the agent's own commands have: no
	// ReadOnlyPaths, no "filesystem": "unrestricted", no network beyond
	// the commands' (local.CheckMCPServers refuses each by name), and its
	// program and absolute arguments are made readable only inside the
	// workspace (the system paths are readable anyway) (otherwise `"args":
	// ["/home/u/.ssh/id_rsa"]` would grant the server a read of the key) —
	// unless UserTrusted and the preset trusts the workspace's files
	// (standard, permissive), in which case local clears the flag.
	FromWorkspace bool `json:"-"`
	// WorkspaceFile and WorkspaceDigest say, for an entry FromWorkspace,
	// which file of the workspace it came from (its path there) and in
	// which version (the SHA-256 of the bytes read). Set by the loader
	// (LoadConfigIn); local checks them against the versions the user
	// trusted (`lite-agent policy trust FILE`).
	WorkspaceFile   string   `json:"-"`
	WorkspaceDigest [32]byte `json:"-"`
	// EnvRefs are the environment variables the entry's ${VAR}
	// references named (set by ParseConfig, sorted). An entry from an
	// untrusted workspace file may not pull the user's environment — API
	// keys included — into a server the agent wrote (local refuses the
	// names its commands would not see anyway).
	EnvRefs []string `json:"-"`
}

// ParseConfig reads a config in the {"mcpServers": {...}} shape. ${VAR}
// and ${VAR:-default} in command, args, env values, url and header values
// are replaced from this process's environment; an unset variable without
// a default is an error. Every entry is checked (see ServerConfig.Check).
// Unknown fields are ignored, so that files written for other clients load;
// a misspelt confinement field falls back to the narrowest value.
func ParseConfig(data []byte) (*Config, error) {
	var c Config
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("mcp config: %w", err)
	}
	if c.Servers == nil {
		return nil, fmt.Errorf(`mcp config: no "mcpServers" object`)
	}
	for _, name := range c.names() {
		sc := c.Servers[name]
		if err := sc.expandEnv(); err != nil {
			return nil, fmt.Errorf("mcp config: server %q: %w", name, err)
		}
		if err := sc.Check(name); err != nil {
			return nil, fmt.Errorf("mcp config: %w", err)
		}
		c.Servers[name] = sc
	}
	return &c, nil
}

// LoadConfig reads and parses the config file at path (--mcp-config).
// The file may have been written by an agent (a .mcp.json in a
// workspace): it must be a regular file of at most 1 MiB, opened without
// blocking, so a FIFO, a device or a huge file is an error naming it, not
// a hang. Symlinks are followed — use LoadConfigIn for a path that may lie
// in a workspace, where they are not.
func LoadConfig(path string) (*Config, error) {
	return LoadConfigIn(path, "")
}

// LoadConfigIn is LoadConfig for a path that may lie in workspace, the
// directory an agent can write: there, no symlink is followed
// (safefile.ReadUserFile states the rule), and every entry of a file
// found there is marked FromWorkspace, with the file's path and digest,
// so that local holds it to the agent's own confinement unless the user
// trusted that version.
func LoadConfigIn(path, workspace string) (*Config, error) {
	data, rel, err := safefile.ReadUserFileFrom(path, workspace, safefile.DefaultLimit)
	if err != nil {
		return nil, err // names the path already (an *fs.PathError)
	}
	c, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if rel != "" {
		c.markFromWorkspace(rel, sha256.Sum256(data))
	}
	return c, nil
}

// markFromWorkspace marks every entry as read from the workspace file
// rel in the version digest.
func (c *Config) markFromWorkspace(rel string, digest [32]byte) {
	for name, sc := range c.Servers {
		sc.FromWorkspace = true
		sc.WorkspaceFile = rel
		sc.WorkspaceDigest = digest
		c.Servers[name] = sc
	}
}

func (c *Config) names() []string {
	names := make([]string, 0, len(c.Servers))
	for n := range c.Servers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// kind returns the normalised transport type.
func (c *ServerConfig) kind() string {
	switch t := strings.ToLower(c.Type); t {
	case "":
		if c.Server != nil {
			return TypeSDK
		}
		if c.URL != "" && c.Command == "" {
			return TypeHTTP
		}
		return TypeStdio
	case "streamable-http", "streamablehttp", "streamable_http":
		return TypeHTTP
	default:
		return t
	}
}

// Check reports the first problem with the entry named name: an invalid
// server name, a missing command or URL, fields of another transport, or
// an unknown confinement value.
func (c *ServerConfig) Check(name string) error {
	if err := CheckServerName(name); err != nil {
		return err
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("server %q: %s", name, fmt.Sprintf(format, args...))
	}
	if err := (&tools.Security{Network: c.networkOr(tools.NetworkNone), Filesystem: c.Filesystem, SideEffects: c.SideEffects}).Validate(); err != nil {
		return bad("%v", err)
	}
	switch k := c.kind(); k {
	case TypeStdio:
		if c.Command == "" {
			return bad("a stdio server needs a command")
		}
		if c.URL != "" || len(c.Headers) > 0 {
			return bad("url and headers are for http and sse servers, not stdio")
		}
		for _, p := range c.ReadOnlyPaths {
			if !filepath.IsAbs(p) {
				return bad("readOnlyPaths: %q is not an absolute path", p)
			}
		}
	case TypeHTTP, TypeSSE:
		if c.URL == "" {
			return bad("a %s server needs a url", k)
		}
		u, err := url.Parse(c.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("url %q: want an http:// or https:// URL", c.URL)
		}
		if c.Command != "" || len(c.Args) > 0 || len(c.Env) > 0 || len(c.ReadOnlyPaths) > 0 {
			return bad("command, args, env and readOnlyPaths are for stdio servers, not %s", k)
		}
		if c.Filesystem != "" && c.Filesystem != tools.FilesystemNone {
			return bad("filesystem applies to stdio servers (a remote server's files are not ours to confine)")
		}
		if c.Network == tools.NetworkNone {
			return bad("network none leaves no way to reach %s", c.URL)
		}
		need := networkFor(u.Hostname())
		if c.Network != "" && !need.Within(c.Network) && isIPLiteral(u.Hostname()) {
			return bad("url %q is outside the declared network %q", c.URL, c.Network)
		}
		for k := range c.Headers {
			if k == "" || strings.ContainsAny(k, " \t\r\n:") {
				return bad("header name %q is not valid", k)
			}
		}
	case TypeSDK:
		if c.Server == nil {
			return bad(`type "sdk" needs an in-process Server (Go only)`)
		}
		if c.Server.Name() != name {
			return bad("the in-process server is named %q; its entry must have the same name (the tools are already named mcp__%s__...)", c.Server.Name(), c.Server.Name())
		}
		if c.Command != "" || c.URL != "" || c.Network != "" || c.Filesystem != "" {
			return bad("an in-process server takes no command, url or confinement (its tools declare their own Security)")
		}
	default:
		return bad("unknown type %q (stdio, http, sse)", c.Type)
	}
	return nil
}

// networkOr is the declared network, or def.
func (c *ServerConfig) networkOr(def tools.Network) tools.Network {
	if c.Network == "" {
		return def
	}
	return c.Network
}

// Security is what every tool of the server declares — for a stdio server
// also what its sandbox enforces — with the defaults filled in: the
// network reaching an HTTP server's URL, side effects derived from the
// network and file system. An assembler judges an external server by it
// before the server starts. It means nothing for an in-process server,
// whose tools declare their own.
func (c *ServerConfig) Security() tools.Security { return c.security() }

// security is Security.
func (c *ServerConfig) security() tools.Security {
	s := tools.Security{Filesystem: c.Filesystem, SideEffects: c.SideEffects}
	switch c.kind() {
	case TypeHTTP, TypeSSE:
		host := ""
		if u, err := url.Parse(c.URL); err == nil {
			host = u.Hostname()
		}
		s.Network = c.networkOr(networkFor(host))
		s.Filesystem = tools.FilesystemNone
		if s.SideEffects == "" {
			s.SideEffects = tools.SideEffectsExternal
		}
	default:
		s.Network = c.networkOr(tools.NetworkNone)
		if s.Filesystem == "" {
			s.Filesystem = tools.FilesystemNone
		}
		if s.SideEffects == "" {
			switch {
			case s.Network != tools.NetworkNone:
				s.SideEffects = tools.SideEffectsExternal
			case s.Filesystem != tools.FilesystemNone:
				s.SideEffects = tools.SideEffectsWorkspace
			default:
				s.SideEffects = tools.SideEffectsNone
			}
		}
	}
	return s
}

// readOnlyTrusted says whether the server's readOnlyHint may be kept.
func (c *ServerConfig) readOnlyTrusted() bool {
	if c.TrustAnnotations {
		return true
	}
	s := c.security()
	return c.kind() == TypeStdio && s.Network == tools.NetworkNone && s.SideEffects == tools.SideEffectsNone
}

// networkFor is the narrowest network mode that reaches host.
func networkFor(host string) tools.Network {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return tools.NetworkLoopback
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return tools.Network(netmode.Needed(a))
	}
	return tools.NetworkUnrestricted
}

func isIPLiteral(host string) bool { return net.ParseIP(host) != nil }

var envRefRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// expandEnv replaces ${VAR} and ${VAR:-default} in the string fields.
func (c *ServerConfig) expandEnv() error {
	var firstErr error
	refs := map[string]bool{}
	expand := func(s string) string {
		return envRefRE.ReplaceAllStringFunc(s, func(ref string) string {
			m := envRefRE.FindStringSubmatch(ref)
			refs[m[1]] = true
			if v, ok := os.LookupEnv(m[1]); ok && v != "" {
				return v
			}
			if m[2] != "" {
				return m[3]
			}
			if firstErr == nil {
				firstErr = fmt.Errorf("${%s} is not set in the environment (use ${%s:-default} for a default)", m[1], m[1])
			}
			return ""
		})
	}
	c.Command = expand(c.Command)
	c.URL = expand(c.URL)
	for i, a := range c.Args {
		c.Args[i] = expand(a)
	}
	for k, v := range c.Env {
		c.Env[k] = expand(v)
	}
	for k, v := range c.Headers {
		c.Headers[k] = expand(v)
	}
	c.EnvRefs = slices.Sorted(maps.Keys(refs))
	return firstErr
}
