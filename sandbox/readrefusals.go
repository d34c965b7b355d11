package sandbox

import (
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/lite-agent/lite-agent/internal/paths"
)

// # Reads outside the grants
//
// A read the grants do not cover is refused by the kernel to no one's
// knowledge: Landlock answers EACCES, and the sandbox's root skeleton has
// no such name (ENOENT). The command then says "No such file or
// directory" of a file that may well exist, and a model takes it at its
// word. So the paths a failed command's own error lines name are checked
// against the grants, as text: each one the grants do not cover is a
// Refusal of rule "read" (ReadRefusals), a credential path — one that
// Policy.CredentialPatterns matches — named as such.
//
// The check never asks the host's file system about a path the output
// names: the note is the same whether the file exists outside or not, so
// a command cannot learn what the host holds by printing error lines of
// its own making. Paths are compared as written and cleaned
// (paths.Within), against each grant as given and as resolved; a
// symlink inside the grants that leads out of them is not followed, and
// is not named (a note that is missing, never a wrong one).
//
// What is looked at is bounded, whatever the output's size: its last
// readScanBytes, of those its last readScanLines lines, lines up to
// readLineBytes long, and readMaxPaths distinct paths.

const (
	readScanBytes = 64 << 10
	readScanLines = 400
	readLineBytes = 4 << 10
	readMaxPaths  = 32
	// readMaxRefusals bounds the list: the note names the first only.
	readMaxRefusals = 8
)

// fileErrorPhrases mark a line that reports a file that could not be
// opened (lower case): the C library's strerror texts, what ls, stat and
// cp say, Python's errno tags, node's and Go's error codes.
var fileErrorPhrases = []string{
	"no such file or directory", "permission denied", "operation not permitted",
	"cannot access", "cannot open", "can't open", "could not open", "unable to open",
	"not found", "enoent", "eacces", "eperm", "[errno 2]", "[errno 13]",
}

// hasFileError reports whether line carries one of fileErrorPhrases, in
// any case.
func hasFileError(line string) bool {
	lower := strings.ToLower(line)
	for _, p := range fileErrorPhrases {
		if strings.Contains(lower, p) {
			return true
		}
	}
	return false
}

// closingQuote pairs each opening quote a tool puts around a path with
// the one that closes it (coreutils' locale quoting uses ‘…’ in UTF-8
// and '…' otherwise; some use `…').
var closingQuote = map[rune]string{'\'': "'", '"': `"`, '`': "'`", '‘': "’", '“': "”"}

// readCandidates lists the paths output's error lines name, in the order
// they appear, each absolute and cleaned: a path written as ~/REST is
// taken in home (the HOME the command saw; such a path is skipped when
// home is ""). Relative paths are skipped: the command may have changed
// its directory before naming one. So are /proc, /sys and /dev, where the
// sandbox's own instances (or none) decide, not a grant, and "/" itself.
func readCandidates(output, home string) []string {
	if len(output) > readScanBytes {
		output = output[len(output)-readScanBytes:]
		// The cut may fall inside a line: drop that part-line.
		if i := strings.IndexByte(output, '\n'); i >= 0 {
			output = output[i+1:]
		}
	}
	lines := strings.Split(output, "\n")
	if len(lines) > readScanLines {
		lines = lines[len(lines)-readScanLines:]
	}
	var out []string
	for _, line := range lines {
		if len(line) > readLineBytes || !hasFileError(line) {
			continue
		}
		for _, p := range pathsInLine(line) {
			switch {
			case strings.HasPrefix(p, "~/"):
				if home == "" || !filepath.IsAbs(home) {
					continue
				}
				p = filepath.Join(home, p[2:])
			case !filepath.IsAbs(p):
				continue
			}
			p = filepath.Clean(p)
			if p == "/" || paths.Within(p, "/proc") || paths.Within(p, "/sys") || paths.Within(p, "/dev") {
				continue
			}
			if !slices.Contains(out, p) {
				out = append(out, p)
				if len(out) == readMaxPaths {
					return out
				}
			}
		}
	}
	return out
}

// pathsInLine returns the tokens of line that look like absolute paths
// ("/x", "~/x"), quoted ('/x', "/x", ‘/x’: up to the closing quote) or
// not (up to a space, a colon or punctuation, trailing dots and commas
// left off). A token must start the line or follow a space, a quote, a
// bracket, '=' or ',': "https://host/x" and "file:/x" name no file here.
func pathsInLine(line string) []string {
	var out []string
	for i := 0; i < len(line); {
		c, next := line[i], byte(0)
		if i+1 < len(line) {
			next = line[i+1]
		}
		// "/x" or "~/x"; not "//x", a URL's host or no path at all.
		if start := c == '~' && next == '/' || c == '/' && next != '/'; !start {
			i++
			continue
		}
		prev, _ := utf8.DecodeLastRuneInString(line[:i])
		if i > 0 && !unicode.IsSpace(prev) && !strings.ContainsRune("'\"`‘“([<{=,", prev) {
			i++
			continue
		}
		end := -1
		if closers, quoted := closingQuote[prev]; quoted && i > 0 {
			if j := strings.IndexAny(line[i:], closers); j >= 0 {
				end = i + j
			}
		}
		tok := ""
		if end >= 0 {
			tok = line[i:end]
		} else {
			end = len(line)
			for j, r := range line[i:] {
				if unicode.IsSpace(r) || strings.ContainsRune(":'\"`‘’“”,;()<>[]{}|", r) {
					end = i + j
					break
				}
			}
			tok = strings.TrimRight(line[i:end], ".!?")
		}
		if tok != "" && tok != "~/" && !strings.ContainsFunc(tok, unicode.IsControl) {
			out = append(out, tok)
		}
		i = max(end, i+1)
	}
	return out
}

