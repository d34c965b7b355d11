package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemoInstallsDepsFirst: `make demo`, the first command the README
// gives a newcomer, installs the missing system packages (scripts/deps.sh,
// which knows libseccomp) before it builds — on a fresh machine the build
// fails without them ("Package libseccomp was not found"). make -n prints
// the recipe lines in the order make would run them, without running any.
func TestDemoInstallsDepsFirst(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed: would check that `make -n demo` runs scripts/deps.sh before go build")
	}
	out, err := exec.Command("make", "-n", "-C", root, "demo").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n demo: %v\n%s", err, out)
	}
	lines := strings.Split(string(out), "\n")
	deps, build := -1, -1
	for i, l := range lines {
		switch {
		case deps < 0 && strings.Contains(l, "scripts/deps.sh"):
			deps = i
		case build < 0 && strings.Contains(l, " build ") && strings.Contains(l, "./cmd/lite-agent"):
			build = i
		}
	}
	if deps < 0 || build < 0 || deps > build {
		t.Errorf("make demo must run scripts/deps.sh before building (deps at line %d, build at %d):\n%s", deps, build, out)
	}
	script, err := os.ReadFile(filepath.Join(root, "scripts/deps.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), "libseccomp") {
		t.Error("scripts/deps.sh does not mention libseccomp, which the build needs")
	}
}

// TestDemoInstallsOnlyWhatItNeeds: the demo's install step asks for the
// build's cgo library and the demo's own interpreter, not the toolchains
// the real-work tests use (JDK, Maven, Gradle, cargo: hundreds of MB a
// newcomer trying the demo never runs).
func TestDemoInstallsOnlyWhatItNeeds(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed: would check that `make -n demo` installs only the demo's packages")
	}
	out, err := exec.Command("make", "-n", "-C", root, "demo").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n demo: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "scripts/deps.sh --demo") {
		t.Fatalf("make demo does not run scripts/deps.sh --demo:\n%s", out)
	}
	list, err := exec.Command("bash", filepath.Join(root, "scripts/deps.sh"), "--demo", "--list").Output()
	if err != nil {
		t.Fatalf("deps.sh --demo --list: %v", err)
	}
	got := strings.Fields(string(list))
	want := []string{"libseccomp-dev", "gcc", "python3", "git"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the demo installs %v, want exactly %v", got, want)
	}
	full, err := exec.Command("bash", filepath.Join(root, "scripts/deps.sh"), "--full", "--list").Output()
	if err != nil {
		t.Fatalf("deps.sh --list: %v", err)
	}
	if !strings.Contains(string(full), "junit4") {
		t.Errorf("the full install no longer lists the real-work tests' packages:\n%s", full)
	}
}

// TestMakeInstall: `make install` (the README's first section) installs
// what the build needs, builds, and puts the binaries in PREFIX/bin —
// /usr/local as root, ~/.local otherwise — the order checked with make -n,
// which runs nothing.
func TestMakeInstall(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed: would check that `make -n install` installs the build's packages, builds and installs the binary")
	}
	prefix := t.TempDir()
	out, err := exec.Command("make", "-n", "-C", root, "install", "PREFIX="+prefix).CombinedOutput()
	if err != nil {
		t.Fatalf("make -n install: %v\n%s", err, out)
	}
	s := string(out)
	deps, build, inst := strings.Index(s, "scripts/deps.sh --demo"), strings.Index(s, "go build -o bin/lite-agent"), strings.Index(s, "install -m 0755 bin/lite-agent "+prefix+"/bin/lite-agent")
	if deps < 0 || build < deps || inst < build {
		t.Errorf("make install must install the packages, build, then install into PREFIX/bin:\n%s", s)
	}
	// lite-agent-sandbox, built with the same version stamp, beside it:
	// lite-agent hands `sandbox run` to it (entry_linux.c).
	entryBuild, entryInst := strings.Index(s, "go build -o bin/lite-agent-sandbox"), strings.Index(s, "install -m 0755 bin/lite-agent-sandbox "+prefix+"/bin/lite-agent-sandbox")
	if entryBuild < deps || entryInst < entryBuild {
		t.Errorf("make install must build lite-agent-sandbox and install it into PREFIX/bin:\n%s", s)
	}
	stamp := func(at int) string {
		line, _, _ := strings.Cut(s[at:], "\n")
		_, v, _ := strings.Cut(line, "-X main.version=")
		v, _, _ = strings.Cut(v, `"`)
		return v
	}
	if v := stamp(build); v == "" || v == "dev" || v != stamp(entryBuild) {
		t.Errorf("both programs need one version stamp that names the sources (%q, %q):\n%s", stamp(build), stamp(entryBuild), s)
	}
	def, err := exec.Command("make", "-n", "-C", root, "install").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n install: %v\n%s", err, def)
	}
	want := filepath.Join(os.Getenv("HOME"), ".local") + "/bin/lite-agent"
	if os.Getuid() == 0 {
		want = "/usr/local/bin/lite-agent"
	}
	if !strings.Contains(string(def), want) {
		t.Errorf("the default install does not go to %s:\n%s", want, def)
	}
}

// TestDepsListTmux: the full install lists tmux, which the interactive
// mode's screen tests drive (they skip without it).
func TestDepsListTmux(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	full, err := exec.Command("bash", filepath.Join(root, "scripts/deps.sh"), "--full", "--list").Output()
	if err != nil {
		t.Fatalf("deps.sh --list: %v", err)
	}
	if !strings.Contains("\n"+string(full), "\ntmux\n") {
		t.Errorf("scripts/deps.sh does not install tmux:\n%s", full)
	}
}
