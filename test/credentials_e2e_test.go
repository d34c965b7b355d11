package test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// credentialFiles are where tools keep credentials, in a fake HOME; each
// must stay unreadable in the sandbox whatever toolchain profile is on,
// although the profiles grant things right next to them (~/.cargo/bin
// beside ~/.cargo/credentials.toml, ~/.m2/repository beside
// ~/.m2/settings.xml).
var credentialFiles = []string{
	".npmrc", ".yarnrc.yml", ".cargo/credentials.toml", ".cargo/credentials", ".m2/settings.xml",
	".m2/settings-security.xml", ".pypirc", ".config/pip/pip.conf", ".netrc", ".git-credentials",
	".docker/config.json", ".ssh/id_ed25519", ".aws/credentials", ".config/gcloud/credentials.db",
	".azure/msal_token_cache.json", ".kube/config", ".gnupg/private-keys-v1.d/key.key",
	".local/share/keyrings/login.keyring", ".config/gh/hosts.yml", ".gradle/gradle.properties",
	".config/go/env", ".config/pnpm/rc", ".gradle/init.d/repos.gradle", ".gradle/init.gradle",
}

// fakeToolHome lays out a HOME with each toolchain installed the way
// version managers do (rustup, nvm, pyenv, ~/go/bin, ~/.m2), and every
// credential file.
func fakeToolHome(t *testing.T) (string, []string) {
	home := t.TempDir()
	exe := func(rel string) {
		writeFile(t, filepath.Join(home, rel), "#!/bin/sh\necho fake\n")
		os.Chmod(filepath.Join(home, rel), 0o755)
	}
	exe(".cargo/bin/cargo")
	exe(".nvm/versions/node/v20.0.0/bin/node")
	exe(".pyenv/shims/python3")
	exe("go/bin/gopls")
	for _, d := range []string{".cargo/registry/index", ".rustup/toolchains", ".m2/repository/org", ".gradle/caches/modules-2", "go/pkg/mod/cache/download"} {
		os.MkdirAll(filepath.Join(home, d), 0o755)
	}
	for _, c := range credentialFiles {
		writeFile(t, filepath.Join(home, c), "SECRET "+c+"\n")
	}
	env := append(os.Environ(), "HOME="+home, "XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "NVM_DIR="+filepath.Join(home, ".nvm"),
		"PYENV_ROOT="+filepath.Join(home, ".pyenv"), "CARGO_HOME="+filepath.Join(home, ".cargo"),
		"GOENV="+filepath.Join(home, "goenv"),
		"PATH="+strings.Join([]string{home + "/.cargo/bin", home + "/.nvm/versions/node/v20.0.0/bin", home + "/.pyenv/shims", home + "/go/bin", os.Getenv("PATH")}, ":"))
	writeFile(t, filepath.Join(home, "goenv"), "GOPATH="+filepath.Join(home, "go")+"\nGOMODCACHE="+filepath.Join(home, "go/pkg/mod")+"\n")
	return home, env
}

// probe reads every credential file and lists what a profile granted.
func probeScript(home string) string {
	var b strings.Builder
	for _, c := range credentialFiles {
		b.WriteString("cat '" + filepath.Join(home, c) + "' 2>/dev/null | grep -q SECRET && echo 'READABLE " + c + "'\n")
	}
	b.WriteString("echo probe-done\n")
	return b.String()
}

func sandboxRunEnv(t *testing.T, env []string, args ...string) (string, string) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"sandbox", "run"}, args...)...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Run()
	return out.String(), errb.String()
}

func TestCredentialsUnreadableWithEveryProfile(t *testing.T) {
	home, env := fakeToolHome(t)
	ws := t.TempDir()
	script := probeScript(home)

	// The probe works: with the home granted, every file is read.
	out, errOut := sandboxRunEnv(t, env, "--workspace", ws, "--toolchains", "none", "--allow-read", home, "--", "sh", "-c", script)
	for _, c := range credentialFiles {
		if !strings.Contains(out, "READABLE "+c+"\n") {
			t.Fatalf("the probe did not read %s with the home granted:\n%s%s", c, out, errOut)
		}
	}
	// And each profile on its own grants what sits next to them — which
	// the check below makes sure is real — and none of them.
	granted := map[string]string{
		"rust":   ".cargo/bin",
		"node":   ".nvm/versions/node/v20.0.0/bin",
		"python": ".pyenv/shims",
		"go":     "go/bin",
		"java":   ".m2/repository/org",
	}
	for _, profile := range []string{"go", "node", "python", "rust", "java", "go,node,python,rust,java"} {
		t.Run(profile, func(t *testing.T) {
			check := ""
			for p, dir := range granted {
				if strings.Contains(profile, p) {
					check += "ls '" + filepath.Join(home, dir) + "' >/dev/null || echo 'NOT GRANTED " + dir + "'\n"
				}
			}
			out, errOut := sandboxRunEnv(t, env, "--workspace", ws, "--toolchains", profile, "--", "sh", "-c", check+script)
			if !strings.Contains(out, "probe-done") {
				t.Fatalf("the probe did not run:\n%s%s", out, errOut)
			}
			if strings.Contains(out, "NOT GRANTED") {
				t.Errorf("the profile did not grant its install (the test would prove nothing):\n%s%s", out, errOut)
			}
			for _, c := range credentialFiles {
				if strings.Contains(out, "READABLE "+c+"\n") {
					t.Errorf("%s is readable with --toolchains %s", c, profile)
				}
			}
		})
	}
}
