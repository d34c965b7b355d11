// Package policies holds hardening presets (strict, standard, permissive) as
// data and the allow/ask/deny permission rule language with its policy
// files. It decides nothing at run time by itself: the kernel's permission
// gate consults it.
//
// # Presets
//
// Presets (presets.go) hold, for now, their sandbox part: the policy every
// command runs under and the widest network a custom tool may declare. The
// permission issue (#5) adds the rule language, the policy files and each
// preset's permission mode and rules; until then the kernel's gate knows
// tool names and wildcards only (kernel.Options AllowedTools and
// DisallowedTools).
package policies
