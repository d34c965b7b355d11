// Package checkpoint records the pre-image of every workspace path an agent
// changes and rewinds a session to any checkpoint.
//
// It owns the content-addressed object store (outside the workspace, so that
// nothing confined can rewrite history), pre-image capture for edit tools
// (through tools.SnapshotRecorder) and for sandboxed processes, the fsnotify
// watcher that notices changes made outside the agent, rewind, garbage
// collection and verification. The store and rewind are built by the
// checkpoint issue (#4); until then this package holds no code and the
// kernel runs with no recorder, so tools.Context.RecordSnapshot is a no-op.
package checkpoint
