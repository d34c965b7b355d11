package policies

import (
	"bytes"
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
	"syscall"
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
// (a company proxy that re-signs TLS) reach the sandbox: one the system
// paths grant as it is, another as a read-only copy of its certificates
// alone; a path that does not exist, a relative one, a directory outside
// the grants, one the person's --env names and a credential path are not.
func TestTrustStoresPassed(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "home/.ssh", "ws", "cache", "corp")
	ca := filepath.Join(root, "corp", "ca.pem")
	if err := os.WriteFile(ca, bundle(), 0o644); err != nil {
		t.Fatal(err)
	}
	sshCA := filepath.Join(root, "home", ".ssh", "ca.pem")
	if err := os.WriteFile(sshCA, certPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	h := &fakeHost{home: filepath.Join(root, "home"), cache: filepath.Join(root, "cache"), files: noSystemPip(), env: map[string]string{
		"PATH":                "/usr/bin",
		"NODE_EXTRA_CA_CERTS": ca,
		"SSL_CERT_DIR":        "/etc/ssl/certs",
		"GIT_SSL_CAPATH":      filepath.Join(root, "corp"),
		"REQUESTS_CA_BUNDLE":  filepath.Join(root, "corp", "missing.pem"),
		"CURL_CA_BUNDLE":      "corp/ca.pem",
		"GIT_SSL_CAINFO":      sshCA,
		"PIP_CERT":            ca,
	}}
	strict, _ := PresetByName("strict")
	p, rep, err := (&Policy{Preset: strict}).SandboxPolicy(filepath.Join(root, "ws"), SandboxSettings{Toolchains: []string{"none"}, Env: []Grant{{"PIP_CERT=/mine.pem", "flag"}}}, h)
	if err != nil {
		t.Fatal(err)
	}
	copied := envValue(p.Env, "NODE_EXTRA_CA_CERTS")
	if copied == "" || copied == ca || !slices.Contains(p.ReadOnlyPaths, copied) {
		t.Fatalf("NODE_EXTRA_CA_CERTS=%q, grants %v: want a granted copy", copied, p.ReadOnlyPaths)
	}
	if b, err := os.ReadFile(copied); err != nil || !bytes.Equal(b, certPEM()) {
		t.Errorf("the copy holds %q (%v), want the certificate alone", b, err)
	}
	if got := envValue(p.Env, "SSL_CERT_DIR"); got != "/etc/ssl/certs" {
		t.Errorf("SSL_CERT_DIR=%q: the system's directory is passed as it is", got)
	}
	if got := envValue(p.Env, "PIP_CERT"); got != "/mine.pem" {
		t.Errorf("PIP_CERT=%q: the person's --env wins", got)
	}
	for _, name := range []string{"REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "GIT_SSL_CAPATH"} {
		if got := envValue(p.Env, name); got != "" {
			t.Errorf("%s passed: %q", name, got)
		}
	}
	for _, r := range p.ReadOnlyPaths {
		if r == ca || r == sshCA || r == filepath.Join(root, "corp") {
			t.Errorf("granted %s itself", r)
		}
	}
	for _, name := range []string{"GIT_SSL_CAINFO", "GIT_SSL_CAPATH", "CURL_CA_BUNDLE"} {
		if !slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, "not passing "+name) }) {
			t.Errorf("no note says why %s was not passed: %v", name, rep.Notes)
		}
	}
}

