package policies

import (
	"fmt"
	"path"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// Shell commands are matched part by part. A command line is parsed with a
// real bash parser (mvdan.cc/sh/v3/syntax) and every simple command in it —
// across ; && || | & newlines, subshells, { } blocks, if/while/for/case
// bodies, $(…) and `…` substitutions, <(…) and >(…) process substitutions,
// the string of bash -c / sh -c and the words of eval — is one part.
//
// A deny or ask rule matches when it matches any part (and, for those
// rules, a part is also seen through common wrappers: "timeout 5 curl",
// "xargs rm", "find -exec rm", "/usr/bin/curl" as "curl"). An allow rule
// set allows the command only when every part is matched by some allow
// rule, and nothing in the command is outside what the rules can state
// (see noAllow below).
//
// Whatever the parser cannot prove is recorded as a problem: a command
// name that is not a fixed word ($CMD, $(echo rm)), arithmetic (which can
// run code through array subscripts), declare/export/local, a string for
// bash -c or eval that is not fixed, bash reading its commands from
// standard input, input that does not parse — and the other places bash
// runs a string as code (shellcode.go has the survey: traps, aliases,
// prompt variables, startup files, source, completion callbacks, …).
// When a tool has deny or ask rules with arguments, a command with a
// problem asks: it might be one of them; the Decision is marked Unproven
// when a deny rule could match, and the gate denies it where nobody is
// asked (bypassPermissions).

// wordKind says how much is known about one shell word.
type wordKind uint8

const (
	// wordLiteral: the value is known (quotes and escapes removed).
	wordLiteral wordKind = iota
	// wordPattern: an unquoted glob, brace or tilde expansion; its
	// expansion depends on the file system or the environment, its
	// source text is known.
	wordPattern
	// wordDynamic: one word whose value is not known ("$x", "$(cmd)").
	wordDynamic
	// wordSplit: an unquoted expansion ($x, $(cmd)) that may become any
	// number of words, so the positions of the words after it are not
	// known either.
	wordSplit
)

type word struct {
	kind wordKind
	lit  string // the value (wordLiteral) or the source text (wordPattern)
}

// shellPart is one simple command.
type shellPart struct {
	text  string   // its source text, for messages
	words []word   // as executed
	views [][]word // what deny and ask rules see: words, then the forms seen through wrappers
}

// shellAnalysis is what the parser proved about a command line.
type shellAnalysis struct {
	parts []shellPart
	// problems: what could not be proven (a deny or ask rule might match
	// what the shell will really run).
	problems []string
	// noAllow: what argument allow rules cannot state — writes through
	// redirections, variable assignments (PATH=. git status), function
	// definitions, loops that assign a variable. Such a command is only
	// allowed by a rule for the whole tool, or by a person.
	noAllow []string
	// opaque: code the command runs that the rules cannot read — a file
	// bash sources or runs as a script, inline code in another language
	// (python -c, awk, sed without --sandbox). Like a problem it makes a
	// command unprovable when the tool has deny or ask rules with
	// arguments; without those, unlike a problem, an allow rule for the
	// part (bash(python3 -c:*)) may allow it: the user named what runs.
	opaque []string
}

func (a *shellAnalysis) opaqueCode(format string, args ...any) {
	a.opaque = append(a.opaque, fmt.Sprintf(format, args...))
}

func (a *shellAnalysis) problem(format string, args ...any) {
	a.problems = append(a.problems, fmt.Sprintf(format, args...))
}

func (a *shellAnalysis) forbidAllow(format string, args ...any) {
	a.noAllow = append(a.noAllow, fmt.Sprintf(format, args...))
}

var parserPool = sync.Pool{New: func() any {
	return syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(false))
}}

// maxShellDepth bounds the nesting of bash -c and eval strings analyzed.
const maxShellDepth = 4

// analyzeShell parses a command line and collects its parts.
func analyzeShell(cmd string) *shellAnalysis {
	a := &shellAnalysis{}
	w := &shellWalker{a: a}
	w.source(cmd, 0)
	if len(a.parts) == 0 && len(a.problems) == 0 {
		a.forbidAllow("the command line runs no command")
	}
	return a
}

type shellWalker struct {
	a     *shellAnalysis
	src   string
	depth int
}

