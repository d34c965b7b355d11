package sandbox

import "github.com/lite-agent/lite-agent/sandbox/internal/notify"

// ProtectedName reports whether name, one path component, is one that
// no confined process may create or write while Policy.GitWritable is
// off: ".git", in any case. It is change capture's own rule, exported so
// that the in-process file tools (tools/builtin) refuse the same names
// rather than keep a copy of the rule.
func ProtectedName(name string) bool { return notify.ProtectedName(name) }
