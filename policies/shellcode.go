package policies

import (
	"strings"
)

// Code bash runs that is not a command word. The walker in shell.go sees
// every simple command of a command line; this file covers the places
// where bash (or a program the line starts) later runs a *string* as code.
// Each construct is either checked — its code is parsed and its parts meet
// the deny rules like any other — or unprovable: a problem (nothing can
// allow it by argument rules) or opaque code (an allow rule for the part
// may allow it). An unprovable command asks when the tool has deny or ask
// rules with arguments, and where no person is asked (bypassPermissions)
// the gate denies it when a deny rule could match (Decision.Unproven).
//
// The survey, from the bash manual (builtins, shell variables, expansions,
// options, startup files) and the programs agents use; each row is a case
// of TestBashRunsCodeFrom, which first runs it unconfined with /bin/bash
// to show it really runs the denied program. [C] checked, [U] unprovable
// (problem), [O] opaque, [N] by name (the part's views), [-] not code.
//
// Builtins
//   eval WORDS .................... [C] the joined words are parsed (shell.go)
//   trap CMD SIG (EXIT DEBUG ERR RETURN …) [C] CMD parsed; a CMD that is not fixed [U]
//   f(){ …; }, function f, ls(){ …; } [C] the body is walked where it is defined;
//                                   a call runs nothing the walk did not see
//   command_not_found_handle(){ …; } [C] a function: its body is walked
//   alias NAME=VALUE .............. [U] with expand_aliases a value can change how the
//                                   words after it parse (alias e='eval '); VALUE is also parsed
//   source FILE, . FILE ........... [O] bash code from a file
//   enable -f SO NAME ............. [U] loads native code as a builtin (not shown running:
//                                   it needs a shared object; the test says so)
//   complete -C CMD, compgen -C CMD [C] CMD parsed with the arguments bash appends
//   compgen -W WORDS .............. [C] WORDS undergo expansion ($(…) runs): parsed
//   complete/compgen -F FUNC ...... [C] a function: its body is walked
//   bind -x SEQ:CMD, bind -f FILE . [U] readline runs CMD on a key (not shown running:
//                                   it needs a terminal)
//   mapfile/readarray -C CMD ...... [C] CMD parsed with the arguments bash appends
//   read -e ....................... [-] readline on stdin; only completions (above) run code
//   fc, history ................... [U] re-run history entries (history -r FILE) or an editor
//   hash -p PATH NAME ............. [U] NAME then runs PATH
//   jobs -x CMD ................... [N] a wrapper
//   exec, command, builtin, time, coproc [N] wrappers / the walker
//   let, (( )), $(( )), $[ ], [[ ]], for (( )) [U] arithmetic: subscripts in values run code
//   declare/typeset/local/export/readonly (-i, -n, -A, values) [U] arithmetic and namerefs
//   a[SUB]=…, a=([SUB]=…) ......... [U] subscripts are arithmetic
//   printf -v NAME, read NAME, unset NAME, test -v NAME, [ -v NAME ] [U] when NAME has a
//                                   subscript or is not fixed (bash evaluates the subscript)
//   getopts OPTS NAME, wait -p NAME, [ X -eq Y ] [-] no subscript evaluation (tested)
//   set -k (keyword) .............. [U] NAME=VALUE anywhere on a later line becomes
//                                   environment (set -k; bash -c : BASH_ENV='$(cmd)')
// Expansions
//   ${!x} (indirection) ........... [U] the name in x may carry a subscript
//   ${x@P} ........................ [U] prompt expansion of a value runs its $(…)
//   ${a[i]}, ${x:o:l} ............. [U] subscripts and offsets are arithmetic
//   $(…), `…`, <(…), >(…) ......... [C] the walker
// Shell variables (as NAME=VALUE before a command, alone, or in env/sudo words)
//   PS0 PS1 PS2 PS4 ............... [C] prompt expansion runs $(…): VALUE parsed as a word
//                                   (PS4 with set -x, also non-interactive)
//   PROMPT_COMMAND ................ [C] run before each prompt: VALUE parsed as code
//   BASH_ENV, ENV ................. [U] a child shell sources the file (the name is expanded:
//                                   VALUE parsed as a word too)
//   SHELLOPTS, BASHOPTS ........... [U] options (xtrace, expand_aliases) for child shells
//   BASH_FUNC_NAME%%=() {…} (env) . [U] a child bash imports the function NAME
//   BASH_LOADABLES_PATH, LD_PRELOAD, LD_AUDIT, LD_LIBRARY_PATH [U] native code loaded
//   GIT_CONFIG_PARAMETERS, GIT_CONFIG_COUNT/KEY_n/VALUE_n, PERL5OPT, NODE_OPTIONS,
//   RUBYOPT, PYTHONSTARTUP ........ [U] configuration that loads or runs code
//   GIT_SSH_COMMAND GIT_PAGER GIT_EDITOR GIT_SEQUENCE_EDITOR GIT_EXTERNAL_DIFF GIT_SSH
//   GIT_ASKPASS SSH_ASKPASS GIT_PROXY_COMMAND PAGER MANPAGER EDITOR VISUAL FCEDIT
//   LESSOPEN LESSCLOSE BROWSER .... [C] a command line the program runs: VALUE parsed
//   PATH=DIR cmd, IFS ............. [-] PATH chooses which file a name runs (rules see
//                                   names); IFS splits only expansions, already unknown
// Startup files and options of child shells
//   bash -i, -l, --login, --rcfile F, --init-file F [U] source files the line does not show
//   bash FILE, sh FILE ............ [O] shell code from a file
//   bash -c STR, bash <<< STR, printf … | bash [C]/[U] (shell.go: -c parsed, stdin unprovable)
// Programs that run a command line or a command
//   timeout nice nohup setsid stdbuf sudo env xargs parallel flock chroot … [N] wrappers
//   find -exec/-execdir/-ok/-okdir  [N]
//   watch CMD, ssh HOST CMD ....... [C] the words are joined and parsed (a remote shell runs them)
//   su -c, runuser -c, script -c, flock -c, env -S [C] the string is parsed
//   rsync -e/--rsh, tar --to-command/--use-compress-program/-I/--checkpoint-action=exec=
//                                   [C] the command is parsed
//   ssh/scp/sftp -o ProxyCommand=…/LocalCommand=…, -F CONFIG [U] a local command
//   other programs with command-valued options (the GTFOBins class: zip -TT,
//   strace -o '|cmd', man -P, …) [N] beyond the rules: they see the program's name
//   git -c K=V, --config-env, git config K V (K command-valued: alias.*, core.pager,
//   core.sshCommand, core.editor, core.fsmonitor, core.hooksPath, diff.external, *.textconv,
//   filter.*, *.driver, credential.helper, *.program, *.askpass, *.command) [U]
// Other languages: inline code is opaque, a script file runs by name
//   python -c, perl -e/-E, ruby -e, node -e/-p, php -r, lua -e, Rscript -e, expect -c,
//   vim/vi/nvim/ex -c/+CMD, emacs --eval [O]
//   awk PROGRAM (system(), pipes) . [O] unless --sandbox (gawk; other awks refuse the option)
//   sed SCRIPT (e, s///e) ......... [O] unless --sandbox (GNU sed refuses e then)
//   less, more (!cmd) ............. [-] interactive only; LESSOPEN above
//   make, npm run, a Makefile, ./script [N] programs reading files: the rules see names