// source parses src (the top-level command or a bash -c / eval string) and
// walks it.
func (w *shellWalker) source(src string, depth int) {
	if depth > maxShellDepth {
		w.a.problem("shell strings nested more than %d deep", maxShellDepth)
		return
	}
	p := parserPool.Get().(*syntax.Parser)
	f, err := p.Parse(strings.NewReader(src), "")
	parserPool.Put(p)
	if err != nil {
		w.a.problem("the command does not parse as bash: %v", err)
		return
	}
	saved, savedDepth := w.src, w.depth
	w.src, w.depth = src, depth
	w.stmts(f.Stmts)
	w.src, w.depth = saved, savedDepth
}

func (w *shellWalker) stmts(ss []*syntax.Stmt) {
	for _, s := range ss {
		w.stmt(s)
	}
}

func (w *shellWalker) stmt(s *syntax.Stmt) {
	if s == nil {
		return
	}
	for _, r := range s.Redirs {
		w.redirect(r)
	}
	if s.Coprocess || s.Disown {
		w.a.problem("a non-bash background operator")
	}
	w.command(s.Cmd)
}

func (w *shellWalker) command(c syntax.Command) {
	switch c := c.(type) {
	case nil:
		// A statement of redirections only ("> file").
	case *syntax.CallExpr:
		w.call(c)
	case *syntax.BinaryCmd:
		w.stmt(c.X)
		w.stmt(c.Y)
	case *syntax.Subshell:
		w.stmts(c.Stmts)
	case *syntax.Block:
		w.stmts(c.Stmts)
	case *syntax.IfClause:
		for ic := c; ic != nil; ic = ic.Else {
			w.stmts(ic.Cond)
			w.stmts(ic.Then)
		}
	case *syntax.WhileClause:
		w.stmts(c.Cond)
		w.stmts(c.Do)
	case *syntax.ForClause:
		switch l := c.Loop.(type) {
		case *syntax.WordIter:
			w.a.forbidAllow("the loop assigns the variable %s", l.Name.Value)
			for _, it := range l.Items {
				w.word(it)
			}
		default:
			w.a.problem("an arithmetic for loop")
			w.nested(l)
		}
		w.stmts(c.Do)
	case *syntax.CaseClause:
		w.word(c.Word)
		for _, it := range c.Items {
			for _, p := range it.Patterns {
				w.word(p)
			}
			w.stmts(it.Stmts)
		}
	case *syntax.FuncDecl:
		w.a.forbidAllow("it defines the function %s", c.Name.Value)
		w.stmt(c.Body)
	case *syntax.TimeClause:
		w.stmt(c.Stmt)
	case *syntax.CoprocClause:
		w.a.forbidAllow("it starts a coprocess")
		w.stmt(c.Stmt)
	case *syntax.DeclClause:
		w.a.problem("%s can evaluate arithmetic and changes what later commands see", c.Variant.Value)
		w.nested(c)
	case *syntax.ArithmCmd, *syntax.LetClause:
		w.a.problem("arithmetic evaluation (it can run code through array subscripts)")
		w.nested(c)
	case *syntax.TestClause:
		w.a.problem("a [[ ]] test (its arithmetic comparisons can run code)")
		w.nested(c)
	default:
		w.a.problem("an unsupported shell construct (%T)", c)
		w.nested(c)
	}
}

// nested collects the commands inside a construct the walker does not
// understand, so that a deny rule still sees them.
func (w *shellWalker) nested(n syntax.Node) {
	syntax.Walk(n, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst:
			w.stmts(n.Stmts)
			return false
		case *syntax.ProcSubst:
			w.stmts(n.Stmts)
			return false
		}
		return true
	})
}

func (w *shellWalker) redirect(r *syntax.Redirect) {
	var target word
	if r.Word != nil {
		target = w.word(r.Word)
	}
	if r.Hdoc != nil {
		w.word(r.Hdoc)
	}
	if r.N != nil && !isDigits(r.N.Value) {
		w.a.forbidAllow("the redirection assigns the variable %s", r.N.Value)
	}
	switch r.Op {
	case syntax.RdrIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		// Reading: what may be read is the sandbox's business.
	case syntax.DplIn, syntax.DplOut:
		if target.kind != wordLiteral || !(isDigits(target.lit) || target.lit == "-") {
			w.a.forbidAllow("it redirects output to %s", w.text(r.Word))
		}
	default:
		if target.kind != wordLiteral || target.lit != "/dev/null" {
			w.a.forbidAllow("it writes to %s (%s)", w.text(r.Word), r.Op)
		}
	}
}

