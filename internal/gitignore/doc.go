// Package gitignore decides which paths gitignore rules exclude, exactly as
// git does. It is the one engine for ignore files in lite-agent: the
// checkpoint recorder (which paths it may leave unrecorded) and the grep
// tool (which files it skips) both use it, so the two can never disagree
// about a path again.
//
// # Semantics
//
// The code follows git 2.39's dir.c and wildmatch.c, and its tests compare
// every answer with `git check-ignore --no-index -v` on a table of cases:
//
//   - blank lines and lines starting with '#' are skipped; trailing spaces
//     are dropped unless escaped; "\#" and "\!" are a literal '#' or '!';
//   - '!' re-includes; within one file the last matching pattern wins; a
//     deeper file wins over a shallower one;
//   - a trailing '/' matches directories only;
//   - a pattern with no '/' (but a trailing one) matches the base name at
//     any depth; one with a '/' at the start or in the middle is relative to
//     its file's directory;
//   - '*', '?' and "[...]" (ranges, '!'/'^' negation, "[:alpha:]" classes)
//     never match '/'; "**" as a whole segment matches any number of
//     directories ("**/x", "a/**/b", "a/**" — which needs something inside
//     a, not a itself); matching is on bytes, case-sensitive;
//   - a path inside an ignored directory is ignored, whatever a later
//     pattern says: git never looks inside the directory.
//
// # Use
//
// Parse turns a file into a List; a Stack chains the lists that apply in a
// directory (a walker pushes each directory's files as it descends and
// never enters an excluded directory); a Tree answers for arbitrary paths,
// loading each directory's files once through a function the caller
// supplies — which decides where the content comes from (the checkpoint
// recorder gives the content as of the session's start). The package
// reads no file itself: callers read ignore files with internal/safefile,
// because the agent may have planted a FIFO or a link to /dev/zero there.
package gitignore
