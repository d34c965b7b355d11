package policies

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/lite-agent/lite-agent/internal/netproxy"
)

// AddRule adds rule, with behavior b, to the policy file content data
// ([permissions] allow, ask or deny) and returns the new content. The
// file is edited in place, comments and layout kept: the rule is added
// after the last entry of the existing array, or a new array or
// [permissions] table is added. The result is parsed again and refused
// unless it is a valid policy file holding the rule, so a file this
// cannot edit safely is never written half right. path names the file in
// errors.
func AddRule(path string, data []byte, b Behavior, rule string) ([]byte, error) {
	if _, err := ParseRule(b, rule); err != nil {
		return nil, err
	}
	if _, err := ParseFile(path, data); err != nil {
		return nil, fmt.Errorf("%w (fix the file before adding a rule to it)", err)
	}
	if hasRule(path, data, b, rule) {
		return data, nil
	}
	quoted, _ := json.Marshal(rule) // a JSON string is a TOML basic string
	out, err := insertValue(data, "permissions", string(b), string(quoted))
	if err != nil {
		return nil, err
	}
	if !hasRule(path, out, b, rule) {
		return nil, fmt.Errorf("%s: could not add %s to its [permissions] %s safely; add it by hand", path, quoted, b)
	}
	return out, nil
}

func hasRule(path string, data []byte, b Behavior, rule string) bool {
	f, err := ParseFile(path, data)
	return err == nil && slices.ContainsFunc(f.Rules, func(r Rule) bool { return r.Behavior == b && r.Text == rule })
}

// AddAllowDomain adds domain to the [sandbox] allow_domains of the policy
// file content data, as AddRule adds a rule: edited in place, comments
// kept, the result parsed again and refused unless it holds the grant.
// It is how an interactive "allow always" for a domain is kept.
func AddAllowDomain(path string, data []byte, domain string) ([]byte, error) {
	if _, err := netproxy.ParsePattern(domain); err != nil {
		return nil, fmt.Errorf("%s: cannot add %q to allow_domains: %w", path, domain, err)
	}
	if _, err := ParseFile(path, data); err != nil {
		return nil, fmt.Errorf("%w (fix the file before adding a domain to it)", err)
	}
	if hasAllowDomain(path, data, domain) {
		return data, nil
	}
	quoted, _ := json.Marshal(domain)
	out, err := insertValue(data, "sandbox", "allow_domains", string(quoted))
	if err != nil {
		return nil, err
	}
	if !hasAllowDomain(path, out, domain) {
		return nil, fmt.Errorf("%s: could not add %s to its [sandbox] allow_domains safely; add it by hand", path, quoted)
	}
	return out, nil
}

func hasAllowDomain(path string, data []byte, domain string) bool {
	f, err := ParseFile(path, data)
	return err == nil && slices.ContainsFunc(f.Sandbox.AllowDomains, func(g Grant) bool { return g.Value == domain })
}

// AddAllowDomainToUserFile adds domain to the user's policy file
// (UserFile), creating it (and its directory, mode 0700) if needed. Only
// the user's file: a workspace's file may not widen the sandbox under
// strict, and the agent can write it.
func AddAllowDomainToUserFile(domain string) (string, error) {
	return editUserFile(func(path string, data []byte) ([]byte, error) { return AddAllowDomain(path, data, domain) })
}

// insertValue finds [TABLE] KEY = [...] with the unstable parser (the one
// ParseFile uses) and inserts quoted after its last value, or adds the
// key (and the table) when the file has none.
func insertValue(data []byte, tableName, key, quoted string) ([]byte, error) {
	var p unstable.Parser
	p.Reset(data)
	table := ""
	tableEnd := -1 // the end of the [TABLE] header's key
	for p.NextExpression() {
		n := p.Expression()
		switch n.Kind {
		case unstable.Table:
			table = joinKey(n)
			if table == tableName {
				// A table node's own Raw is empty: the end of its
				// header's last key part is where the header ends.
				it := n.Key()
				for it.Next() {
					tableEnd = int(it.Node().Raw.Offset + it.Node().Raw.Length)
				}
			}
		case unstable.ArrayTable:
			table = "[[" + joinKey(n) + "]]"
		case unstable.KeyValue:
			if table != tableName || joinKey(n) != key {
				continue
			}
			arr := n.Value()
			if arr.Kind != unstable.Array {
				return nil, fmt.Errorf("[%s] %s is not an array", tableName, key)
			}
			end := int(n.Raw.Offset + n.Raw.Length) // just after "]"
			last := -1
			it := arr.Children()
			for it.Next() {
				if c := it.Node(); c.Kind != unstable.Comment {
					last = int(c.Raw.Offset + c.Raw.Length)
				}
			}
			if last < 0 {
				return splice(data, end-1, quoted), nil
			}
			return splice(data, last, ", "+quoted), nil
		}
	}
	if p.Error() != nil {
		return nil, p.Error()
	}
	line := key + " = [" + quoted + "]\n"
	if tableEnd >= 0 {
		// A [TABLE] table without the key: the key on the line
		// after its header.
		i := tableEnd
		for i < len(data) && data[i] != '\n' {
			i++
		}
		if i == len(data) {
			return append(slices.Clone(data), "\n"+line...), nil
		}
		return splice(data, i+1, line), nil
	}
	out := slices.Clone(data)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	if len(out) > 0 {
		out = append(out, '\n')
	}
	return append(out, "["+tableName+"]\n"+line...), nil
}