// interpreters run inline code in another language given with one of the
// option letters listed ("*": the first word that is not an option is
// the program, as for awk and sed).
var interpreters = map[string]string{
	"python": "c", "python3": "c", "python2": "c", "pypy3": "c",
	"perl": "eE", "ruby": "e", "node": "ep", "nodejs": "ep", "deno": "e", "bun": "e",
	"php": "r", "lua": "e", "luajit": "e", "Rscript": "e", "expect": "c", "tclsh": "c",
	"vim": "c", "vi": "c", "nvim": "c", "ex": "c", "view": "c", "emacs": "-",
	"awk": "*", "gawk": "*", "mawk": "*", "nawk": "*", "busybox-awk": "*", "sed": "*", "gsed": "*",
}

// interpreter marks inline code in another language as opaque.
func (w *shellWalker) interpreter(name string, args []word) {
	flags := interpreters[name]
	for _, a := range args {
		if a.kind != wordLiteral {
			continue
		}
		if flags == "*" && a.lit == "--sandbox" {
			// gawk and GNU sed refuse to run commands with --sandbox;
			// mawk and busybox refuse the option and run nothing.
			return
		}
	}
	if flags == "*" {
		w.a.opaqueCode("%s runs a program in its own language, which can start commands the rules cannot see (add --sandbox if %s supports it)", name, name)
		return
	}
	for _, a := range args {
		if a.kind != wordLiteral {
			w.a.opaqueCode("%s has options that are not fixed words", name)
			return
		}
		l := a.lit
		inline := false
		switch {
		case l == "--eval" || l == "--print" || strings.HasPrefix(l, "--eval=") || l == "--cmd":
			inline = true
		case strings.HasPrefix(l, "+") && (name == "vim" || name == "vi" || name == "nvim" || name == "ex" || name == "view"):
			inline = true
		case strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "--") && strings.ContainsAny(l[1:], flags):
			inline = true
		}
		if inline {
			w.a.opaqueCode("%s %s runs inline code in another language, which the rules cannot read", name, l)
			return
		}
	}
}