func (w *shellWalker) text(n syntax.Node) string {
	if n == nil {
		return ""
	}
	s, e := int(n.Pos().Offset()), int(n.End().Offset())
	if s < 0 || e > len(w.src) || s > e {
		return "?"
	}
	return w.src[s:e]
}

func (w *shellWalker) call(c *syntax.CallExpr) {
	for _, as := range c.Assigns {
		if as.Index != nil || as.Array != nil {
			w.a.problem("an array assignment (subscripts are arithmetic)")
			w.nested(as)
		}
		if as.Value != nil {
			w.word(as.Value)
		}
		if as.Name != nil {
			w.a.forbidAllow("it sets the variable %s", as.Name.Value)
			if as.Value != nil {
				w.codeVariable(as.Name.Value, w.word(as.Value))
			}
		}
	}
	if len(c.Args) == 0 {
		return
	}
	words := make([]word, len(c.Args))
	for i, a := range c.Args {
		words[i] = w.word(a)
	}
	text := w.src[int(c.Args[0].Pos().Offset()):int(c.Args[len(c.Args)-1].End().Offset())]
	w.part(text, w.text(c.Args[0]), words)
}

// part records one simple command, the forms wrappers hide, and the
// commands inside a bash -c or eval string.
func (w *shellWalker) part(text, name string, words []word) {
	if words[0].kind != wordLiteral {
		w.a.problem("the command name %s is not a fixed word", name)
	}
	p := shellPart{text: text, words: words}
	p.views = append(p.views, words)
	w.addViews(&p, words)
	w.a.parts = append(w.a.parts, p)
	w.inner(words)
}

// addViews adds what deny and ask rules also see in words: the command
// name without its directory, and every command a wrapper may run. A
// wrapper's own options are not parsed: every later word that is not an
// option is taken as where the wrapped command may start, which
// over-approximates (a deny rule may see a command that is only an
// argument) but never misses one.
func (w *shellWalker) addViews(p *shellPart, words []word) {
	name, ok := commandName(words)
	if !ok {
		return
	}
	addBase := func(v []word) {
		if v[0].kind == wordLiteral && strings.Contains(v[0].lit, "/") {
			b := append([]word{{kind: wordLiteral, lit: path.Base(v[0].lit)}}, v[1:]...)
			p.views = append(p.views, b)
		}
	}
	addBase(words)
	for _, i := range w.wrappedStarts(name, words) {
		p.views = append(p.views, words[i:])
		addBase(words[i:])
	}
}

// wrappedStarts returns the positions in words where a command run by the
// wrapper words[0] may start: every later fixed word that is not an option
// for a wrapper, the word after -exec and its kin for find.
func (w *shellWalker) wrappedStarts(name string, words []word) []int {
	var out []int
	switch {
	case wrappers[name]:
		for i := 1; i < len(words); i++ {
			if words[i].kind == wordLiteral && !strings.HasPrefix(words[i].lit, "-") {
				out = append(out, i)
			}
		}
	case name == "find":
		for i := 1; i < len(words)-1; i++ {
			if words[i].kind == wordLiteral && findExec[words[i].lit] {
				// Any later word may start the command of another -exec,
				// or be the command after this one.
				for j := i + 1; j < len(words); j++ {
					if words[j].kind == wordLiteral && !strings.HasPrefix(words[j].lit, "-") {
						out = append(out, j)
					}
				}
				break
			}
		}
	}
	return out
}

// commandName is the base name of the command words run, if fixed.
func commandName(words []word) (string, bool) {
	if len(words) == 0 || words[0].kind != wordLiteral {
		return "", false
	}
	return path.Base(words[0].lit), true
}

// inner analyzes the code a command runs from its arguments — bash -c
// STRING, eval WORDS, watch WORDS — also behind wrappers.
func (w *shellWalker) inner(words []word) {
	name, ok := commandName(words)
	if !ok {
		return
	}
	w.special(name, words)
	for _, i := range w.wrappedStarts(name, words) {
		if n, ok := commandName(words[i:]); ok {
			w.special(n, words[i:])
		}
	}
}