func joinKey(n *unstable.Node) string {
	s := ""
	it := n.Key()
	for it.Next() {
		if s != "" {
			s += "."
		}
		s += string(it.Node().Data)
	}
	return s
}

func splice(data []byte, at int, s string) []byte {
	out := make([]byte, 0, len(data)+len(s))
	out = append(out, data[:at]...)
	out = append(out, s...)
	return append(out, data[at:]...)
}

// AddRuleToUserFile adds rule to the user's policy file (UserFile),
// creating it (and its directory, mode 0700) if needed.
func AddRuleToUserFile(b Behavior, rule string) (string, error) {
	return editUserFile(func(path string, data []byte) ([]byte, error) { return AddRule(path, data, b, rule) })
}

// editUserFile rewrites the user's policy file with edit.
func editUserFile(edit func(path string, data []byte) ([]byte, error)) (string, error) {
	path, err := UserFile()
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return path, err
	}
	out, err := edit(path, data)
	if err != nil {
		return path, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return path, err
	}
	return path, writeReplace(nil, path, out)
}

// AddRuleToWorkspaceFile adds rule to WORKSPACE/.lite-agent/policy.toml,
// and keeps the file trusted in the default trust store (TrustStoreDir)
// if it was trusted (or did not exist).
// The file is opened beneath the workspace through os.Root: the agent can
// write the workspace, and a .lite-agent or policy.toml it made a symlink
// to a file elsewhere (~/.bashrc) must not be written through.
func AddRuleToWorkspaceFile(workspace string, b Behavior, rule string) (string, error) {
	path := WorkspaceFile(workspace)
	root, err := os.OpenRoot(workspace)
	if err != nil {
		return path, err
	}
	defer root.Close()
	rel := filepath.Join(".lite-agent", "policy.toml")
	data, err := root.ReadFile(rel)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return path, err
	}
	out, err := AddRule(path, data, b, rule)
	if err != nil {
		return path, err
	}
	// The user's own edit keeps the file trusted (trust.go) when it was:
	// a new file holds only the rule the user approved, and a trusted one
	// only what the user trusted plus that rule. A file not trusted stays
	// so — trusting it here would trust whatever an agent put in it.
	keepTrust := data == nil
	if old, err := ParseFile(path, data); !keepTrust && err == nil {
		keepTrust = Trusted("", workspace, old)
	}
	if err := root.MkdirAll(".lite-agent", 0o755); err != nil {
		return path, err
	}
	if err := writeReplace(root, rel, out); err != nil {
		return path, err
	}
	if keepTrust {
		// Hash the bytes written: if an agent rewrites the file after the
		// rename, its version does not match and is not trusted.
		nf, err := ParseFile(path, out)
		if err == nil {
			_, err = Trust("", workspace, nf)
		}
		if err != nil {
			return path, fmt.Errorf("the rule was added, but trusting the new version failed: %w; run `%s`", err, TrustCommand(workspace))
		}
	}
	return path, nil
}

// writeReplace writes data to a temporary file beside name and renames it
// over name: a reader (a session loading the policy) sees the old file or
// the new one, never half of it. With root, name is beneath it.
func writeReplace(root *os.Root, name string, data []byte) error {
	tmp := name + ".tmp-lite-agent"
	var err error
	if root != nil {
		err = root.WriteFile(tmp, data, 0o644)
	} else {
		err = os.WriteFile(tmp, data, 0o600)
	}
	if err != nil {
		return err
	}
	if root != nil {
		err = root.Rename(tmp, name)
	} else {
		err = os.Rename(tmp, name)
	}
	return err
}

// WorkspaceAllowRefusal says why an allow rule added to workspace's
// policy file (AddRuleToWorkspaceFile) would make the next session there
// refuse to start under preset, or returns "" when the file would load
// with the rule. It is the question an "allow always, in this
// workspace's file" choice must ask before it is offered: a preset that
// never trusts the workspace's file refuses a file with an allow rule
// (tightenOnly), and so does any preset while the file exists in a
// version the user has not trusted (the edit keeps it untrusted).
func WorkspaceAllowRefusal(preset Preset, workspace string) string {
	if !preset.TrustWorkspacePolicy {
		return fmt.Sprintf("the %s preset never lets a workspace's policy file allow anything (the next start would refuse the file)", preset.Name)
	}
	root, err := os.OpenRoot(workspace)
	if err != nil {
		return "the workspace cannot be opened: " + err.Error()
	}
	defer root.Close()
	data, err := root.ReadFile(filepath.Join(".lite-agent", "policy.toml"))
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	if err != nil {
		return "the workspace's policy file cannot be read: " + err.Error()
	}
	f, err := ParseFile(WorkspaceFile(workspace), data)
	if err != nil {
		return "the workspace's policy file does not parse: " + err.Error()
	}
	if !Trusted("", workspace, f) {
		return fmt.Sprintf("the workspace's policy file is not trusted in its current version, so it may only tighten (the next start would refuse an allow rule in it); review it and run `%s` first", TrustCommand(workspace))
	}
	return ""
}