// promptVars are expanded like a double-quoted word (command substitution
// included) each time bash shows them.
var promptVars = map[string]bool{"PS0": true, "PS1": true, "PS2": true, "PS4": true}

// commandVars hold a command line a program runs (mostly through sh -c).
var commandVars = map[string]bool{
	"PROMPT_COMMAND": true, "GIT_SSH_COMMAND": true, "GIT_PAGER": true, "GIT_EDITOR": true,
	"GIT_SEQUENCE_EDITOR": true, "GIT_EXTERNAL_DIFF": true, "GIT_SSH": true, "GIT_ASKPASS": true,
	"SSH_ASKPASS": true, "GIT_PROXY_COMMAND": true, "PAGER": true, "MANPAGER": true, "EDITOR": true,
	"VISUAL": true, "FCEDIT": true, "LESSOPEN": true, "LESSCLOSE": true, "BROWSER": true,
}

// loaderVars make a shell or another program load or run code from
// somewhere the command line does not show.
var loaderVars = map[string]string{
	"BASH_ENV": "a child shell sources the file it names", "ENV": "a child shell sources the file it names",
	"SHELLOPTS": "it sets options (xtrace, …) of child shells", "BASHOPTS": "it sets options (expand_aliases, …) of child shells",
	"BASH_LOADABLES_PATH": "enable loads builtins from it", "LD_PRELOAD": "it loads native code into programs",
	"LD_AUDIT": "it loads native code into programs", "LD_LIBRARY_PATH": "it chooses the native code programs load",
	"GIT_CONFIG_PARAMETERS": "it is git configuration, which can name commands", "GIT_CONFIG_COUNT": "it is git configuration, which can name commands",
	"PERL5OPT": "perl loads modules from it", "NODE_OPTIONS": "node loads code from it",
	"RUBYOPT": "ruby loads code from it", "PYTHONSTARTUP": "python runs the file",
}

