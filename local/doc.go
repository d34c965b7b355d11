// Package local is the strict assembler: local.New builds a hardened agent
// from a preset, refusing any custom tool whose security declaration is
// missing or broader than the preset allows, and wires the kernel, the
// sandbox, checkpoints and the permission rules together.
//
// It is built by the permission issue (#5); until then this package holds
// no code. Use kernel.Query directly.
package local
