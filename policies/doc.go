// Package policies holds hardening presets (strict, standard, permissive) as
// data and the allow/ask/deny permission rule language with its policy
// files. It decides nothing at run time by itself: the kernel's permission
// gate consults it.
//
// The rule language and the presets are built by the permission issue (#5);
// until then the kernel's gate knows tool names and wildcards only
// (kernel.Options AllowedTools and DisallowedTools), and this package holds
// no code.
package policies