// codeVariable checks an assignment whose value a shell or a program may
// run as code (NAME=VALUE before a command, alone, or as a word of env).
func (w *shellWalker) codeVariable(name string, val word) {
	switch {
	case promptVars[name] || commandVars[name]:
		if val.kind != wordLiteral {
			w.a.problem("%s is set to a value that is not fixed, and it is run as code", name)
			return
		}
		code := val.lit
		if promptVars[name] {
			// Prompt expansion: parameters and $(…), as in a word.
			code = ": " + code
		} else if name == "LESSOPEN" || name == "LESSCLOSE" {
			code = strings.TrimLeft(code, "|-")
		}
		w.source(code, w.depth+1)
	case loaderVars[name] != "":
		w.a.problem("it sets %s: %s", name, loaderVars[name])
		if val.kind == wordLiteral && (name == "BASH_ENV" || name == "ENV") {
			w.source(": "+val.lit, w.depth+1) // the name is expanded: $(…) runs
		}
	case strings.HasPrefix(name, "BASH_FUNC_"):
		w.a.problem("it sets %s: a child bash imports it as a function", name)
	case strings.HasPrefix(name, "GIT_CONFIG_KEY_") || strings.HasPrefix(name, "GIT_CONFIG_VALUE_"):
		w.a.problem("it sets %s: git configuration, which can name commands", name)
	}
}

// envWords checks the NAME=VALUE words of env and sudo.
func (w *shellWalker) envWords(args []word) {
	for _, a := range args {
		if a.kind != wordLiteral {
			continue
		}
		if n, v, ok := strings.Cut(a.lit, "="); ok && n != "" && !strings.HasPrefix(n, "-") {
			w.codeVariable(n, word{kind: wordLiteral, lit: v})
		}
	}
}

// callback parses a command bash runs with arguments of its own appended
// (mapfile -C, complete -C): the appended words are unknown.
func (w *shellWalker) callback(name string, cb word) {
	if cb.kind != wordLiteral {
		w.a.problem("%s runs a command that is not a fixed string", name)
		return
	}
	w.source(cb.lit+" $@", w.depth+1)
}

// codeString parses a command string a program runs (su -c, trap).
func (w *shellWalker) codeString(name string, code word) {
	if code.kind != wordLiteral {
		w.a.problem("%s runs a command string that is not a fixed string", name)
		return
	}
	w.source(code.lit, w.depth+1)
}

// nameArg checks a variable name given to a builtin that assigns or
// tests it: a subscript in it is evaluated, and can run code.
func (w *shellWalker) nameArg(name string, n word) {
	switch {
	case n.kind != wordLiteral:
		w.a.problem("%s is given a variable name that is not fixed (a subscript in it would run code)", name)
	case strings.Contains(n.lit, "["):
		w.a.problem("%s is given %s: bash evaluates the subscript, which can run code", name, n.lit)
	}
}

// optArg returns the argument of option letter opt in args[i] (attached,
// "-Cfoo", or the next word) and the index of the last word used.
func optArg(args []word, i int, opt byte) (word, int, bool) {
	a := args[i]
	if a.kind != wordLiteral || !strings.HasPrefix(a.lit, "-") || strings.HasPrefix(a.lit, "--") {
		return word{}, i, false
	}
	k := strings.IndexByte(a.lit[1:], opt)
	if k < 0 {
		return word{}, i, false
	}
	if rest := a.lit[k+2:]; rest != "" {
		return word{kind: wordLiteral, lit: rest}, i, true
	}
	if i+1 < len(args) {
		return args[i+1], i + 1, true
	}
	return word{kind: wordDynamic}, i, true
}

// hasOpt reports whether a short option cluster in args has the letter.
func hasOpt(args []word, letters string) bool {
	for _, a := range args {
		if a.kind == wordLiteral && strings.HasPrefix(a.lit, "-") && !strings.HasPrefix(a.lit, "--") && strings.ContainsAny(a.lit[1:], letters) {
			return true
		}
	}
	return false
}

// gitCommandKeys are parts of git configuration keys whose value is a
// command git runs.
var gitCommandKeys = []string{"alias.", "pager", "editor", "sshcommand", "fsmonitor", "hookspath", "external",
	"textconv", "filter.", "driver", "helper", "program", "askpass", "command", "cmd", "proxy"}