func (w *shellWalker) special(name string, words []word) {
	switch {
	case name == "eval" || name == "watch":
		w.evalWords(name, words[1:])
	case name == "ssh":
		// The remote shell runs the words after the host as a command
		// line (the host and ssh's options are not parsed); some options
		// run a local command (builtinCode).
		w.evalWords(name, words[1:])
		w.builtinCode(name, words)
	case shells[name]:
		w.shellArgs(name, words[1:])
	case interpreters[name] != "":
		w.interpreter(name, words[1:])
	default:
		w.builtinCode(name, words)
	}
}

// evalWords analyzes the words eval joins and runs as code. watch does
// the same after its options, which are not parsed: the words from every
// position that is not an option are analyzed (over-approximation).
func (w *shellWalker) evalWords(name string, args []word) {
	for _, a := range args {
		if a.kind != wordLiteral {
			w.a.problem("%s runs code that is not a fixed string", name)
			return
		}
	}
	join := func(ws []word) string {
		s := make([]string, len(ws))
		for i, x := range ws {
			s[i] = x.lit
		}
		return strings.Join(s, " ")
	}
	if name == "eval" {
		if len(args) > 0 {
			w.source(join(args), w.depth+1)
		}
		return
	}
	for i, a := range args {
		if !strings.HasPrefix(a.lit, "-") {
			w.source(join(args[i:]), w.depth+1)
		}
	}
}

// shellArgs analyzes `bash [options] -c STRING` and refuses to guess what
// a shell reading standard input will run.
func (w *shellWalker) shellArgs(name string, args []word) {
	cflag, sflag := false, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a.kind != wordLiteral {
			if cflag {
				w.a.problem("%s -c runs a command string that is not a fixed string", name)
			} else {
				w.a.problem("the options of %s are not fixed words", name)
			}
			return
		}
		if a.lit == "--" || a.lit == "-" {
			if i+1 < len(args) && !cflag {
				w.a.opaqueCode("%s runs the file %s as shell code, which the rules cannot read", name, args[i+1].lit)
				return
			}
			continue
		}
		if (strings.HasPrefix(a.lit, "-") || strings.HasPrefix(a.lit, "+")) && len(a.lit) > 1 {
			if strings.HasPrefix(a.lit, "--") {
				switch a.lit {
				case "--login", "--rcfile", "--init-file", "--interactive":
					// A login or interactive shell sources startup files
					// (~/.profile, ~/.bashrc, ENV, the --rcfile) the command
					// does not show — and HOME may be the writable TMPDIR.
					w.a.problem("%s %s runs startup files as code", name, a.lit)
				}
				if (a.lit == "--rcfile" || a.lit == "--init-file") && i+1 < len(args) {
					i++
				}
				continue // --norc, --noprofile, ...
			}
			opts := a.lit[1:]
			if strings.HasPrefix(a.lit, "-") && strings.ContainsAny(opts, "il") {
				w.a.problem("%s -%s runs startup files as code (a login or interactive shell)", name, opts)
			}
			if strings.HasPrefix(a.lit, "-") && strings.ContainsRune(opts, 'c') {
				cflag = true
			}
			if strings.HasPrefix(a.lit, "-") && strings.ContainsRune(opts, 's') {
				sflag = true
			}
			if strings.ContainsAny(opts, "oO") && i+1 < len(args) {
				i++ // -o pipefail: the option's argument
			}
			continue
		}
		if cflag {
			w.source(a.lit, w.depth+1)
			return
		}
		if sflag {
			w.a.problem("%s -s reads its commands from standard input", name)
			return
		}
		w.a.opaqueCode("%s runs the file %s as shell code, which the rules cannot read", name, a.lit)
		return
	}
	if cflag {
		w.a.problem("%s -c has no command string", name)
		return
	}
	w.a.problem("%s reads its commands from standard input", name)
}

// wrappers run the command given in their arguments.
var wrappers = map[string]bool{
	"command": true, "builtin": true, "exec": true, "nohup": true, "nice": true,
	"timeout": true, "stdbuf": true, "env": true, "sudo": true, "doas": true,
	"xargs": true, "setsid": true, "ionice": true, "taskset": true, "flock": true,
	"chrt": true, "time": true, "busybox": true, "strace": true, "ltrace": true,
	"unbuffer": true, "chroot": true, "runuser": true, "nsenter": true, "unshare": true,
	"parallel": true, "caffeinate": true, "fakeroot": true,
	// jobs -x CMD runs CMD with job specs replaced.
	"jobs": true,
}

var findExec = map[string]bool{"-exec": true, "-execdir": true, "-ok": true, "-okdir": true}

