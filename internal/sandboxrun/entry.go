package sandboxrun

import (
	"debug/buildinfo"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/lite-agent/lite-agent/internal/termsafe"
)

// EntryEnv names the variable through which `lite-agent sandbox run`
// hands the command over to this package's own program
// (cmd/lite-agent-sandbox): the lite-agent binary's C constructor
// (cmd/lite-agent/entry_linux.c) sets it to its own path when it execs
// the program beside it, and does not hand over when it is already set —
// so LITE_AGENT_SANDBOX_ENTRY=in-process runs `sandbox run` inside
// lite-agent itself.
const EntryEnv = "LITE_AGENT_SANDBOX_ENTRY"

// ProgramName is the file name of the sandbox's entry point, installed
// beside lite-agent.
const ProgramName = "lite-agent-sandbox"

const entryUsageText = `usage: lite-agent-sandbox [sandbox] run [flags] -- CMD [ARGS...]

lite-agent-sandbox is 'lite-agent sandbox run' as a program of its own: the
same code, without the agent's packages, so that a confined command starts
sooner. 'lite-agent sandbox run' hands over to it when it is installed
beside lite-agent from the same build. See 'lite-agent-sandbox run -h'.
`

// Entry is the main of lite-agent-sandbox: args are os.Args, version the
// build's. It returns the exit code.
//
// Handed over from lite-agent (EntryEnv set to lite-agent's path), it
// first makes sure both were built from the same sources (Paired); when
// they were not, it execs lite-agent again with `sandbox run` in-process,
// so that what runs is always the code of the lite-agent the person
// called.
func Entry(args []string, version string, stdin io.Reader, stdout, stderr io.Writer) int {
	if caller, ok := os.LookupEnv(EntryEnv); ok {
		os.Unsetenv(EntryEnv)
		// Only an absolute path names the lite-agent that handed over
		// (the constructor passes /proc/self/exe's target). Any other
		// value — "in-process", as a person sets it — runs here: taken
		// as a path it would be a file of the current directory, run
		// unconfined.
		if !filepath.IsAbs(caller) {
			caller = ""
		}
		if err := pairedWith(caller); caller != "" && err != nil {
			env := append(os.Environ(), EntryEnv+"=in-process")
			err = syscall.Exec(caller, args, env)
			return exitCode(&ExitError{Code: ExitSandboxFailed, Msg: fmt.Sprintf(
				"sandbox: %s is from another build than %s, which could not be run again (%v): install both from one build (make install)", ProgramName, caller, err)}, stderr)
		}
	}
	rest := args[1:]
	if len(rest) > 0 && rest[0] == "sandbox" {
		rest = rest[1:]
	}
	if len(rest) == 0 {
		fmt.Fprint(stderr, entryUsageText)
		return 2
	}
	switch rest[0] {
	case "run":
		return exitCode(Run(rest[1:], stdin, stdout, stderr), stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, ProgramName, version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, entryUsageText)
		return 0
	}
	fmt.Fprint(stderr, entryUsageText)
	return 2
}

// exitCode prints err (if any) as lite-agent does and returns the exit
// code for it.
func exitCode(err error, stderr io.Writer) int {
	var ee *ExitError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ee):
		if ee.Msg != "" {
			fmt.Fprintln(stderr, "lite-agent:", termsafe.Text(ee.Msg))
		}
		return ee.Code
	}
	fmt.Fprintln(stderr, "lite-agent:", termsafe.Text(err.Error()))
	return 1
}

// pairedWith says whether the lite-agent binary at path was built from
// the same sources as this program, or why not.
func pairedWith(path string) error {
	self, ok := debug.ReadBuildInfo()
	if !ok {
		return errors.New("this program has no build information")
	}
	caller, err := buildinfo.ReadFile(path)
	if err != nil {
		return err
	}
	return Paired(self, caller)
}

// pairKeys are the build settings that must be equal in two binaries
// built from the same sources the same way.
var pairKeys = []string{"-ldflags", "-tags", "CGO_ENABLED", "GOOS", "GOARCH", "vcs.revision", "vcs.modified"}

// Paired says whether two binaries were built from the same sources
// (nil), or why that cannot be told. Equal build settings are not proof
// enough on their own — two `go build`s of a work tree with different
// edits have the same revision, marked modified — so one of these must
// also hold:
//   - both were linked with the same -X main.version=V, V not "dev"
//     (the Makefile's default V carries a hash of the sources);
//   - both are a released version of the module (go install ...@v1.2.3);
//   - both were built from one unmodified revision.
func Paired(a, b *debug.BuildInfo) error {
	sa, sb := settings(a), settings(b)
	for _, k := range pairKeys {
		if sa[k] != sb[k] {
			return fmt.Errorf("built with %s %q and %q", k, sa[k], sb[k])
		}
	}
	if a.Main.Version != b.Main.Version {
		return fmt.Errorf("module versions %q and %q", a.Main.Version, b.Main.Version)
	}
	switch v := ldflagsVersion(sa["-ldflags"]); {
	case v != "" && v != "dev":
		return nil
	case a.Main.Version != "" && a.Main.Version != "(devel)":
		return nil
	case sa["vcs.revision"] != "" && sa["vcs.modified"] == "false":
		return nil
	}
	return errors.New("neither a version stamp, a released version nor an unmodified revision says they are one build")
}

func settings(bi *debug.BuildInfo) map[string]string {
	m := map[string]string{}
	for _, s := range bi.Settings {
		m[s.Key] = s.Value
	}
	return m
}

// ldflagsVersion is V of "-X main.version=V" (or -X=main.version=V) in
// ldflags, or "".
func ldflagsVersion(ldflags string) string {
	for _, f := range strings.Fields(ldflags) {
		f = strings.TrimPrefix(f, "-X=")
		if v, ok := strings.CutPrefix(f, "main.version="); ok {
			return strings.Trim(v, `'"`)
		}
	}
	return ""
}
