package policies

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/lite-agent/lite-agent/internal/safefile"
)

// Policy files are TOML:
//
//	[permissions]
//	default_mode = "acceptEdits"          # optional
//	allow = ["bash(git status)", "bash(npm run test:*)", "read_file(src/**)"]
//	ask   = ["bash(git push:*)"]
//	deny  = ["bash(curl:*)", "write_file(/etc/**)", "mcp__orders__delete_*"]
//
//	[[hooks]]
//	event   = "PreToolUse"               # see HookEvents
//	matcher = "bash"                     # a rule pattern; "" or absent: every tool
//	command = "python3 .lite-agent/hooks/guard.py"
//	timeout = "10s"                      # default 60s
//	name    = "guard"                    # optional; default FILE:LINE
//
// Every key is checked: an unknown key or table, a value of the wrong type,
// a bad rule, mode, event or duration is an error naming the file, the
// line and the reason — nothing is ignored.

// DefaultHookTimeout bounds a hook that gives no timeout.
const DefaultHookTimeout = 60 * time.Second

// HookEvents are the events a hook can be attached to (the kernel's
// HookEvent values).
func HookEvents() []string {
	return []string{"PreToolUse", "PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "Stop", "SessionStart", "SessionEnd", "PermissionDenied", "PreCompact"}
}

// HookSpec is an external command hook from a policy file.
type HookSpec struct {
	Event   string        `json:"event"`
	Matcher string        `json:"matcher,omitempty"`
	Command string        `json:"command"`
	Timeout time.Duration `json:"timeout"`
	Name    string        `json:"name"`
	// Source is FILE:LINE of the [[hooks]] table.
	Source string `json:"source"`
	// DenyOnly: the hook comes from a file the preset does not trust to
	// loosen the policy (the workspace file under strict): it may deny or
	// ask, and an allow, updated_input or updated_output from it makes the
	// hook fail (see kernel.Hook.DenyOnly).
	DenyOnly bool `json:"deny_only,omitempty"`
}

// File is one parsed policy file.
type File struct {
	Path string
	// DefaultMode is "" when the file sets none; ModeSource is FILE:LINE.
	DefaultMode Mode
	ModeSource  string
	// Rules have Source FILE:LINE.
	Rules []Rule
	Hooks []HookSpec
	// Sandbox is the [sandbox] table; every grant's Source is FILE:LINE.
	Sandbox SandboxSettings
	// Digest is the SHA-256 of the bytes parsed: the version that Trust
	// records and Trusted compares, with no second read that an agent
	// could race.
	Digest [32]byte
	// Size is the number of bytes parsed.
	Size int
}

// FileError is a problem in a policy file, at a line.
type FileError struct {
	Path   string
	Line   int
	Reason string
}

func (e *FileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Reason)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Reason)
}

// WorkspaceFile is the policy file of a workspace.
func WorkspaceFile(workspace string) string {
	return filepath.Join(workspace, ".lite-agent", "policy.toml")
}

// UserFile is the user's policy file: $XDG_CONFIG_HOME/lite-agent/
// policy.toml, or ~/.config/lite-agent/policy.toml.
func UserFile() (string, error) {
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "lite-agent", "policy.toml"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the user's policy file: %w (set XDG_CONFIG_HOME)", err)
	}
	return filepath.Join(home, ".config", "lite-agent", "policy.toml"), nil
}

// LoadFile reads and parses a policy file given by the user (the user's
// own file, or one named on the command line); a file that does not exist
// is (nil, nil). Symlinks are resolved first — the user's configuration
// directory is not one the sandbox lets an agent write, and dotfile
// managers link files there — and what they lead to must be a regular
// file of at most 1 MiB, opened without blocking (a FIFO or a device is
// an error naming the file, never a hang).
func LoadFile(path string) (*File, error) {
	data, err := safefile.ReadUserFile(path, "", safefile.DefaultLimit)
	return parseRead(path, data, err)
}

