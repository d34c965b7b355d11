package sandbox

import (
	"github.com/lite-agent/lite-agent/internal/paths"
	"github.com/lite-agent/lite-agent/sandbox/internal/notify"
)

// ProtectedName reports whether name, one path component, is ".git", in
// any case: the name of a repository's entry (the one rule, paths.IsGitName).
func ProtectedName(name string) bool { return paths.IsGitName(name) }

// RefusedGitPath reports whether a path (slash-separated; relative to the
// workspace, or canonical) is one no confined process may create or write
// while Policy.GitWritable is off: it has a .git component anywhere, or
// its last component is .git or HEAD (the file that, beside objects/ and
// refs/, makes its directory a bare repository). It is change capture's
// own rule (notify.RefusedGitPath), exported so that the in-process file
// tools (tools/builtin) refuse the same paths rather than keep a copy of
// the rule. Reading is never refused.
func RefusedGitPath(p string) bool { return notify.RefusedGitPath(p) }

// CompletesGitDir reports whether making name in a directory that
// hasHEAD says holds an entry HEAD is refused while .git is protected:
// objects, refs or commondir beside a HEAD complete a repository. The
// sandbox's own rule (notify.CompletesGitDir), for the file tools.
func CompletesGitDir(name string, hasHEAD func() bool) bool {
	return notify.CompletesGitDir(name, hasHEAD)
}
