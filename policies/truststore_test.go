package policies

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// testCert is a self-signed certificate, DER.
var testCert = sync.OnceValue(func() []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Test Root"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	return der
})

// certPEM is testCert as PEM; bundle is it with a comment and a title
// before it, as certifi and curl write theirs.
func certPEM() []byte { return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: testCert()}) }
func bundle() []byte {
	return append([]byte("# Issuer: CN=Test Root\nTest Root\n=========\n"), certPEM()...)
}

// envValue is the last value p.Env gives name ("" when none).
func envValue(env []string, name string) string {
	v := ""
	for _, e := range env {
		if k, val, _ := strings.Cut(e, "="); k == name {
			v = val
		}
	}
	return v
}

// noSystemPip keeps this machine's pip configuration out of a test.
func noSystemPip() map[string]string {
	return map[string]string{"/etc/xdg/pip/pip.conf": "", "/etc/pip.conf": ""}
}

// TestTrustStoresPassed: the CA bundles a person points TLS clients at
// (a company proxy that re-signs TLS) reach the sandbox when commands can
// read them already — the system's, or a file the person grants with
// --allow-read — and nothing is granted for them; a bundle elsewhere, a
// path that does not exist, a relative one, one the person's --env names
// and a credential path are not passed, each with a note.
func TestTrustStoresPassed(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "home/.ssh", "ws", "cache", "corp")
	ca, other := filepath.Join(root, "corp", "ca.pem"), filepath.Join(root, "corp", "other.pem")
	for _, f := range []string{ca, other} {
		if err := os.WriteFile(f, bundle(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sshCA := filepath.Join(root, "home", ".ssh", "ca.pem")
	if err := os.WriteFile(sshCA, certPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	h := &fakeHost{home: filepath.Join(root, "home"), cache: filepath.Join(root, "cache"), files: noSystemPip(), env: map[string]string{
		"PATH":                "/usr/bin",
		"NODE_EXTRA_CA_CERTS": ca,
		"SSL_CERT_FILE":       other,
		"SSL_CERT_DIR":        "/etc/ssl/certs",
		"REQUESTS_CA_BUNDLE":  filepath.Join(root, "corp", "missing.pem"),
		"CURL_CA_BUNDLE":      "corp/ca.pem",
		"GIT_SSL_CAINFO":      sshCA,
		"PIP_CERT":            ca,
	}}
	strict, _ := PresetByName("strict")
	p, rep, err := (&Policy{Preset: strict}).SandboxPolicy(filepath.Join(root, "ws"), SandboxSettings{Toolchains: []string{"none"},
		Read: []Grant{{ca, "--allow-read"}}, Env: []Grant{{"PIP_CERT=/mine.pem", "flag"}}}, h)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"NODE_EXTRA_CA_CERTS": ca, "SSL_CERT_DIR": "/etc/ssl/certs", "PIP_CERT": "/mine.pem"} {
		if got := envValue(p.Env, name); got != want {
			t.Errorf("%s=%q, want %q", name, got, want)
		}
	}
	for _, name := range []string{"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"} {
		if got := envValue(p.Env, name); got != "" {
			t.Errorf("%s passed: %q", name, got)
		}
	}
	if slices.ContainsFunc(p.ReadOnlyPaths, func(r string) bool { return r != ca }) {
		t.Errorf("granted more than the person's --allow-read: %v", p.ReadOnlyPaths)
	}
	for _, name := range []string{"SSL_CERT_FILE", "GIT_SSL_CAINFO", "CURL_CA_BUNDLE"} {
		if !slices.ContainsFunc(rep.Withheld, func(n string) bool { return strings.Contains(n, "not passing "+name) }) {
			t.Errorf("no note says why %s was not passed: %v", name, rep.Withheld)
		}
	}
	if !slices.ContainsFunc(rep.Withheld, func(n string) bool { return strings.Contains(n, "--allow-read "+other) }) {
		t.Errorf("the note for SSL_CERT_FILE does not name the --allow-read that passes it: %v", rep.Withheld)
	}
	// A credential path is not pointed at even where it is readable.
	p, rep, err = (&Policy{Preset: strict}).SandboxPolicy(filepath.Join(root, "ws"), SandboxSettings{Toolchains: []string{"none"},
		Read: []Grant{{filepath.Join(root, "home", ".ssh"), "--allow-read"}}}, h)
	if err != nil {
		t.Fatal(err)
	}
	if got := envValue(p.Env, "GIT_SSL_CAINFO"); got != "" || !slices.ContainsFunc(rep.Withheld, func(n string) bool { return strings.Contains(n, "would expose") }) {
		t.Errorf("GIT_SSL_CAINFO=%q with ~/.ssh readable; notes %v", got, rep.Withheld)
	}
}

// TestNpmCAFilePassed: npm's cafile, set in an npmrc the sandbox hides
// (the global one of a node, the user's), reaches npm inside as
// npm_config_cafile, read from the file without starting npm; the user's
// npmrc wins over the global one, a later line over an earlier one, and a
// ${VAR} value is left alone.
func TestNpmCAFilePassed(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "home", "ws", "cache", "prefix/bin", "prefix/etc", "corp")
	ca, other := filepath.Join(root, "corp", "ca.pem"), filepath.Join(root, "corp", "other.pem")
	for _, f := range []string{ca, other} {
		if err := os.WriteFile(f, certPEM(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	node := filepath.Join(root, "prefix", "bin", "node")
	global, user := filepath.Join(root, "prefix", "etc", "npmrc"), filepath.Join(root, "home", ".npmrc")
	strict, _ := PresetByName("strict")
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  bool
	}{
		{"global", map[string]string{global: "; company\ncafile = \"" + ca + "\"\n//r.example/:_authToken=SECRET\n"}, true},
		{"user first", map[string]string{global: "cafile=" + other + "\n", user: "cafile=" + other + "\ncafile=" + ca + "\n"}, true},
		{"a variable", map[string]string{global: "cafile=${CORP_CA}\n"}, false},
		{"none", map[string]string{global: "registry=https://r.example/\n"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := noSystemPip()
			for k, v := range tc.files {
				files[k] = v
			}
			h := &fakeHost{home: filepath.Join(root, "home"), cache: filepath.Join(root, "cache"), env: map[string]string{"PATH": "/usr/bin"},
				bins: map[string]string{"node": node}, files: files}
			p, rep, err := (&Policy{Preset: strict}).SandboxPolicy(filepath.Join(root, "ws"), SandboxSettings{Toolchains: []string{"none"},
				Read: []Grant{{filepath.Join(root, "corp"), "--allow-read"}}}, h)
			if err != nil {
				t.Fatal(err)
			}
			got := envValue(p.Env, "npm_config_cafile")
			if (got != "") != tc.want {
				t.Fatalf("npm_config_cafile = %q, want one: %v", got, tc.want)
			}
			if tc.want && (got != ca || !slices.ContainsFunc(rep.Env, func(g Grant) bool { return g.Value == "npm_config_cafile="+ca })) {
				t.Errorf("npm_config_cafile=%q, want %s, reported", got, ca)
			}
		})
	}
}

// TestPipCertPassed: pip's cert from its configuration files (a later
// file wins, [global] only) reaches pip inside as PIP_CERT; the person's
// PIP_CERT wins over the files, and PIP_CONFIG_FILE=/dev/null turns the
// files off as it does for pip.
func TestPipCertPassed(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "home/.config/pip", "ws", "cache", "corp")
	ca := filepath.Join(root, "corp", "ca.pem")
	if err := os.WriteFile(ca, certPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	userConf := filepath.Join(root, "home", ".config", "pip", "pip.conf")
	strict, _ := PresetByName("strict")
	for _, tc := range []struct {
		name  string
		env   map[string]string
		files map[string]string
		want  bool
	}{
		{"system", nil, map[string]string{"/etc/pip.conf": "[global]\ncert = " + ca + "\n"}, true},
		{"the user's", nil, map[string]string{userConf: "[global]\nindex-url = https://me:SECRET@r.example/simple\ncert=" + ca + "\n"}, true},
		{"another section", nil, map[string]string{"/etc/pip.conf": "[install]\ncert = " + ca + "\n"}, false},
		{"no files", map[string]string{"PIP_CONFIG_FILE": os.DevNull}, map[string]string{"/etc/pip.conf": "[global]\ncert = " + ca + "\n"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"PATH": "/usr/bin"}
			for k, v := range tc.env {
				env[k] = v
			}
			files := noSystemPip()
			for k, v := range tc.files {
				files[k] = v
			}
			h := &fakeHost{home: filepath.Join(root, "home"), cache: filepath.Join(root, "cache"), env: env, files: files}
			p, _, err := (&Policy{Preset: strict}).SandboxPolicy(filepath.Join(root, "ws"), SandboxSettings{Toolchains: []string{"none"},
				Read: []Grant{{filepath.Join(root, "corp"), "--allow-read"}}}, h)
			if err != nil {
				t.Fatal(err)
			}
			if got := envValue(p.Env, "PIP_CERT"); (got != "") != tc.want {
				t.Errorf("PIP_CERT = %q, want one: %v", got, tc.want)
			}
			if strings.Contains(strings.Join(p.Env, " "), "SECRET") {
				t.Errorf("a credential of pip.conf reached the env: %v", p.Env)
			}
		})
	}
}

// TestTrustStoreNeverFromWhereTheAgentWrites: a configuration file the
// person's environment names in the workspace, or in a workspace reached
// through a link, is not read (an agent could make it name any file), a
// bundle that is a link to a credential file is refused, and so is a
// bundle in the workspace (an agent could swap it for a link).
func TestTrustStoreNeverFromWhereTheAgentWrites(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "home", "realws", "cache", "corp")
	home, realWS := filepath.Join(root, "home"), filepath.Join(root, "realws")
	ws := filepath.Join(root, "ws")
	if err := os.Symlink(realWS, ws); err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(root, "corp", "ca.pem")
	if err := os.WriteFile(ca, certPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	npmrc := filepath.Join(home, ".npmrc")
	if err := os.WriteFile(npmrc, append([]byte("//r.example/:_authToken=SECRET\nca=\""), certPEM()...), 0o600); err != nil {
		t.Fatal(err)
	}
	toNpmrc := filepath.Join(root, "corp", "link.pem")
	if err := os.Symlink(npmrc, toNpmrc); err != nil {
		t.Fatal(err)
	}
	inWS := filepath.Join(realWS, "ca.pem")
	if err := os.WriteFile(inWS, certPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	// A pip.conf in the workspace (named through its real path, the
	// workspace through a link) naming a valid bundle outside it.
	planted := filepath.Join(realWS, "pip.conf")
	if err := os.WriteFile(planted, []byte("[global]\ncert = "+ca+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := &fakeHost{home: home, cache: filepath.Join(root, "cache"), files: noSystemPip(),
		env: map[string]string{"PATH": "/usr/bin", "PIP_CONFIG_FILE": planted, "SSL_CERT_FILE": toNpmrc, "NODE_EXTRA_CA_CERTS": inWS}}
	strict, _ := PresetByName("strict")
	// The bundles are readable (granted, the workspace too): what keeps
	// them out is the rule.
	p, _, err := (&Policy{Preset: strict}).SandboxPolicy(ws, SandboxSettings{Toolchains: []string{"none"},
		Read: []Grant{{filepath.Join(root, "corp"), "--allow-read"}, {realWS, "--allow-read"}}}, h)
	if err != nil {
		t.Fatal(err)
	}
	if got := envValue(p.Env, "PIP_CERT"); got != "" {
		t.Errorf("PIP_CERT=%q from a pip.conf in the workspace", got)
	}
	if got := envValue(p.Env, "SSL_CERT_FILE"); got != "" {
		t.Errorf("SSL_CERT_FILE=%q through a link to ~/.npmrc", got)
	}
	if got := envValue(p.Env, "NODE_EXTRA_CA_CERTS"); got != "" {
		t.Errorf("NODE_EXTRA_CA_CERTS=%q: a bundle where the agent writes", got)
	}
	for _, r := range p.ReadOnlyPaths {
		if r != filepath.Join(root, "corp") && r != realWS {
			t.Errorf("granted %s", r)
		}
	}
}