// LoadWorkspaceFile reads and parses the policy file of a workspace,
// WorkspaceFile(workspace); a file that does not exist is (nil, nil).
//
// The agent's bash can write .lite-agent/, so the file is hostile input:
// it is opened beneath the workspace with no symlink anywhere on the way
// (a symlinked .lite-agent/ or policy.toml would load a file the user
// never chose, or /dev/zero), without blocking (a FIFO would hang the
// next session for ever), must be a regular file and at most 1 MiB.
// Each of these is an error naming the file, so the user sees what was
// planted rather than a session that silently runs without the file.
func LoadWorkspaceFile(workspace string) (*File, error) {
	data, err := safefile.ReadFileBeneath(workspace, filepath.Join(".lite-agent", "policy.toml"), safefile.DefaultLimit)
	return parseRead(WorkspaceFile(workspace), data, err)
}

func parseRead(path string, data []byte, err error) (*File, error) {
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the policy file: %w; replace it with a regular file of at most 1 MiB, or remove it", err)
	}
	return ParseFile(path, data)
}

// fileParser walks the TOML expressions of one policy file.
type fileParser struct {
	path  string
	p     unstable.Parser
	f     *File
	table []string
	hook  *HookSpec
	// seen and hookSeen map keys to their line, to refuse a key given
	// twice (hookSeen for the [[hooks]] table being read).
	seen, hookSeen map[string]int
	// newlines holds the offset of every '\n' in the file. The parser's
	// own Shape counts lines from the start of the document on every call,
	// which made a file of n rules take O(n²) (200,000 rules: over 30 s);
	// a binary search here makes every line number O(log n).
	newlines []int
}

// ParseFile parses a policy file's content; path is used in errors and
// rule sources.
func ParseFile(path string, data []byte) (f *File, err error) {
	fp := &fileParser{path: path, f: &File{Path: path, Digest: sha256.Sum256(data), Size: len(data)}, seen: map[string]int{}}
	defer func() {
		// The unstable parser panics on a range outside the document;
		// report that as an error rather than crash on a hostile file.
		if v := recover(); v != nil {
			f, err = nil, &FileError{Path: path, Reason: fmt.Sprintf("cannot parse: %v", v)}
		}
	}()
	for i, c := range data {
		if c == '\n' {
			fp.newlines = append(fp.newlines, i)
		}
	}
	fp.p.Reset(data)
	for fp.p.NextExpression() {
		if err := fp.expression(fp.p.Expression()); err != nil {
			return nil, err
		}
	}
	if perr := fp.p.Error(); perr != nil {
		line := 0
		var pe *unstable.ParserError
		if errors.As(perr, &pe) && pe.Highlight != nil {
			line = fp.lineOfBytes(pe.Highlight)
		}
		return nil, &FileError{Path: path, Line: line, Reason: "not valid TOML: " + perr.Error()}
	}
	if err := fp.finishHook(); err != nil {
		return nil, err
	}
	return fp.f, nil
}

func (fp *fileParser) lineOf(n *unstable.Node) int {
	if n == nil || n.Raw.Length == 0 && n.Raw.Offset == 0 {
		return 0
	}
	return fp.lineAt(int(n.Raw.Offset))
}

func (fp *fileParser) lineOfBytes(b []byte) int {
	return fp.lineAt(int(fp.p.Range(b).Offset))
}

// lineAt is the 1-based line of a byte offset: one more than the number
// of newlines before it.
func (fp *fileParser) lineAt(offset int) int {
	n, _ := slices.BinarySearch(fp.newlines, offset)
	return n + 1
}

func (fp *fileParser) errorf(line int, format string, args ...any) error {
	return &FileError{Path: fp.path, Line: line, Reason: fmt.Sprintf(format, args...)}
}

func (fp *fileParser) source(line int) string { return fmt.Sprintf("%s:%d", fp.path, line) }

// keyOf returns the parts of a node's key and the line of its first part.
func (fp *fileParser) keyOf(n *unstable.Node) ([]string, int) {
	var parts []string
	line := 0
	it := n.Key()
	for it.Next() {
		k := it.Node()
		if line == 0 {
			line = fp.lineOf(k)
		}
		parts = append(parts, string(k.Data))
	}
	return parts, line
}

