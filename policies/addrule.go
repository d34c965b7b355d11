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
	out, err := insertRule(data, string(b), string(quoted))
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

// insertRule finds [permissions] KEY = [...] with the unstable parser
// (the one ParseFile uses) and inserts quoted after its last value.
func insertRule(data []byte, key, quoted string) ([]byte, error) {
	var p unstable.Parser
	p.Reset(data)
	table := ""
	permEnd := -1 // the end of the [permissions] header's key
	for p.NextExpression() {
		n := p.Expression()
		switch n.Kind {
		case unstable.Table:
			table = joinKey(n)
			if table == "permissions" {
				permEnd = int(n.Raw.Offset + n.Raw.Length)
			}
		case unstable.ArrayTable:
			table = "[[" + joinKey(n) + "]]"
		case unstable.KeyValue:
			if table != "permissions" || joinKey(n) != key {
				continue
			}
			arr := n.Value()
			if arr.Kind != unstable.Array {
				return nil, fmt.Errorf("[permissions] %s is not an array", key)
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
	if permEnd >= 0 {
		// A [permissions] table without the key: the key on the line
		// after its header (the header's Raw is its key only).
		i := permEnd
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
	return append(out, "[permissions]\n"+line...), nil
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
	path, err := UserFile()
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return path, err
	}
	out, err := AddRule(path, data, b, rule)
	if err != nil {
		return path, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return path, err
	}
	return path, writeReplace(nil, path, out)
}

// AddRuleToWorkspaceFile adds rule to WORKSPACE/.lite-agent/policy.toml.
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
	if err := root.MkdirAll(".lite-agent", 0o755); err != nil {
		return path, err
	}
	return path, writeReplace(root, rel, out)
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
