// Package policy is the vocabulary of confinement as data: the Policy a
// confined command or handler runs under, its network modes and their one
// ordering, its levels and limits, the domain questions it may put to a
// person, and the shapes of the change hooks a command is started with.
//
// It holds no implementation and imports nothing of the sandbox's (no
// cgo, no seccomp, no spawn path), so that a package that only describes
// confinement — a tool's declared Security, a toolset's handler ceiling,
// a preset — can name these types without linking the machinery that
// enforces them. Package sandbox enforces a Policy (sandbox.New) and
// re-exports every name here (sandbox.Policy is policy.Policy), so a
// program that runs commands needs only package sandbox.
package policy
