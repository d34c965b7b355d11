package checkpoint_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/lite-agent/lite-agent/checkpoint"
)

// A session records what a tool is about to change, seals a checkpoint
// after the call, and rewinds.
func Example() {
	workspace, _ := os.MkdirTemp("", "ws")
	stateDir, _ := os.MkdirTemp("", "state") // outside the workspace
	defer os.RemoveAll(workspace)
	defer os.RemoveAll(stateDir)
	os.WriteFile(filepath.Join(workspace, "notes.txt"), []byte("draft\n"), 0o644)

	rec, err := checkpoint.Open(stateDir, "session-1", workspace, nil)
	if err != nil {
		panic(err)
	}
	rec.Seal(checkpoint.SealInfo{Reason: checkpoint.ReasonUserTurn, UserTurn: 0}) // checkpoint 0

	// A tool: record first, then write.
	rec.RecordSnapshot("notes.txt")
	os.WriteFile(filepath.Join(workspace, "notes.txt"), []byte("draft\nfinal\n"), 0o644)
	cp, _ := rec.Seal(checkpoint.SealInfo{Reason: checkpoint.ReasonToolCall, ToolCallID: "toolu_1", ToolName: "write_file", UserTurn: 0})
	f := cp.Files[0]
	fmt.Printf("checkpoint %d: %s %s %s +%d -%d\n", cp.Number, cp.ToolName, f.Change, f.Path, f.Added, f.Removed)
	rec.Close()

	rep, err := checkpoint.Rewind(stateDir, "session-1", 0, checkpoint.RewindOptions{})
	if err != nil {
		panic(err)
	}
	b, _ := os.ReadFile(filepath.Join(workspace, "notes.txt"))
	fmt.Printf("rewound to %d (recorded as checkpoint %d): notes.txt = %q\n", rep.To, rep.Checkpoint, b)
	// Output:
	// checkpoint 1: write_file modified notes.txt +1 -0
	// rewound to 0 (recorded as checkpoint 2): notes.txt = "draft\n"
}
