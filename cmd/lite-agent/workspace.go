package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/internal/termsafe"
)

// The workspace is where the user thinks it is.
//
// A user names the workspace logically: --workspace DIR, or the directory
// they cd'd into ($PWD, which os.Getwd returns when it still names the
// current directory). If a symlink is on that path, the agent works in its
// target — and an agent can plant such a link in one session
// (`ln -s ~ project`) for the user to walk through in the next. So
// `run` resolves the workspace once, here:
//
//   - when the resolved path differs from the logical one, text mode says
//     so before anything else (notice, on stderr like every other line
//     that is not the answer, so that `x=$(lite-agent run ...)` still gets
//     only the answer);
//   - when a symlink on the logical path is one an agent created in a
//     recorded session (checkpoint.AgentSymlink), the run is refused,
//     naming the link and the session: the user passes the resolved path
//     to say they mean the target;
//   - the resolved path is what the agent is given, so that what was
//     checked and shown is what is used.

// resolveWorkspace returns the workspace to hand the agent and, when it is
// not the path the user named, the notice to show.
func resolveWorkspace(flagValue, stateFlag string) (ws, notice string, err error) {
	logical := flagValue
	if logical == "" {
		if logical, err = os.Getwd(); err != nil {
			return "", "", failf("no --workspace given and the current directory is unknown: %v", err)
		}
	}
	if logical, err = filepath.Abs(logical); err != nil {
		return "", "", failf("--workspace %s: %v", flagValue, err)
	}
	real, err := filepath.EvalSymlinks(logical)
	if err != nil {
		// Not there, or unreadable: the assembler reports it as it
		// always has.
		return flagValue, "", nil
	}
	if real == logical {
		return real, "", nil
	}
	stateDir, err := stateDirOf(stateFlag)
	if err != nil {
		return "", "", err
	}
	link, err := checkpoint.AgentSymlink(stateDir, logical)
	if err != nil {
		return "", "", failf("checking the workspace %s for symlinks an agent created: %v", logical, err)
	}
	if link != nil {
		return "", "", failf("refusing the workspace %s: it goes through the symlink %s -> %s, which an agent created in session %s (checkpoint %d), so the agent would work in %s. If that is where you mean to work, pass the resolved path: --workspace %s (or remove the link: see 'lite-agent checkpoints %s')",
			termsafe.Escape(logical), termsafe.Escape(link.Path), termsafe.Escape(link.Target), link.Session, link.Checkpoint,
			termsafe.Escape(real), termsafe.Escape(real), link.Session)
	}
	return real, fmt.Sprintf("lite-agent: workspace %s (through a symlink: %s)", termsafe.Escape(real), termsafe.Escape(logical)), nil
}
