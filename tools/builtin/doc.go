// Package builtin holds the tools every agent gets: read_file, write_file,
// edit_file, glob, grep, list_dir and bash.
//
// Each tool is a function (Bash(), ReadFile(), ...) that builds it on first
// use and returns the same *tools.Tool after: inferring and resolving the
// schemas of all of them costs ~2 ms, which every start of a program that
// links this package — `lite-agent sandbox run` among them — would pay at
// package initialisation otherwise.
//
// # Confinement of the file tools
//
// The file tools never open a path directly. The kernel opens an os.Root on
// the workspace, and every access goes through it, so the kernel refuses any
// path that resolves outside — through "..", an absolute path, or a symlink
// planted inside the workspace — with RESOLVE_BENEATH semantics. Paths the
// model gives may be relative to the workspace or absolute inside it.
//
// # The workspace's .git
//
// write_file and edit_file refuse a path with a .git component (any
// case), or whose last component is HEAD (exactly: the file that, beside
// objects/ and refs/, makes its directory a bare repository git finds
// without a .git) — sandbox.RefusedGitPath, the rule change capture
// applies to commands — unless the call's sandbox has Policy.GitWritable:
// git runs code named in .git (hooks, core.fsmonitor) outside the
// sandbox, and the file tools run outside the commands' mount namespace,
// where the sandbox binds .git read-only. Reading is never refused. They
// check the path as given, the real path of its existing part (a symlink
// in the workspace may lead into .git), and the real path of the file
// they opened, before its first byte changes (gitguard.go). The error
// says why and what to do instead. The presets' deny rules on .git/**
// (policies) stop the same calls earlier, at the workspace's root only.
//
// # Recording changes
//
// write_file and edit_file call Context.RecordSnapshot for every path they
// are about to create or change, before changing it, and refuse the change
// if it cannot be recorded: a change that cannot be rewound does not happen.
// After writing they report the content written (Context.RecordWrite): a
// file that differs from it when the call is sealed was changed by someone
// else meanwhile, and a rewind reports it as a conflict.
//
// # bash
//
// bash runs `bash -c` in the workspace in its own process group, with a
// timeout that kills the group and an output cap that keeps the head and
// the tail. Its declared Security is honest about what an unconfined shell
// can do; the sandbox package confines it.
//
// PreviewChange (preview.go) computes what a write_file or edit_file call
// would make of its file without running it — with edit_file's own rule
// (applyEdit) — so that an approval can show the diff of exactly the
// change the tool then makes.
package builtin
