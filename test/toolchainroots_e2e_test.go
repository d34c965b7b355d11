package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCredentialsInToolchainRootsUnreadable: with --toolchains auto the
// roots version managers keep are granted — nvm's versions/node/*,
// $PYENV_ROOT, sdkman's candidates — and each holds its tool's global
// configuration: npm's {prefix}/etc/npmrc, pip's site pip.conf (in every
// pyenv version's sys.prefix), Maven's conf/settings.xml. None is
// readable inside the sandbox, while the toolchains still run from those
// very roots; --allow-read FILE (what the note names) grants one, which
// also shows the probe reads what it may.
func TestCredentialsInToolchainRootsUnreadable(t *testing.T) {
	home := t.TempDir()
	tools := t.TempDir()
	nvm := filepath.Join(tools, "nvm")
	pyenv := filepath.Join(tools, "pyenv")
	sdkman := filepath.Join(tools, "sdkman")
	node := filepath.Join(nvm, "versions/node/v22.1.0")
	py := filepath.Join(pyenv, "versions/3.12.4")
	mvn := filepath.Join(sdkman, "candidates/maven/3.9.6")
	secrets := map[string]string{
		"npm-global-npmrc":        filepath.Join(node, "etc/npmrc"),
		"pip-site-pip.conf":       filepath.Join(py, "pip.conf"),
		"maven-conf-settings.xml": filepath.Join(mvn, "conf/settings.xml"),
	}
	writeFile(t, secrets["npm-global-npmrc"], "//registry.example/:_authToken=SECRET-npm\n")
	writeFile(t, secrets["pip-site-pip.conf"], "[global]\nindex-url = https://user:SECRET-pip@pypi.example/simple\n")
	writeFile(t, secrets["maven-conf-settings.xml"], "<settings><servers><server><id>corp</id><password>SECRET-mvn</password></server></servers></settings>\n")
	exe := func(p, body string) {
		writeFile(t, p, "#!/bin/sh\n"+body+"\n")
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Each fake tool reads its own install, as the real one does: node its
	// lib/, python its version's lib/, Maven its conf/logging.
	writeFile(t, filepath.Join(node, "lib/node_modules/npm/package.json"), "{}\n")
	writeFile(t, filepath.Join(py, "lib/python3.12/os.py"), "# os\n")
	writeFile(t, filepath.Join(mvn, "conf/logging/simplelogger.properties"), "x=1\n")
	exe(filepath.Join(node, "bin/node"), "cat "+filepath.Join(node, "lib/node_modules/npm/package.json")+" >/dev/null && echo node-ran")
	exe(filepath.Join(pyenv, "shims/python3"), "cat "+filepath.Join(py, "lib/python3.12/os.py")+" >/dev/null && echo python-ran")
	exe(filepath.Join(mvn, "bin/mvn"), "cat "+filepath.Join(mvn, "conf/logging/simplelogger.properties")+" >/dev/null && echo mvn-ran")
	os.Symlink(mvn, filepath.Join(sdkman, "candidates/maven/current"))

	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "package.json"), "{}\n")
	writeFile(t, filepath.Join(ws, "pyproject.toml"), "[project]\nname = \"x\"\n")
	writeFile(t, filepath.Join(ws, "pom.xml"), "<project/>\n")
	env := append(os.Environ(), "HOME="+home, "XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "NVM_DIR="+nvm, "PYENV_ROOT="+pyenv, "SDKMAN_DIR="+sdkman,
		"PATH="+strings.Join([]string{node + "/bin", pyenv + "/shims", filepath.Join(sdkman, "candidates/maven/current/bin"), os.Getenv("PATH")}, ":"))

	var script strings.Builder
	for what, p := range secrets {
		script.WriteString("grep -q SECRET '" + p + "' 2>/dev/null && echo 'READABLE " + what + "'\n")
	}
	script.WriteString("node; python3; mvn; echo probe-done\n")

	// The person's grant: --allow-read of each file makes it readable
	// (and shows that the probe reads what the sandbox allows).
	args := []string{"--workspace", ws, "--toolchains", "auto"}
	var grants []string
	for _, p := range secrets {
		grants = append(grants, "--allow-read", p)
	}
	out, errOut := sandboxRunEnv(t, env, append(append(append([]string(nil), args...), grants...), "--", "sh", "-c", script.String())...)
	for what := range secrets {
		if !strings.Contains(out, "READABLE "+what+"\n") {
			t.Fatalf("%s is not readable with --allow-read of it (the test would prove nothing):\n%s%s", what, out, errOut)
		}
	}

	out, errOut = sandboxRunEnv(t, env, append(append([]string(nil), args...), "--", "sh", "-c", script.String())...)
	if !strings.Contains(out, "probe-done") {
		t.Fatalf("the probe did not run:\n%s%s", out, errOut)
	}
	for _, ran := range []string{"node-ran", "python-ran", "mvn-ran"} {
		if !strings.Contains(out, ran+"\n") {
			t.Errorf("%s missing: the toolchain no longer runs from its root:\n%s%s", ran, out, errOut)
		}
	}
	for what, p := range secrets {
		if strings.Contains(out, "READABLE "+what+"\n") {
			t.Errorf("%s (%s) is readable with --toolchains auto", what, p)
		}
	}
	// What the person does to grant one is in the sandbox's report.
	cmd := exec.Command(binary, "sandbox", "check", "--workspace", ws)
	cmd.Env = env
	report, _ := cmd.CombinedOutput()
	for _, p := range secrets {
		if !strings.Contains(string(report), "--allow-read "+p+" ") {
			t.Errorf("no note of `sandbox check --workspace` names the grant of %s:\n%s", p, report)
		}
	}
}

