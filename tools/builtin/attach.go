package builtin

import (
	"context"
	"encoding/json"
	"os"

	"github.com/lite-agent/lite-agent/tools"
)

// ReadForPrompt reads path in workspace for a person's prompt (the
// interactive mode's @path): exactly as read_file would, through an
// os.Root on the workspace and with no more privilege than a confined
// command (a symlink out, a FIFO, a binary file, a 0600 file of another
// user are refused the same way), at most limit lines. The text is
// read_file's output (numbered lines, and a note where it stopped).
// Deny rules are the caller's to apply first, as the permission gate does
// for read_file.
func ReadForPrompt(ctx context.Context, workspace, path string, limit int) (string, error) {
	root, err := os.OpenRoot(workspace)
	if err != nil {
		return "", err
	}
	defer root.Close()
	tc := &tools.Context{Ctx: ctx, Workspace: workspace, Root: root}
	res, err := unprivileged(runReadFile)(tc, readFileInput{Path: path, Limit: limit})
	if err != nil {
		return "", err
	}
	return res.TextOf(), nil
}

// ReadFileInput is read_file's input for path, as the permission rules
// see it (read_file(PATTERN)).
func ReadFileInput(path string) json.RawMessage {
	b, _ := json.Marshal(readFileInput{Path: path})
	return b
}
