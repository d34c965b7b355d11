package policies

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/lite-agent/lite-agent/internal/paths"
	"github.com/lite-agent/lite-agent/sandbox"
)

// The roots version managers keep (nvm's versions/node/*, $PYENV_ROOT,
// sdkman's candidates, a CARGO_HOME outside the home, /etc/maven-style
// conf) hold each tool's global configuration; a profile grants the rest
// of the root and never the file.
func TestProfilesHideCredentialsInTheirRoots(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	nvm := filepath.Join(root, "nvm")
	pyenv := filepath.Join(root, "pyenv")
	sdkman := filepath.Join(root, "sdkman")
	cargoHome := filepath.Join(root, "opt-cargo")
	node := filepath.Join(nvm, "versions/node/v20.1.0")
	mvnHome := filepath.Join(sdkman, "candidates/maven/3.9.6")
	gradleHome := filepath.Join(sdkman, "candidates/gradle/8.5")
	mkdirs(t, root, "home", "ws", "cache",
		strings.TrimPrefix(node, root)+"/bin", strings.TrimPrefix(node, root)+"/lib/node_modules/npm/bin", strings.TrimPrefix(node, root)+"/etc",
		"pyenv/shims", "pyenv/bin", "pyenv/versions/3.12.1/bin", "pyenv/versions/3.12.1/lib/python3.12",
		strings.TrimPrefix(mvnHome, root)+"/bin", strings.TrimPrefix(mvnHome, root)+"/conf/logging", strings.TrimPrefix(mvnHome, root)+"/lib",
		strings.TrimPrefix(gradleHome, root)+"/bin", strings.TrimPrefix(gradleHome, root)+"/init.d",
		"opt-cargo/bin", "opt-cargo/registry")
	secrets := map[string]string{
		node + "/etc/npmrc":                  "//registry.example/:_authToken=SECRET",
		node + "/lib/node_modules/npm/npmrc": "//registry.example/:_authToken=SECRET",
		pyenv + "/versions/3.12.1/pip.conf":  "[global]\nindex-url = https://u:SECRET@pypi.example/simple\n",
		mvnHome + "/conf/settings.xml":       "<settings><servers><server><password>SECRET</password></server></servers></settings>",
		gradleHome + "/gradle.properties":    "repoPassword=SECRET\n",
		gradleHome + "/init.d/repos.gradle":  "password 'SECRET'\n",
		cargoHome + "/credentials.toml":      "[registry]\ntoken = \"SECRET\"\n",
		cargoHome + "/.git-credentials":      "https://u:SECRET@git.example\n",
	}
	for p, s := range secrets {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	runnable := []string{node + "/bin/node", node + "/lib/node_modules/npm/bin/npm-cli.js", pyenv + "/shims/python3",
		pyenv + "/versions/3.12.1/bin/python3.12", mvnHome + "/bin/mvn", mvnHome + "/conf/logging",
		gradleHome + "/bin/gradle", cargoHome + "/bin/cargo"}
	for _, p := range runnable {
		if !strings.HasSuffix(p, "logging") {
			os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755)
		}
	}
	h := &fakeHost{home: home, cache: filepath.Join(root, "cache"),
		env: map[string]string{"NVM_DIR": nvm, "PYENV_ROOT": pyenv, "SDKMAN_DIR": sdkman, "CARGO_HOME": cargoHome, "PATH": "/usr/bin"},
		bins: map[string]string{"node": node + "/bin/node", "npm": node + "/lib/node_modules/npm/bin/npm-cli.js",
			"python3": pyenv + "/shims/python3", "mvn": mvnHome + "/bin/mvn", "gradle": gradleHome + "/bin/gradle",
			"cargo": cargoHome + "/bin/cargo"},
		out: map[string]string{}}
	strict, _ := PresetByName("strict")
	p, rep, err := (&Policy{Preset: strict}).SandboxPolicy(filepath.Join(root, "ws"),
		SandboxSettings{Toolchains: []string{"node", "python", "java", "rust"}}, h)
	if err != nil {
		t.Fatal(err)
	}
	for s := range secrets {
		for _, g := range p.ReadOnlyPaths {
			if g == s || strings.HasPrefix(s, g+"/") {
				t.Errorf("granted %s, exposing %s", g, s)
			}
		}
		// The note names the file, or the directory holding it (init.d).
		if !slices.ContainsFunc(rep.Notes, func(n string) bool {
			return strings.Contains(n, "--allow-read "+s+" ") || strings.Contains(n, "--allow-read "+filepath.Dir(s)+" ")
		}) {
			t.Errorf("no note names the grant of %s: %q", s, rep.Notes)
		}
	}
	for _, r := range runnable {
		if !slices.ContainsFunc(p.ReadOnlyPaths, func(g string) bool { return g == r || strings.HasPrefix(r, g+"/") }) {
			t.Errorf("%s is not granted: %v", r, p.ReadOnlyPaths)
		}
	}
	// A root without a credential file is granted whole, as before.
	if !slices.Contains(p.ReadOnlyPaths, pyenv+"/shims") || !slices.Contains(p.ReadOnlyPaths, node+"/bin") {
		t.Errorf("read-only: %v", p.ReadOnlyPaths)
	}
	// The patterns the bash tool's note names credentials by match each
	// hidden file, the same names where no file exists (the note must
	// not tell the two apart), the home's credential paths and the
	// system configuration files whatever profiles are on — and nothing
	// granted.
	credentialPatternsMatch(t, p.CredentialPatterns, slices.Collect(maps.Keys(secrets)), true)
	credentialPatternsMatch(t, p.CredentialPatterns, []string{
		pyenv + "/versions/3.13.0/pip.conf", gradleHome + "/init.d/other.gradle", node + "/etc/npmrc",
		home + "/.ssh", home + "/.ssh/id_ed25519", home + "/.aws/credentials", home + "/.npmrc", home + "/.cargo/credentials.toml",
		"/etc/wgetrc", "/usr/local/pip.conf"}, true)
	credentialPatternsMatch(t, p.CredentialPatterns, append(slices.Clone(runnable), home+"/notes.txt", home+"/.sshx", node+"/etc/other"), false)
}