// shells run a command string given with -c.
var shells = map[string]bool{"bash": true, "sh": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "ash": true, "fish": true, "rbash": true}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// word evaluates what can be known of a shell word without running
// anything, and walks the commands substituted inside it.
func (w *shellWalker) word(wd *syntax.Word) word {
	if wd == nil {
		return word{kind: wordDynamic}
	}
	var b strings.Builder
	kind := wordLiteral
	raise := func(k wordKind) {
		if k > kind {
			kind = k
		}
	}
	for i, part := range wd.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			v, pattern := unquotedLit(p.Value, i == 0)
			if pattern {
				raise(wordPattern)
			}
			b.WriteString(v)
		case *syntax.SglQuoted:
			if p.Dollar {
				raise(wordDynamic) // $'…' escapes: not worth decoding here
				continue
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				raise(wordDynamic)
			}
			for _, q := range p.Parts {
				switch q := q.(type) {
				case *syntax.Lit:
					b.WriteString(dquotedLit(q.Value))
				default:
					w.expansion(q)
					raise(wordDynamic)
				}
			}
		case *syntax.ExtGlob, *syntax.BraceExp:
			raise(wordPattern)
		default:
			w.expansion(part)
			raise(wordSplit)
		}
	}
	if kind == wordPattern {
		return word{kind: wordPattern, lit: w.text(wd)}
	}
	return word{kind: kind, lit: b.String()}
}

// expansion walks a parameter, command, arithmetic or process
// substitution inside a word.
func (w *shellWalker) expansion(p syntax.WordPart) {
	switch p := p.(type) {
	case *syntax.CmdSubst:
		w.stmts(p.Stmts)
	case *syntax.ProcSubst:
		w.stmts(p.Stmts)
	case *syntax.ArithmExp:
		w.a.problem("arithmetic expansion $((…)) (it can run code through array subscripts)")
		w.nested(p)
	case *syntax.ParamExp:
		if p.Index != nil || p.Slice != nil || p.Excl {
			w.a.problem("a parameter expansion with a subscript, slice or indirection (arithmetic)")
		}
		if p.Exp != nil && p.Exp.Op == syntax.OtherParamOps && p.Exp.Word != nil && strings.Contains(p.Exp.Word.Lit(), "P") {
			w.a.problem("${…@P} expands the value as a prompt, which runs the command substitutions in it")
		}
		w.nested(p)
	default:
		w.a.problem("an unsupported expansion (%T)", p)
		w.nested(p)
	}
}

// unquotedLit removes backslash escapes from an unquoted literal and says
// whether the shell would expand it further (glob, brace, tilde).
func unquotedLit(s string, first bool) (string, bool) {
	pattern := first && strings.HasPrefix(s, "~")
	if !strings.ContainsAny(s, "\\*?[{") {
		return s, pattern
	}
	var b strings.Builder
	brace := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			if i+1 < len(s) {
				i++
				if s[i] != '\n' {
					b.WriteByte(s[i])
				}
			}
			continue
		case '*', '?':
			pattern = true
		case '[':
			// A bracket expression needs its ']': a lone '[' (the test
			// command) is a literal word.
			if strings.IndexByte(s[i+1:], ']') >= 0 {
				pattern = true
			}
		case '{':
			brace = true
		case ',':
			if brace {
				pattern = true
			}
		case '.':
			if brace && i+1 < len(s) && s[i+1] == '.' {
				pattern = true
			}
		}
		b.WriteByte(c)
	}
	return b.String(), pattern
}

