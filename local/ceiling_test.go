package local

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/kernel"
	"github.com/lite-agent/lite-agent/tools"
)

type reachIn struct {
	Dial string `json:"dial,omitempty"`
	Read string `json:"read,omitempty"`
}

func reach(_ *tools.Context, in reachIn) (string, error) {
	var out []string
	if in.Dial != "" {
		if c, err := net.Dial("tcp", in.Dial); err != nil {
			out = append(out, "dial: "+err.Error())
		} else {
			c.Close()
			out = append(out, "dial: ok")
		}
	}
	if in.Read != "" {
		if b, err := os.ReadFile(in.Read); err != nil {
			out = append(out, "read: "+err.Error())
		} else {
			out = append(out, "read: ok "+string(b))
		}
	}
	return strings.Join(out, "; "), nil
}

// Package level: the confined child finds tools by name.
var (
	reachLoopback = tools.Must(tools.New("reach_lo", "dials", reach, &tools.Options{
		Security: &tools.Security{Network: tools.NetworkLoopback, Filesystem: tools.FilesystemWorkspace}}))
	reachNone = tools.Must(tools.New("reach_none", "dials", reach, &tools.Options{
		Security: &tools.Security{Network: tools.NetworkNone, Filesystem: tools.FilesystemWorkspace}}))
	reachRoot = tools.Must(tools.New("reach_root", "reads", reach, &tools.Options{
		Security: &tools.Security{Network: tools.NetworkNone, Filesystem: tools.FilesystemUnrestricted}}))
)

// TestPresetHandlerCeiling: what a preset lets custom tools have beyond
// commands reaches them through kernel.Options.HandlerCeiling — under
// strict a tool declaring loopback reaches a local server although bash
// has no network; under standard a tool declaring the whole filesystem
// reads outside the workspace — and a tool declaring less gets less.
func TestPresetHandlerCeiling(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	outside := filepath.Join(t.TempDir(), "outside.txt")
	os.WriteFile(outside, []byte("far away"), 0o644)
	run := func(preset, tool string, in reachIn) string {
		t.Helper()
		b, _ := json.Marshal(in)
		ts := []*tools.Tool{reachLoopback, reachNone}
		if preset != "strict" {
			ts = append(ts, reachRoot) // strict refuses it at New
		}
		a, err := New(Config{Preset: preset, PolicyFiles: noFiles, NoCheckpoints: true,
			Agent: kernel.Agent{Workspace: t.TempDir(), StateDir: t.TempDir(),
				CustomTools: ts, AllowedTools: []string{"reach_*"},
				Model: model(t, `{"turns": [{"tool_calls": [{"id": "c", "name": "`+tool+`", "input": `+string(b)+`}]}, {"text": "done"}]}`),
			}})
		if err != nil {
			t.Fatal(err)
		}
		var text string
		for ev, err := range a.Query(context.Background(), "go") {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Type == kernel.EventToolResult {
				for _, c := range ev.ToolResult.Content {
					text += c.Text
				}
			}
		}
		return text
	}
	dial := reachIn{Dial: ln.Addr().String()}
	if got := run("strict", "reach_lo", dial); got != "dial: ok" {
		t.Errorf("strict, a tool declaring loopback: %q", got)
	}
	if got := run("strict", "reach_none", dial); !strings.HasPrefix(got, "dial: ") || got == "dial: ok" {
		t.Errorf("strict, a tool declaring no network: %q", got)
	}
	if got := run("standard", "reach_root", reachIn{Read: outside}); got != "read: ok far away" {
		t.Errorf("standard, a tool declaring the whole filesystem: %q", got)
	}
	// Not there under the root skeleton (ENOENT), refused by Landlock
	// without a mount namespace (EACCES).
	if got := run("standard", "reach_none", reachIn{Read: outside}); !strings.Contains(got, "no such file or directory") && !strings.Contains(got, "permission denied") {
		t.Errorf("standard, a tool declaring the workspace read outside it: %q", got)
	}
}
