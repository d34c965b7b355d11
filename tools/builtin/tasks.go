package builtin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
	"github.com/lite-agent/lite-agent/tools/confined"
)

// Background tasks: `bash` with run_in_background starts the command in the
// session's sandbox as a task of the session's registry (tools.Tasks);
// bash_output reads what it wrote since the last read, kill_task ends its
// whole process tree. The kernel kills every task when the session ends.

// taskOutputCap bounds what one background task keeps unread: past it the
// oldest unread output is dropped and counted, and bash_output says so.
// The sandbox streams a task's output to it unbudgeted (StreamOutput).
const taskOutputCap = 512 << 10

// taskKillWait bounds how long kill_task waits for the tree to be gone.
const taskKillWait = 10 * time.Second

func startBackground(ctx *tools.Context, in bashInput, timeout time.Duration) (*tools.Result, error) {
	if ctx.Tasks == nil {
		return nil, errors.New("this session has no background-task registry; run the command without run_in_background")
	}
	desc := in.Description
	if desc == "" {
		desc = in.Command
	}
	sb, dir, hook, foreign := sessionSandbox(ctx), ctx.Workspace, ctx.BeforeChange(), ctx.ForeignChange()
	// The task outlives this call: the session's writers pause it at each
	// seal, and a file it holds open for writing then is carried into
	// the next checkpoint, so what it writes there later is rewound too.
	writers := confined.Writers(ctx)
	task, err := ctx.Tasks.Start(desc, taskOutputCap, func(tctx context.Context, out *tools.Task) error {
		// Its output as a foreground command's result would keep it,
		// for the note on what the sandbox refused it.
		kept := newBashOutput(bashMaxOutputBytes)
		run, err := runCommand(tctx, sb, dir, in.Command, timeout, io.MultiWriter(out, kept), true, hook, foreign, writers)
		var why string
		switch {
		case err != nil:
			return err
		case run.cancelled:
			why = "killed"
		case run.timedOut:
			why = fmt.Sprintf("timed out after %v and was killed", timeout)
		case run.signal != "":
			why = "killed by signal " + run.signal
		case run.exitCode != 0:
			why = fmt.Sprintf("exit code %d", run.exitCode)
		default:
			return nil
		}
		return &taskFailed{why: why, note: sandbox.RefusalNote(withReadRefusals(sb, run, true, kept.String()), run.moreRefusals, true)}
	})
	if err != nil {
		return nil, err
	}
	return tools.Text(fmt.Sprintf("Started background task %s: %s\nRead its output with bash_output {\"task_id\": %q}; stop it with kill_task {\"task_id\": %q}. It is killed when the session ends.", task.ID, desc, task.ID, task.ID)), nil
}

// taskFailed is how a background task's command failed (why), and the
// line saying what the sandbox refused it (sandbox.RefusalNote), which
// taskReport puts after the status. A task that succeeded carries no
// note: its result is the nil error.
type taskFailed struct {
	why, note string
}

func (e *taskFailed) Error() string { return e.why }

type taskInput struct {
	TaskID string `json:"task_id" jsonschema:"The id bash returned when it started the background task (e.g. task-1)."`
}

// BashOutput returns what a background task wrote since the last call.
var BashOutput = sync.OnceValue(func() *tools.Tool {
	return tools.Must(tools.New("bash_output",
		`Read the output a background task (started with bash run_in_background) wrote since the last bash_output call for it, and its status: running, or how it ended. A task keeps at most the latest 512 KiB of output not yet read (older unread output is dropped, and the result says how much); one call returns at most the last 30000 bytes of the new output.`,
		func(ctx *tools.Context, in taskInput) (*tools.Result, error) {
			t, err := lookupTask(ctx, in.TaskID)
			if err != nil {
				return nil, err
			}
			return tools.Text(taskReport(t)), nil
		},
		&tools.Options{
			Security:    &tools.Security{Network: tools.NetworkNone, Filesystem: tools.FilesystemNone, SideEffects: tools.SideEffectsNone},
			Annotations: &tools.Annotations{Title: "Read background task output", ReadOnlyHint: true, OpenWorldHint: tools.Bool(false)},
		}))
})

// KillTask stops a background task and every process it started.
var KillTask = sync.OnceValue(func() *tools.Tool {
	return tools.Must(tools.New("kill_task",
		`Stop a background task (started with bash run_in_background) and every process it started, and return the output it wrote since the last bash_output.`,
		func(ctx *tools.Context, in taskInput) (*tools.Result, error) {
			t, err := lookupTask(ctx, in.TaskID)
			if err != nil {
				return nil, err
			}
			if !t.Running() {
				return tools.Text("The task had already finished.\n" + taskReport(t)), nil
			}
			if err := ctx.Tasks.Kill(t.ID, taskKillWait); err != nil {
				return nil, err
			}
			return tools.Text(taskReport(t)), nil
		},
		&tools.Options{
			Security:    &tools.Security{Network: tools.NetworkNone, Filesystem: tools.FilesystemNone, SideEffects: tools.SideEffectsWorkspace},
			Annotations: &tools.Annotations{Title: "Stop background task", DestructiveHint: tools.Bool(true), OpenWorldHint: tools.Bool(false)},
		}))
})

func lookupTask(ctx *tools.Context, id string) (*tools.Task, error) {
	if ctx.Tasks == nil {
		return nil, errors.New("this session has no background tasks")
	}
	id = strings.TrimSpace(id)
	t, ok := ctx.Tasks.Get(id)
	if !ok {
		var ids []string
		for _, t := range ctx.Tasks.List() {
			ids = append(ids, t.ID)
		}
		if len(ids) == 0 {
			return nil, fmt.Errorf("field task_id: no background task %q; none has been started in this session", id)
		}
		return nil, fmt.Errorf("field task_id: no background task %q; the session's tasks are %s", id, strings.Join(ids, ", "))
	}
	return t, nil
}

// taskReport is a task's new output and status, for the model.
func taskReport(t *tools.Task) string {
	out, dropped := t.ReadNew()
	var b strings.Builder
	if dropped > 0 {
		fmt.Fprintf(&b, "(%d bytes of output written since the last read were dropped before what follows: a task keeps the latest 512 KiB unread)\n", dropped)
	}
	switch {
	case out == "" && dropped == 0:
		b.WriteString("(no new output)")
	case len(out) > bashMaxOutputBytes:
		fmt.Fprintf(&b, "(%d earlier bytes of new output not shown)\n", len(out)-bashMaxOutputBytes)
		b.WriteString(out[len(out)-bashMaxOutputBytes:])
	default:
		b.WriteString(out)
	}
	if !strings.HasSuffix(b.String(), "\n") {
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	if t.Running() {
		fmt.Fprintf(&b, "Task %s is running (started %s ago).", t.ID, time.Since(t.Started).Round(time.Second))
	} else if err := t.Err(); err != nil {
		fmt.Fprintf(&b, "Task %s has ended: %v.", t.ID, err)
		if f, ok := errors.AsType[*taskFailed](err); ok && f.note != "" {
			b.WriteString("\n\n" + f.note)
		}
	} else {
		fmt.Fprintf(&b, "Task %s has ended: exit code 0.", t.ID)
	}
	return b.String()
}
