// Package seccomp builds the sandbox's seccomp programs: the main program
// (everything a confined process may never do, per network mode) and the
// child program (namespace rules, and the calls sent to the notification
// server, sandbox/internal/notify), and keeps the table of programs
// precompiled at `go generate ./sandbox` time (programs.bin), looked up by
// a SHA-256 of every input of their compile.
//
// It decides nothing at run time: what a rule refuses and why is in
// rules_linux.go, next to the rule. The list of change-capture calls is
// the notification server's (notify.CaptureCalls), so the program that
// traps them and the server that answers them read one list
// (WithCapture). The refusal set (refusal_linux.go: the calls refused
// outright, namespaces and mounts, set-id modes and device nodes) is
// sent to the server where a program of the chain has a listener whose
// server knows it, so that a command's result names what was refused;
// Refused is that server's test of a call, made from the same table as
// the rules.
//
// # API
//
//   - Main(MainSpec) and Child(ChildSpec): the programs, as classic BPF
//     bytes (a copy of the table's, or a fresh compile for a shape the
//     table lacks; Compiles counts those). MainSpec.RefusalsInChild and
//     ChildSpec.Refusals put the refusal set in the child program.
//   - NotifySpec: the calls sent to the server. ConnectOnly (mode
//     unrestricted: every connect, for the AF_UNIX rule), NetSupervised
//     (every call that names an address), WithCapture (plus the capture
//     calls).
//   - Refused(nr, args): whether a notified call is one of the refusal
//     set, and its record (the server's notify.Options.Refused).
//
// Staleness is a test failure: TestPrecompiledSeccompPrograms compiles
// every shape afresh (precompiledShapes lists them) and requires the
// stored bytes. The stored programs must equal a compile with this
// machine's libseccomp: another libseccomp version may emit different,
// equally valid programs, and that test then fails.
package seccomp