func (fp *fileParser) expression(n *unstable.Node) error {
	switch n.Kind {
	case unstable.Comment:
		return nil
	case unstable.Table:
		key, line := fp.keyOf(n)
		if err := fp.finishHook(); err != nil {
			return err
		}
		name := strings.Join(key, ".")
		if name != "permissions" && name != "sandbox" {
			if name == "hooks" {
				return fp.errorf(line, "write each hook as a [[hooks]] table")
			}
			return fp.errorf(line, "unknown table [%s] (the tables are [permissions], [sandbox] and [[hooks]])", name)
		}
		if prev, dup := fp.seen["["+name+"]"]; dup {
			return fp.errorf(line, "[%s] is given twice (first on line %d)", name, prev)
		}
		fp.seen["["+name+"]"] = line
		fp.table = key
		return nil
	case unstable.ArrayTable:
		key, line := fp.keyOf(n)
		if err := fp.finishHook(); err != nil {
			return err
		}
		if strings.Join(key, ".") != "hooks" {
			return fp.errorf(line, "unknown table [[%s]] (the tables are [permissions], [sandbox] and [[hooks]])", strings.Join(key, "."))
		}
		fp.table = key
		fp.hook = &HookSpec{Source: fp.source(line), Timeout: DefaultHookTimeout}
		fp.hookSeen = map[string]int{}
		return nil
	case unstable.KeyValue:
		key, line := fp.keyOf(n)
		full := append(append([]string(nil), fp.table...), key...)
		name := strings.Join(full, ".")
		seen := fp.seen
		if fp.hook != nil {
			seen = fp.hookSeen
		}
		if prev, dup := seen[name]; dup {
			return fp.errorf(line, "%s is given twice (first on line %d)", name, prev)
		}
		seen[name] = line
		return fp.keyValue(full, line, n.Value())
	}
	return fp.errorf(fp.lineOf(n), "unexpected %s", n.Kind)
}

func (fp *fileParser) keyValue(key []string, line int, v *unstable.Node) error {
	name := strings.Join(key, ".")
	switch {
	case len(key) == 2 && key[0] == "permissions":
		switch key[1] {
		case "allow", "ask", "deny":
			return fp.rules(Behavior(key[1]), name, line, v)
		case "default_mode":
			s, err := fp.str(name, line, v)
			if err != nil {
				return err
			}
			m, err := ParseMode(s)
			if err != nil {
				return fp.errorf(line, "%s: %v", name, err)
			}
			if m == ModeBypassPermissions {
				return fp.errorf(line, "%s: bypassPermissions cannot be set in a policy file; it needs the explicit --dangerously-skip-permissions (AllowDangerouslySkipPermissions)", name)
			}
			fp.f.DefaultMode, fp.f.ModeSource = m, fp.source(line)
			return nil
		}
	case len(key) == 2 && key[0] == "sandbox":
		if err, ok := fp.sandboxKey(key[1], name, line, v); ok {
			return err
		}
	case len(key) == 2 && key[0] == "hooks" && fp.hook != nil:
		switch key[1] {
		case "event":
			s, err := fp.str(name, line, v)
			if err != nil {
				return err
			}
			known := false
			for _, e := range HookEvents() {
				known = known || e == s
			}
			if !known {
				return fp.errorf(line, "%s: unknown event %q (%s)", name, s, strings.Join(HookEvents(), ", "))
			}
			fp.hook.Event = s
			return nil
		case "matcher":
			s, err := fp.str(name, line, v)
			if err != nil {
				return err
			}
			if s != "" {
				if _, err := ParseMatcher(s); err != nil {
					return fp.errorf(line, "%s: %v", name, err)
				}
			}
			fp.hook.Matcher = s
			return nil
		case "command":
			s, err := fp.str(name, line, v)
			if err != nil {
				return err
			}
			if strings.TrimSpace(s) == "" {
				return fp.errorf(line, "%s is empty", name)
			}
			fp.hook.Command = s
			return nil
		case "name":
			s, err := fp.str(name, line, v)
			if err != nil {
				return err
			}
			fp.hook.Name = s
			return nil
		case "timeout":
			var d time.Duration
			switch v.Kind {
			case unstable.String:
				var err error
				if d, err = time.ParseDuration(string(v.Data)); err != nil {
					return fp.errorf(line, "%s: %v (write e.g. \"10s\")", name, err)
				}
			case unstable.Integer:
				var secs int
				if _, err := fmt.Sscan(string(v.Data), &secs); err != nil {
					return fp.errorf(line, "%s: %v", name, err)
				}
				d = time.Duration(secs) * time.Second
			default:
				return fp.errorf(line, "%s must be a duration such as \"10s\", not %s", name, kindName(v.Kind))
			}
			if d <= 0 || d > 10*time.Minute {
				return fp.errorf(line, "%s must be between 0 and 10m, not %v", name, d)
			}
			fp.hook.Timeout = d
			return nil
		}
	}
	return fp.errorf(line, "unknown key %s (known: permissions.allow, .ask, .deny, .default_mode; sandbox.network, .allow_domains, .deny_domains, .read, .write, .env, .toolchains, .git; hooks: event, matcher, command, timeout, name)", name)
}