// TestCertificatesOf: what is copied is the X.509 certificates of the
// file and nothing else; a file without one, a FIFO, a link and an
// oversized file give none.
func TestCertificatesOf(t *testing.T) {
	dir := t.TempDir()
	secret := []byte("//registry.example/:_authToken=SECRET\n")
	key := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: []byte("SECRET-KEY")})
	fake := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("SECRET in a certificate block")})
	for _, tc := range []struct {
		name  string
		body  []byte
		certs int
	}{
		{"a bundle with titles", bundle(), 1},
		{"two, CRLF", bytes.ReplaceAll(append(certPEM(), certPEM()...), []byte("\n"), []byte("\r\n")), 2},
		{"an npmrc with an inline ca (mid-line: no PEM block)", append(append(slices.Clone(secret), "ca=\""...), certPEM()...), 0},
		{"a token, then a certificate", append(slices.Clone(secret), certPEM()...), 1},
		{"a key beside", append(slices.Clone(key), certPEM()...), 1},
		{"bytes that are no certificate", fake, 0},
		{"nothing", secret, 0},
	} {
		f := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
		if err := os.WriteFile(f, tc.body, 0o644); err != nil {
			t.Fatal(err)
		}
		out, why := certificatesOf(f)
		if got := bytes.Count(out, []byte("-----BEGIN CERTIFICATE-----")); got != tc.certs || (tc.certs == 0) != (why != "") {
			t.Errorf("%s: %d certificates (%q), want %d", tc.name, got, why, tc.certs)
		}
		if bytes.Contains(out, []byte("SECRET")) || bytes.Contains(out, []byte("PRIVATE")) || bytes.Contains(out, []byte("Issuer")) {
			t.Errorf("%s: the copy holds more than certificates:\n%s", tc.name, out)
		}
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(filepath.Join(dir, "a-bundle-with-titles"), link); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, append(bytes.Repeat([]byte("#\n"), maxTrustStore/2), certPEM()...), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{fifo, link, big, dir} {
		if out, why := certificatesOf(f); out != nil || why == "" {
			t.Errorf("%s gave certificates (it blocks, or is read through a link, or is too large, or a directory)", f)
		}
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
			p, rep, err := (&Policy{Preset: strict}).SandboxPolicy(filepath.Join(root, "ws"), SandboxSettings{Toolchains: []string{"none"}}, h)
			if err != nil {
				t.Fatal(err)
			}
			got := envValue(p.Env, "npm_config_cafile")
			if (got != "") != tc.want {
				t.Fatalf("npm_config_cafile = %q, want one: %v", got, tc.want)
			}
			if tc.want {
				if !slices.ContainsFunc(rep.Env, func(g Grant) bool { return g.Value == "npm_config_cafile="+got }) || !slices.Contains(p.ReadOnlyPaths, got) {
					t.Errorf("npm_config_cafile=%s is not granted: %v", got, p.ReadOnlyPaths)
				}
				if strings.Contains(tc.name, "user") && !slices.ContainsFunc(rep.Env, func(g Grant) bool { return strings.HasPrefix(g.Value, "npm_config_cafile=") }) {
					t.Errorf("no report line")
				}
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
			p, _, err := (&Policy{Preset: strict}).SandboxPolicy(filepath.Join(root, "ws"), SandboxSettings{Toolchains: []string{"none"}}, h)
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
// through a link, is not read (an agent could make it name any file);
// a certificate bundle that is a link to a credential file is refused;
// and one whose original an agent may change is copied, so the sandbox
// reads the certificates checked, never the original.
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
	p, _, err := (&Policy{Preset: strict}).SandboxPolicy(ws, SandboxSettings{Toolchains: []string{"none"}}, h)
	if err != nil {
		t.Fatal(err)
	}
	if got := envValue(p.Env, "PIP_CERT"); got != "" {
		t.Errorf("PIP_CERT=%q from a pip.conf in the workspace", got)
	}
	if got := envValue(p.Env, "SSL_CERT_FILE"); got != "" {
		t.Errorf("SSL_CERT_FILE=%q through a link to ~/.npmrc", got)
	}
	got := envValue(p.Env, "NODE_EXTRA_CA_CERTS")
	if got == "" || got == inWS || strings.HasPrefix(got, realWS+"/") {
		t.Errorf("NODE_EXTRA_CA_CERTS=%q: a bundle in the workspace is passed as a copy outside it", got)
	}
	for _, r := range p.ReadOnlyPaths {
		if r == npmrc || r == toNpmrc || r == inWS {
			t.Errorf("granted %s", r)
		}
	}
}