// TestSystemNodeGlobalNpmrcUnreadable: a node installed under the system
// paths (/usr/bin/node, prefix /usr) reads its global configuration from
// {prefix}/etc/npmrc — /usr/etc/npmrc, which the system path /usr grants
// to every command. With the node profile on, the sandbox's /usr is /usr
// without that file, and node and npm still run.
func TestSystemNodeGlobalNpmrcUnreadable(t *testing.T) {
	need(t, "node", "node", "npm")
	out, err := exec.Command("npm", "config", "get", "globalconfig").Output()
	npmrc := strings.TrimSpace(string(out))
	if err != nil || !strings.HasPrefix(npmrc, "/usr/") {
		t.Skipf("npm's global npmrc is not beneath /usr here (%q, %v): this test would show a system node's {prefix}/etc/npmrc unreadable", npmrc, err)
	}
	if _, err := os.Stat(npmrc); err != nil {
		t.Skipf("%s does not exist here: this test would show a system node's global npmrc unreadable", npmrc)
	}
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "package.json"), "{}\n")
	env := append(os.Environ(), "HOME="+t.TempDir())
	script := "cat " + npmrc + " >/dev/null 2>&1 && echo READABLE-npmrc; node -e 'console.log(\"node-ran\")'; npm --version >/dev/null && echo npm-ran\n"
	// Without the profile /usr is whole: the file is readable (the attack).
	before, errOut := sandboxRunEnv(t, env, "--workspace", ws, "--toolchains", "none", "--", "sh", "-c", script)
	if !strings.Contains(before, "READABLE-npmrc") {
		t.Fatalf("%s is not readable without the profile (the test would prove nothing):\n%s%s", npmrc, before, errOut)
	}
	after, errOut := sandboxRunEnv(t, env, "--workspace", ws, "--toolchains", "node", "--", "sh", "-c", script)
	if strings.Contains(after, "READABLE-npmrc") {
		t.Errorf("%s is readable with the node profile on:\n%s", npmrc, after)
	}
	if !strings.Contains(after, "node-ran") || !strings.Contains(after, "npm-ran") {
		t.Errorf("node or npm no longer runs:\n%s%s", after, errOut)
	}
}