// credentialPatternsMatch checks that each of files is matched by one of
// patterns (want) or by none, and that every pattern is one the sandbox
// takes (absolute, well-formed).
func credentialPatternsMatch(t *testing.T, patterns, files []string, want bool) {
	t.Helper()
	for _, pat := range patterns {
		if !filepath.IsAbs(pat) || !doublestar.ValidatePattern(pat) {
			t.Errorf("credential pattern %q: not an absolute doublestar pattern", pat)
		}
	}
	for _, f := range files {
		got := slices.ContainsFunc(patterns, func(pat string) bool { ok, _ := doublestar.Match(pat, f); return ok })
		if got != want {
			t.Errorf("%s: a credential pattern matches = %v, want %v", f, got, want)
		}
	}
}

// splitAround grants every entry but the hidden ones, down their paths,
// and follows a directory link by its path (Maven's conf -> /etc/maven):
// the entries are granted through the link, never the link's whole target.
func TestSplitAround(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "a/b/c", "a/d", "etc-maven/logging")
	for _, f := range []string{"a/f", "a/b/secret", "a/b/g", "etc-maven/settings.xml", "etc-maven/m2.conf"} {
		os.WriteFile(filepath.Join(root, f), nil, 0o600)
	}
	if err := os.Symlink(filepath.Join(root, "etc-maven"), filepath.Join(root, "a/conf")); err != nil {
		t.Fatal(err)
	}
	h := &fakeHost{}
	got := splitAround(filepath.Join(root, "a"), []string{root + "/a/b/secret", root + "/a/conf/settings.xml"}, h)
	slices.Sort(got)
	want := []string{root + "/a/b/c", root + "/a/b/g", root + "/a/conf/logging", root + "/a/conf/m2.conf", root + "/a/d", root + "/a/f"}
	if !slices.Equal(got, want) {
		t.Errorf("splitAround:\n got %v\nwant %v", got, want)
	}
}