// dquotedLit removes the escapes a double-quoted string knows.
func dquotedLit(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '$', '`', '"', '\\':
				i++
			case '\n':
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// patternWords parses the command of a shell rule into words: fixed words
// only (quotes are removed as the shell would), one simple command.
func patternWords(pat string) ([]string, error) {
	if words, ok := plainWords(pat); ok {
		return words, nil
	}
	return parsedWords(pat)
}

// parsedWords is patternWords through the shell parser.
func parsedWords(pat string) ([]string, error) {
	p := parserPool.Get().(*syntax.Parser)
	f, err := p.Parse(strings.NewReader(pat), "")
	parserPool.Put(p)
	if err != nil {
		return nil, fmt.Errorf("the command pattern does not parse: %v", err)
	}
	if len(f.Stmts) != 1 {
		return nil, fmt.Errorf("a command pattern is one simple command; write one rule per command (compound commands are split and each part checked on its own)")
	}
	s := f.Stmts[0]
	call, ok := s.Cmd.(*syntax.CallExpr)
	if !ok || len(s.Redirs) > 0 || s.Negated || s.Background || len(call.Assigns) > 0 {
		return nil, fmt.Errorf("a command pattern is one simple command (words only: no operators, redirections or assignments)")
	}
	w := &shellWalker{a: &shellAnalysis{}, src: pat}
	out := make([]string, len(call.Args))
	for i, a := range call.Args {
		wd := w.word(a)
		if wd.kind == wordDynamic || wd.kind == wordSplit || len(w.a.parts) > 0 || len(w.a.problems) > 0 {
			return nil, fmt.Errorf("%q in the command pattern is not a fixed word (no $, `…` or $(…))", w.text(a))
		}
		out[i] = wd.lit
	}
	return out, nil
}

// plainWords splits a pattern made only of characters the shell gives no
// meaning to (letters, digits, space, tab and _ - . / : , @ + %) into its
// words without the shell parser — the common rule, parsed about ten times
// faster, which keeps a policy file of 200,000 rules well under a second.
// A first word the parser would read as a keyword or declaration
// (if, time, declare, …) or as an assignment (a=b) is left to it, so that
// both paths give the same words or the same error
// (TestPlainWordsAgreesWithTheParser).
func plainWords(pat string) ([]string, bool) {
	for i := 0; i < len(pat); i++ {
		c := pat[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte(" \t_-./:,@+%", c) >= 0:
		default:
			return nil, false
		}
	}
	words := strings.Fields(pat)
	if len(words) == 0 || shellKeywords[words[0]] {
		return nil, false
	}
	return words, true
}

// shellKeywords are the words that make a statement something other than
// a simple command when they come first.
var shellKeywords = map[string]bool{
	"if": true, "then": true, "else": true, "elif": true, "fi": true, "case": true, "esac": true,
	"for": true, "select": true, "while": true, "until": true, "do": true, "done": true, "in": true,
	"function": true, "time": true, "coproc": true, "declare": true, "local": true, "export": true,
	"readonly": true, "typeset": true, "nameref": true, "let": true,
}

// matchResult is a three-valued match: a rule may match what cannot be
// known before the command runs.
type matchResult uint8

const (
	matchNo matchResult = iota
	matchMaybe
	matchYes
)

// matchWords matches a shell rule against one view of a part. For an allow
// rule only a certain match counts, so unknown words never match; for deny
// and ask rules an unknown word that could be the rule's word makes the
// result maybe.
func (r *Rule) matchWords(view []word) matchResult {
	uncertain := false
	for i, pw := range r.words {
		if i >= len(view) {
			return matchNo
		}
		w := view[i]
		switch w.kind {
		case wordLiteral:
			if w.lit != pw {
				return matchNo
			}
		case wordPattern:
			if w.lit != pw {
				uncertain = true
			}
		case wordDynamic:
			uncertain = true
		case wordSplit:
			// Positions after it are unknown.
			return matchMaybe
		}
	}
	if !r.prefix && len(view) != len(r.words) {
		// Only expansions that may vanish could make the lengths agree.
		for _, w := range view[len(r.words):] {
			if w.kind != wordSplit {
				return matchNo
			}
		}
		uncertain = true
	}
	if uncertain {
		return matchMaybe
	}
	return matchYes
}

// allowsWords reports whether an allow rule certainly matches a part as
// executed: every compared word known and equal (a glob word equal to the
// rule's word as written).
func (r *Rule) allowsWords(words []word) bool {
	if len(words) < len(r.words) || !r.prefix && len(words) != len(r.words) {
		return false
	}
	for i, pw := range r.words {
		w := words[i]
		if (w.kind != wordLiteral && w.kind != wordPattern) || w.lit != pw {
			return false
		}
	}
	return true
}

// suggestion is an exact rule for a part, quoted so that it parses back to
// the same words; "" when a word is not fixed.
func (p *shellPart) suggestion() string {
	var b strings.Builder
	for i, w := range p.words {
		if w.kind != wordLiteral {
			return ""
		}
		q, err := syntax.Quote(w.lit, syntax.LangBash)
		if err != nil {
			return ""
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(q)
	}
	return "bash(" + b.String() + ")"
}