// readScope is what decides whether a path a command named was shown to
// it: home is the HOME the command saw ("" when it was its own TMPDIR),
// roots the grants (clean, as given and as resolved), own the paths of
// the sandbox's private tmpfs (when it has one), credentials
// Policy.CredentialPatterns. When a command's HOME was its own temporary
// directory, personHome is the person's (which commands cannot read) and
// tempHomes where those directories are: tempHomes itself
// (Policy.TempDir, or the sandbox's directory a command uses whole) or a
// directory of it named cmd-* (tmpCommandPrefix).
type readScope struct {
	home                    string
	roots, own, credentials []string
	personHome, tempHomes   string
}

// readRefusalsOf is ReadRefusals' decision for the paths output names:
// each one within none of sc's roots is a Refusal of rule "read".
func readRefusalsOf(output string, sc readScope) []Refusal {
	var out []Refusal
	for _, p := range readCandidates(output, sc.home) {
		if withinAny(p, sc.roots) {
			if r, ok := explainTempHome(p, sc); ok {
				out = append(out, r)
			}
			if len(out) == readMaxRefusals {
				break
			}
			continue
		}
		out = append(out, explainRead(p, withinAny(p, sc.own), matchesAny(p, sc.credentials)))
		if len(out) == readMaxRefusals {
			break
		}
	}
	return out
}

// tmpCommandPrefix begins the name of a command's temporary directory
// in the sandbox's (acquireTmp).
const tmpCommandPrefix = "cmd-"

// explainTempHome is the Refusal for a dotfile a failed command could not
// find in its HOME when that HOME was its own temporary directory
// (`cat ~/.gitconfig` names $TMPDIR/.gitconfig): the person's file of
// that name is not shown, and --allow-read shows it by its own path (a
// command's HOME stays its temporary directory unless the whole home is
// readable). Only a name starting with "." right under HOME: what a
// command writes in its temporary directory and then misses is its own
// business, and a note on every such path would be noise.
func explainTempHome(p string, sc readScope) (Refusal, bool) {
	if sc.personHome == "" || sc.tempHomes == "" {
		return Refusal{}, false
	}
	rel, ok := paths.Rel(sc.tempHomes, p)
	if !ok || rel == "." {
		return Refusal{}, false
	}
	parts := strings.Split(rel, string(filepath.Separator))
	if strings.HasPrefix(parts[0], tmpCommandPrefix) {
		parts = parts[1:] // the command's own directory in the sandbox's
	}
	if len(parts) == 0 || !strings.HasPrefix(parts[0], ".") || parts[0] == "." || parts[0] == ".." {
		return Refusal{}, false
	}
	real := filepath.Join(append([]string{sc.personHome}, parts...)...)
	r := Refusal{Rule: "read", Op: "read", Target: p,
		Why: "HOME is this command's own temporary directory (your home is not readable in the sandbox), so this is not " + real +
			", which commands cannot read",
		Allow: "--allow-read " + real + " (read in a policy file's [sandbox] table) lets commands read it by that path, if it exists"}
	if matchesAny(real, sc.credentials) {
		r.Why = "HOME is this command's own temporary directory (your home is not readable in the sandbox), so this is not " + real +
			", a credential path, hidden from commands whatever the profiles grant"
	}
	return r, true
}

// explainRead is the Refusal of a read of path outside the grants: in
// the sandbox's own /tmp (own: the host's files there are not shown,
// and what commands wrote there may be), a credential path (one of
// Policy.CredentialPatterns), or anywhere else. --allow-read shows any
// path, a credential's too: policies never refuses the person's own
// grant, and a toolchain's hidden file is granted by name when asked for
// (docs/toolchains.md, "What stays unreadable"); beneath the private
// tmpfs the grant is bound in. "if it exists": the note must not say
// whether it does. An error line seldom says whether the call read or
// wrote ("bash: /x/out: No such file or directory" is a redirection's
// too, which the notification server cannot record where the sandbox's
// root has no /x), so a path outside every grant also names the grant
// that lets commands write beside it.
func explainRead(path string, own, credential bool) Refusal {
	r := Refusal{Rule: "read", Op: "read", Target: path,
		Why: "outside the paths commands may read (the sandbox shows only the workspace, the system and the toolchains' files)",
		Allow: "--allow-read " + path + " (read in a policy file's [sandbox] table) shows it, if it exists; --allow-write " +
			filepath.Dir(path) + " (write) lets commands write there"}
	switch {
	case credential:
		r.Why = "a credential path, hidden from commands whatever the profiles grant"
		r.Allow = "--allow-read " + path + " (read in a policy file's [sandbox] table) shows it to every command, if it exists"
	case own:
		r.Why = "the sandbox's /tmp, /var/tmp and /run are its own, shared by its commands (the host's files there are not shown)"
		r.Allow = "--allow-read " + path + " (read in a policy file's [sandbox] table) shows the host's, if it exists"
	}
	return r
}

// withinAny reports whether p (clean) is within one of roots (clean).
func withinAny(p string, roots []string) bool {
	for _, r := range roots {
		if paths.WithinClean(p, r) {
			return true
		}
	}
	return false
}

// matchesAny reports whether one of patterns (checked by normalizePolicy)
// matches p.
func matchesAny(p string, patterns []string) bool {
	for _, pat := range patterns {
		if doublestar.MatchUnvalidated(pat, p) {
			return true
		}
	}
	return false
}
