package builtin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/lite-agent/lite-agent/tools"
)

// FileChange is what a write_file or edit_file call would do to one file,
// computed before it runs: for an approval prompt that shows a diff.
type FileChange struct {
	Path   string // as the model gave it
	Exists bool   // false: the call creates the file
	Old    []byte // the current content (nil when the file does not exist)
	New    []byte // the content after the call
}

// PreviewChange works out, without changing anything, what the call name
// (write_file or edit_file) with input would make of its file in
// workspace. It opens the file through os.Root, as the tools do, so a
// symlink out of the workspace is refused here too. An edit that the tool
// would refuse (old_string not found, not unique) is an error that says so.
// Other tools are not file changes: ok is false.
func PreviewChange(workspace, name string, input json.RawMessage) (c *FileChange, ok bool, err error) {
	var path string
	var edit *editFileInput
	var content string
	switch name {
	case "write_file":
		var in writeFileInput
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, true, fmt.Errorf("bad input: %w", err)
		}
		path, content = in.Path, in.Content
	case "edit_file":
		var in editFileInput
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, true, fmt.Errorf("bad input: %w", err)
		}
		path, edit = in.Path, &in
	default:
		return nil, false, nil
	}
	root, err := os.OpenRoot(workspace)
	if err != nil {
		return nil, true, err
	}
	defer root.Close()
	ctx := &tools.Context{Workspace: workspace, Root: root}
	rel, err := resolvePath(ctx, path)
	if err != nil {
		return nil, true, err
	}
	c = &FileChange{Path: path}
	old, err := root.ReadFile(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, true, rootErr(ctx, path, err)
	default:
		c.Exists, c.Old = true, old
	}
	if edit == nil {
		c.New = []byte(content)
		return c, true, nil
	}
	if !c.Exists {
		return nil, true, fmt.Errorf("%s does not exist; edit_file only changes existing files", path)
	}
	res, err := applyEdit(string(old), *edit)
	if err != nil {
		return nil, true, err
	}
	c.New = []byte(res.updated)
	return c, true, nil
}