// builtinCode covers the builtins and programs that run a string as code
// (the survey above).
func (w *shellWalker) builtinCode(name string, words []word) {
	args := words[1:]
	switch name {
	case "trap":
		i := 0
		for i < len(args) && args[i].kind == wordLiteral && strings.HasPrefix(args[i].lit, "-") && args[i].lit != "-" {
			i++ // -p, -l, -P, --
		}
		if len(args)-i >= 2 && !(args[i].kind == wordLiteral && (args[i].lit == "-" || args[i].lit == "")) {
			w.codeString("trap", args[i])
		}
	case "alias":
		for _, a := range args {
			if a.kind != wordLiteral {
				w.a.problem("alias is given a definition that is not fixed")
				continue
			}
			if n, v, ok := strings.Cut(a.lit, "="); ok {
				w.a.problem("it defines the alias %s: an alias can change how the words after it are read", n)
				w.source(v, w.depth+1)
			}
		}
	case "source", ".":
		if len(args) > 0 {
			w.a.opaqueCode("%s runs the file %s as bash code, which the rules cannot read", name, args[0].lit)
		}
	case "enable":
		if hasOpt(args, "f") {
			w.a.problem("enable -f loads a builtin from a shared object (native code)")
		}
	case "complete", "compgen", "mapfile", "readarray":
		for i := 0; i < len(args); i++ {
			if cb, j, ok := optArg(args, i, 'C'); ok {
				w.callback(name+" -C", cb)
				i = j
			} else if wl, j, ok := optArg(args, i, 'W'); ok && (name == "complete" || name == "compgen") {
				// The word list undergoes expansion: $(…) in it runs.
				if wl.kind != wordLiteral {
					w.a.problem("%s -W is given a word list that is not fixed (it is expanded)", name)
				} else {
					w.source(": "+wl.lit, w.depth+1)
				}
				i = j
			}
		}
	case "bind":
		if hasOpt(args, "xf") {
			w.a.problem("bind -x/-f makes readline run commands on keys")
		}
	case "fc", "history":
		w.a.problem("%s runs or loads history entries (or an editor)", name)
	case "hash":
		if hasOpt(args, "p") {
			w.a.problem("hash -p makes a command name run another file")
		}
	case "set":
		for i, a := range args {
			if a.kind == wordLiteral && (strings.HasPrefix(a.lit, "-") || strings.HasPrefix(a.lit, "+")) && !strings.HasPrefix(a.lit, "--") && strings.Contains(a.lit[1:], "k") ||
				a.kind == wordLiteral && a.lit == "keyword" && i > 0 && args[i-1].lit == "-o" {
				w.a.problem("set -k makes NAME=VALUE words anywhere in a command environment variables")
			}
		}
	case "printf":
		for i := 0; i < len(args); i++ {
			if v, j, ok := optArg(args, i, 'v'); ok {
				w.nameArg("printf -v", v)
				i = j
			}
		}
	case "read":
		for i := 0; i < len(args); i++ {
			a := args[i]
			if a.kind == wordLiteral && strings.HasPrefix(a.lit, "-") {
				// Options with an argument: -p PROMPT -d DELIM -t N -n N
				// -N N -u FD -i TEXT; -a NAME is a name.
				if v, j, ok := optArg(args, i, 'a'); ok {
					w.nameArg("read -a", v)
					i = j
				} else if strings.ContainsAny(a.lit[len(a.lit)-1:], "pdtnNui") && i+1 < len(args) {
					i++
				}
				continue
			}
			w.nameArg("read", a)
		}
	case "unset":
		for _, a := range args {
			if a.kind == wordLiteral && strings.HasPrefix(a.lit, "-") {
				continue
			}
			w.nameArg("unset", a)
		}
	case "test", "[":
		for i := 0; i+1 < len(args); i++ {
			if args[i].kind == wordLiteral && args[i].lit == "-v" {
				w.nameArg(name+" -v", args[i+1])
			}
		}
	case "su", "runuser", "script", "flock":
		for i := 0; i < len(args); i++ {
			if a := args[i]; a.kind == wordLiteral && strings.HasPrefix(a.lit, "--command=") {
				w.codeString(name+" --command", word{kind: wordLiteral, lit: strings.TrimPrefix(a.lit, "--command=")})
			} else if a.kind == wordLiteral && a.lit == "--command" && i+1 < len(args) {
				w.codeString(name+" --command", args[i+1])
				i++
			} else if c, j, ok := optArg(args, i, 'c'); ok {
				w.codeString(name+" -c", c)
				i = j
			}
		}
	case "env", "sudo":
		w.envWords(args)
		for i := 0; i < len(args) && name == "env"; i++ {
			if a := args[i]; a.kind == wordLiteral && strings.HasPrefix(a.lit, "--split-string=") {
				w.codeString("env -S", word{kind: wordLiteral, lit: strings.TrimPrefix(a.lit, "--split-string=")})
			} else if s, j, ok := optArg(args, i, 'S'); ok {
				w.codeString("env -S", s)
				i = j
			}
		}
	case "ssh", "scp", "sftp":
		// Options that run a command locally (ProxyCommand, LocalCommand,
		// KnownHostsCommand), or a config file that may set them.
		for i, a := range args {
			l := strings.ToLower(a.lit)
			if a.kind != wordLiteral || strings.Contains(l, "command") || a.lit == "-F" || strings.HasPrefix(a.lit, "-F") && i == 0 {
				w.a.problem("%s has an option that may run a local command (ProxyCommand, LocalCommand, -F config)", name)
				return
			}
		}
	case "rsync":
		for i := 0; i < len(args); i++ {
			if a := args[i]; a.kind == wordLiteral && strings.HasPrefix(a.lit, "--rsh=") {
				w.codeString("rsync --rsh", word{kind: wordLiteral, lit: strings.TrimPrefix(a.lit, "--rsh=")})
			} else if a.kind == wordLiteral && a.lit == "--rsh" && i+1 < len(args) {
				w.codeString("rsync --rsh", args[i+1])
				i++
			} else if e, j, ok := optArg(args, i, 'e'); ok {
				w.codeString("rsync -e", e)
				i = j
			}
		}
	case "tar":
		for i := 0; i < len(args); i++ {
			a := args[i]
			if a.kind != wordLiteral {
				continue
			}
			for _, opt := range []string{"--to-command=", "--use-compress-program=", "--rsh-command=", "--info-script=", "--new-volume-script="} {
				if strings.HasPrefix(a.lit, opt) {
					w.codeString("tar "+strings.TrimSuffix(opt, "="), word{kind: wordLiteral, lit: strings.TrimPrefix(a.lit, opt)})
				}
			}
			if strings.HasPrefix(a.lit, "--checkpoint-action=exec=") {
				w.codeString("tar --checkpoint-action", word{kind: wordLiteral, lit: strings.TrimPrefix(a.lit, "--checkpoint-action=exec=")})
			}
			if a.lit == "-I" && i+1 < len(args) {
				w.codeString("tar -I", args[i+1])
				i++
			}
		}
	case "git":
		for i := 0; i < len(args); i++ {
			a := args[i]
			if a.kind != wordLiteral {
				continue
			}
			if a.lit == "-C" || a.lit == "--git-dir" || a.lit == "--work-tree" || a.lit == "--namespace" {
				i++ // the option's argument, not the subcommand
				continue
			}
			if a.lit == "-c" || a.lit == "--config-env" || strings.HasPrefix(a.lit, "--config-env=") {
				w.a.problem("git %s sets configuration, which can name commands git runs", a.lit)
				return
			}
			if a.lit == "config" {
				for _, k := range args[i+1:] {
					key := strings.ToLower(k.lit)
					for _, c := range gitCommandKeys {
						if k.kind != wordLiteral || strings.Contains(key, c) && !strings.HasPrefix(key, "-") {
							w.a.problem("git config %s: a configuration value git runs as a command", k.lit)
							return
						}
					}
				}
				return
			}
			if !strings.HasPrefix(a.lit, "-") {
				return // the subcommand
			}
		}
	}
}
