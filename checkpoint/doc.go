// Package checkpoint records the pre-image of every workspace path an agent
// changes and rewinds a session to any checkpoint — files, and with
// TruncateTranscript the conversation.
//
// # Checkpoints
//
// A checkpoint is a state of the workspace that a session can go back to.
// Checkpoint 0 is the state before the session's first change; checkpoint
// N is the state when the N-th change set was sealed: at a user turn
// (always recorded, so that every user turn is a rewind target), after a
// tool call that changed something, after a rewind. Each sealed checkpoint
// holds, for every path changed since the previous one, its pre-image (what
// it was before: a regular file's content and mode bits, a symlink's
// target, a directory's mode, or absent) and its post-image (what the agent
// left, by hash), the changed-line counts, and the paths it does not cover.
// Only what the agent touched is recorded — nothing scans the workspace,
// so the cost of a checkpoint grows with what changed, not with the size of
// the tree.
//
// # Capturing pre-images
//
// Whatever is about to change a path calls Recorder.RecordSnapshot first:
// the built-in edit tools (through tools.SnapshotRecorder), and the
// sandbox's change capture, which stops every write-side system call of a
// confined command or handler (open for writing, creat, truncate, rename,
// unlink, rmdir, mkdir, link, symlink, chmod) until the paths it names are
// recorded (sandbox.Command.BeforeChange, wired by tools.Context.
// BeforeChange) — so `sed -i`, `mv`, `rm -r` and code generators run
// through bash are rewound like the edit tools' changes. Calls come from
// any goroutine, with workspace-relative or absolute paths. The first call
// for a path in the open checkpoint saves its state; later calls return at
// once. A directory is saved with its whole subtree, because a rename or
// removal changes everything below it; whatever is found below a recorded
// directory at the seal and was not there when it was recorded gets
// pre-image "absent" (it was created, or moved in). A symlink is saved as a
// link, and its target too (writing through a link changes the target).
// Paths are keyed by their real location: symlinks in parent directories
// are resolved, and a path through a link leading out of the workspace is
// refused (ErrOutsideWorkspace).
//
// # Post-images: what the agent wrote
//
// The post-image of a path is what the agent left there. An in-process
// writer knows exactly what that is: the edit tools call
// Recorder.RecordWrite (through tools.WriteRecorder) with the content they
// have just written, and a rewind writes known targets. When the file at
// the seal differs from that, someone else — the user, another session —
// wrote it during the call: the checkpoint keeps the agent's post-image
// and records the other version (with its content) as an external change,
// so a rewind past it reports a conflict and never discards that edit
// unasked. A later change announced for the path in the same checkpoint
// (RecordSnapshot of it or of a directory above it) voids the report.
// Without a report — a confined command, a custom handler, an MCP server
// — the seal takes the path as it finds it, unless it is told that
// someone else wrote it during the call. Two ways tell it:
//
//   - the sandbox, running as root: a fanotify listener per command sees
//     who writes the files the command announced, and a writer outside
//     the command's process tree is reported (sandbox.Command.
//     ForeignChange → RecordForeignChange, wired by tools.Context.
//     ForeignChange for bash, background tasks, confined handlers and MCP
//     stdio servers);
//   - another session in the same workspace and state directory, root or
//     not: every session appends what it is about to change to a
//     per-workspace journal (<stateDir>/workspaces/<hash>.jsonl, see
//     peers.go), and a seal reads what other sessions announced since its
//     checkpoint began.
//
// Either way the path's state at the seal cannot be proven to be the
// agent's, and it is handled as a crashed call's is: the checkpoint keeps
// the state found, and records it (with its content) as an external
// change, so a rewind across it reports a conflict naming the path and
// the writer, and a forced rewind keeps that version in its own
// checkpoint. Without root the kernel tells a listener nobody's pid, so a
// user's (or any other program's) write to the very file a command is
// changing, during that command, is still taken for the command's — a
// known limit that only a second lite-agent session escapes; edits to
// files the command does not touch are external changes either way.
//
// # Writers that outlive a checkpoint
//
// A command the agent waits for has ended when its checkpoint is sealed.
// A background task or a stdio MCP server has not: it may be in the middle
// of a captured call (recorded, not yet made), and it may write a file
// through a descriptor, or a shared mapping, it opened before the seal —
// writes that make no captured call. Options.Writers (sandbox.Writers)
// are those processes: Seal (and an in-session Rewind) first pauses them
// (Writers.Pause: no captured call half-made, and, when some file is held
// open for writing, every process stopped), then seals, then carries each
// held file into the checkpoint it opens: the seal reads the file once,
// storing its content, and that one read is both the sealed checkpoint's
// post-image and the next one's pre-image (a "pre" record of the new
// checkpoint, written after the seal's record). So a write through the
// held descriptor after the seal lands in a checkpoint that has the
// file's pre-image, rewinding to checkpoint N and undoing N+1 give the
// same file, and the watcher, which leaves alone the paths the open
// checkpoint touched, does not call the writer's bytes an external
// change. A held file that does not change adds no checkpoint. A kill
// between the seal's record and the carry's loses nothing: the writers
// are stopped until the carry is written, and they die with the process
// (TestKill9HeldFiles).
//
// # The store
//
// Contents live in <stateDir>/checkpoints/objects, outside the workspace
// so that nothing confined can rewrite history, named by SHA-256 and
// stored once however many checkpoints use them. Small objects (under 512
// KiB) are appended to a pack file of the writer that stored them (one
// write each, deflated when that helps, indexed beside the pack); large ones
// are loose files written the atomic way (temporary file, fsync, rename,
// fsync of the directory). Packing is what keeps the store near the size of
// what it holds: on ext4 a file per small pre-image would cost a 4 KiB
// block each. Every read re-hashes the content; a corrupt object is an
// error naming it (ErrCorrupt), never restored.
//
// # The session log
//
// Each session has a log, <stateDir>/checkpoints/sessions/<id>.jsonl, of
// JSON lines appended with one write(2) per batch (see log.go for the
// record types). Names are bytes, not text: a path or symlink target that
// is not valid UTF-8 is stored as {"b64": ...} (format version 2), so that
// a\xff and a\xfe stay two names through the log, the listing, the
// dry-run diff and the rewind; valid names are plain JSON strings, and
// version 1 logs load unchanged. Pre-images are logged before
// RecordSnapshot returns, and objects are always written before the
// record that refers to them; Seal makes the pack and the log durable
// (fsync) before it returns.
//
// # Rewind
//
// Rewind (or Recorder.Rewind within a running session) restores every path
// changed after the chosen checkpoint to its state there: contents, mode
// bits, symlinks; paths created since are removed, deleted ones come back,
// directories too. Paths the agent never touched are never touched, and a
// directory the agent created is kept (Kept) when something the agent did
// not create is inside it. Before writing anything, every path is checked
// against what the agent left — the post-image of its last checkpoint, and
// the external changes noticed since; a difference is a conflict and any
// conflict refuses the whole rewind (ErrConflict, listed in the report)
// unless RewindOptions.Force. Every object is verified before the first
// write. A rewind is itself a checkpoint holding the pre-images of what it
// overwrote, so it is undone by rewinding to the checkpoint before it (redo).
// RewindOptions.Paths restores chosen paths only; DryRun returns a unified
// diff and writes nothing.
//
// # External changes
//
// Recorder.Watch runs an fsnotify watcher on every directory of the
// workspace (except .git and ignored directories; new directories are added
// as they appear). Events come after the fact and carry no process id, so
// the rule is: a path recorded in the open checkpoint is the agent's
// (except where it differs from what the agent reported writing: see
// Post-images); any
// other path the session has recorded whose state now differs from the one
// last known is an external change (NoteExternal), logged with its content
// so that even a forced rewind loses nothing. A rewind that would undo the
// agent's work across an external change reports it as a conflict. The
// same check runs when the agent records a path that changed since it last
// left it, and at every rewind, so a missed event (ErrEventOverflow, noted
// in Checkpoint.Incomplete, after which every tracked path is re-checked)
// never lets a rewind destroy a change silently.
//
// # Ignore rules
//
// Paths inside .git, paths matched by the ignore files (.gitignore and
// .lite-agent-ignore by default, gitignore syntax read per directory with
// internal/gitignore — the grep tool's engine, tested against git itself)
// or by Options.Ignore, and files larger than Options.MaxFileSize (64 MiB
// by default) are not stored. They are named in the checkpoint
// (Checkpoint.Ignored), so the user knows what a rewind will not bring
// back, and a rewind leaves them alone (RewindReport.Skipped).
//
// The agent can write ignore files, so they cannot opt it out of rewind:
// an ignore rule only skips a path the session created (a file that
// existed when the session started is always recorded, up to the size
// cap), and the rules in force are those of the session's start — an
// ignore file changed during the session applies from the next session
// on. ignore.go says how the recorder knows what existed at the start
// without scanning the workspace, and why this holds for bash, MCP
// servers and custom handlers too. Ignore files are read with
// internal/safefile, so a FIFO or a symlink there cannot hang the recorder.
//
// # Crash safety and concurrency
//
// A kill -9 at any moment leaves whole log lines (a torn last line is
// ignored and cut off before the next append), whole pack entries (a torn
// tail is never referenced) and loose objects that exist whole or not at
// all. A checkpoint never sealed — the process died during a tool call, a
// seal or a rewind — is sealed as "recovered" when the session is next
// opened or rewound, so the session can still be rewound to every sealed
// checkpoint (and past the recovered one). Its post-images are what the
// agent reported writing (logged as "post" records); a path it reported
// that now differs, and a file or symlink it changed without a report,
// may hold anyone's edits made since the crash: they are recorded as
// external changes ("cannot be proven to be the agent's"), so a rewind
// across them reports a conflict and needs Force. Sessions are locked (flock) by the Recorder or rewind using them;
// two sessions in one workspace have separate logs and packs and share the
// append-only object store, and each sees the other's edits as external.
// gc takes the store exclusively and so never runs while a session records.
//
// # Upkeep
//
// GC drops the oldest checkpoints of sessions by age, count and total store
// size — never an object a kept checkpoint needs, never the newest
// checkpoint of a session — and compacts the packs. Verify re-hashes every
// object and checks every reference, and reports what is wrong instead of
// repairing it.
//
// # Conversation rewind
//
// The kernel's transcript is JSON lines; a user turn is a "message" record
// whose role is "user" with at least one text block (tool results are role
// "user" too, but with tool_result blocks only). TruncateTranscript cuts a
// transcript before a given user turn (saving what it cut), and
// TranscriptTurnOffset gives the offset to a caller that holds the file.
// Checkpoint.UserTurn and RewindReport.UserTurn say which turn a
// user-turn checkpoint begins.
package checkpoint