// Configuration files the system paths grant whole — /etc/wgetrc,
// /etc/gitconfig, a node's /usr/etc/npmrc, a python's /usr/local/pip.conf
// — are hidden when they hold a credential, with no profile on too, and
// kept when they do not (wget will not start when it cannot read the
// wgetrc it finds). --allow-read grants one on purpose.
func TestSystemConfigFilesWithCredentialsHidden(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "ws", "cache", "home")
	strict, _ := PresetByName("strict")
	secret := map[string]string{
		"/etc/wgetrc":          "# defaults\nhttp_user = me\nhttp_password = SECRET\n",
		"/etc/gitconfig":       "[http]\n\textraHeader = Authorization: Bearer SECRET\n",
		"/usr/etc/npmrc":       "//registry.example/:_authToken=SECRET\n",
		"/usr/local/pip.conf":  "[global]\nindex-url = https://me:SECRET@pypi.example/simple\n",
		"/usr/local/etc/netrc": "machine example.com login me password SECRET\n",
	}
	harmless := map[string]string{
		"/etc/wgetrc":    "# passive_ftp = on\n#http_password = x\ntimeout = 30\n",
		"/etc/gitconfig": "[core]\n\tpager = less\n",
		"/usr/etc/npmrc": "registry=https://npm.example/\n",
	}
	exposed := func(p []string, f string) bool {
		return slices.ContainsFunc(p, func(s string) bool { return paths.Within(f, s) })
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		read  []Grant
	}{{"secrets", secret, nil}, {"harmless", harmless, nil}, {"granted", secret, []Grant{{"/etc/wgetrc", "--allow-read"}}}} {
		t.Run(tc.name, func(t *testing.T) {
			h := &fakeHost{home: filepath.Join(root, "home"), cache: filepath.Join(root, "cache"), env: map[string]string{"PATH": "/usr/bin"}, files: tc.files}
			p, rep, err := (&Policy{Preset: strict}).SandboxPolicy(filepath.Join(root, "ws"), SandboxSettings{Toolchains: []string{"none"}, Read: tc.read}, h)
			if err != nil {
				t.Fatal(err)
			}
			sys := p.SystemPaths
			if sys == nil {
				sys = sandbox.DefaultSystemPaths()
			}
			for f := range tc.files {
				hide := tc.name != "harmless" && !(tc.name == "granted" && f == "/etc/wgetrc")
				if exposed(sys, f) == hide {
					t.Errorf("%s: granted by the system paths = %v, want %v (%v)", f, !hide, !hide, sys)
				}
				noted := slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, "--allow-read "+f) })
				if noted != hide {
					t.Errorf("%s: a note = %v, want %v: %q", f, noted, hide, rep.Notes)
				}
			}
			// The rest of /usr and /etc's files stay.
			for _, keep := range []string{"/usr/bin", "/usr/lib", "/etc/passwd", "/etc/hosts"} {
				if _, err := os.Stat(keep); err == nil && !exposed(sys, keep) {
					t.Errorf("%s is no longer granted: %v", keep, sys)
				}
			}
		})
	}
}

// TestMaySecretLine: the pre-check before secretLine is never false for
// a line the expression matches (FuzzMaySecretLine tries more), and is
// false for the lines of a stock wgetrc and gitconfig, so that their
// check compiles no expression.
func TestMaySecretLine(t *testing.T) {
	for _, l := range []string{"passive_ftp = on", "[credential \"https://example.com\"]", "helper = gcloud.sh",
		"use_proxy = on", "https_proxy = http://proxy.example:3128/", "passage = 1", "bypass_x = 2"} {
		if maySecretLine(l) {
			t.Errorf("%q: may hold a secret, so a stock file compiles the expression", l)
		}
		if secretLine().MatchString(l) {
			t.Errorf("%q: the expression matches it: the case is wrong", l)
		}
	}
	for _, l := range []string{"password = x", "PASSWD=x", "pass x", "http_password=x", "_authToken=x", "//reg/:_auth=x",
		"token = x", "Secret: x", "extraHeader = Authorization: Bearer x", "url = https://u:p@host/x", "machine h login u password p",
		"ftp_pass=x", "x.pass", "paſſword = x"} {
		if !secretLine().MatchString(l) {
			t.Errorf("%q: the expression does not match it: the case is wrong", l)
		}
		if !maySecretLine(l) {
			t.Errorf("%q: the pre-check says no secret", l)
		}
	}
}

func FuzzMaySecretLine(f *testing.F) {
	for _, s := range []string{"passive_ftp = on", "password = x", "https://u:p@h", "pass", "PaSsWd.", "a://b:c@d", "xpasswdy", "pass_word"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, l string) {
		if secretLine().MatchString(l) && !maySecretLine(l) {
			t.Errorf("%q: the expression matches, the pre-check says no secret", l)
		}
	})
}

// TestCredentialPatternsQuoteTheRoot: a root whose name holds pattern
// characters is matched as written, not as a pattern.
func TestCredentialPatternsQuoteTheRoot(t *testing.T) {
	pats := credentialPatternsIn("/opt/a[1]{x,y}*", installCredentials)
	credentialPatternsMatch(t, pats, []string{"/opt/a[1]{x,y}*/.npmrc", "/opt/a[1]{x,y}*/.config/git/credentials"}, true)
	credentialPatternsMatch(t, pats, []string{"/opt/a1x/.npmrc", "/opt/a[1]{x,y}z/.npmrc", "/opt/a[1]{x,y}*/npmrc"}, false)
}