func (fp *fileParser) str(name string, line int, v *unstable.Node) (string, error) {
	if v.Kind != unstable.String {
		return "", fp.errorf(line, "%s must be a string, not %s", name, kindName(v.Kind))
	}
	return string(v.Data), nil
}

func (fp *fileParser) rules(b Behavior, name string, line int, v *unstable.Node) error {
	if v.Kind != unstable.Array {
		return fp.errorf(line, "%s must be an array of rule strings, not %s", name, kindName(v.Kind))
	}
	// Grow the rules once for the whole array: appending one by one
	// copies a large slice of a large struct again and again.
	n := 0
	for it := v.Children(); it.Next(); {
		n++
	}
	fp.f.Rules = slices.Grow(fp.f.Rules, n)
	it := v.Children()
	for it.Next() {
		e := it.Node()
		if e.Kind == unstable.Comment {
			continue
		}
		l := fp.lineOf(e)
		if l == 0 {
			l = line
		}
		if e.Kind != unstable.String {
			return fp.errorf(l, "%s: every rule is a string, not %s", name, kindName(e.Kind))
		}
		r, err := ParseRule(b, string(e.Data))
		if err != nil {
			return fp.errorf(l, "%s: %v", name, err)
		}
		r.Source = fp.source(l)
		fp.f.Rules = append(fp.f.Rules, r)
	}
	return nil
}

// finishHook checks the hook table being read, when it ends.
func (fp *fileParser) finishHook() error {
	h := fp.hook
	if h == nil {
		return nil
	}
	fp.hook = nil
	line := lineOf(h.Source)
	if h.Event == "" {
		return fp.errorf(line, "the hook has no event (%s)", strings.Join(HookEvents(), ", "))
	}
	if h.Command == "" {
		return fp.errorf(line, "the hook has no command")
	}
	if h.Matcher != "" && !toolEvent(h.Event) {
		return fp.errorf(line, "a matcher only applies to tool events (PreToolUse, PostToolUse, PostToolUseFailure, PermissionDenied), not %s", h.Event)
	}
	if h.Name == "" {
		h.Name = h.Source
	}
	fp.f.Hooks = append(fp.f.Hooks, *h)
	return nil
}

func toolEvent(e string) bool {
	switch e {
	case "PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionDenied":
		return true
	}
	return false
}

func kindName(k unstable.Kind) string {
	switch k {
	case unstable.String:
		return "a string"
	case unstable.Array:
		return "an array"
	case unstable.InlineTable:
		return "a table"
	case unstable.Integer:
		return "an integer"
	case unstable.Float:
		return "a number"
	case unstable.Bool:
		return "a boolean"
	}
	return "a " + strings.ToLower(k.String())
}
