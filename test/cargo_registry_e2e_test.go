package test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cargoRegistry starts a sparse cargo registry on loopback serving one
// crate, tinycrate 1.0.0 (answer() returns 42), and returns it with the
// cargo configuration a person would write for it (a source replacement
// of crates-io).
func cargoRegistry(t *testing.T) (*mirror, string) {
	t.Helper()
	crate := tarGz(t, map[string]string{
		"tinycrate-1.0.0/Cargo.toml": "[package]\nname = \"tinycrate\"\nversion = \"1.0.0\"\nedition = \"2021\"\n",
		"tinycrate-1.0.0/src/lib.rs": "pub fn answer() -> u32 { 42 }\n",
	})
	sum := sha256.Sum256(crate)
	m := startMirror(t, map[string][]byte{"/api/tinycrate-1.0.0.crate": crate})
	m.set("/index/config.json", fmt.Appendf(nil, `{"dl": "http://%s/api/{crate}-{version}.crate"}`, m.addr()))
	m.set("/index/ti/ny/tinycrate", fmt.Appendf(nil, `{"name":"tinycrate","vers":"1.0.0","deps":[],"cksum":"%s","features":{},"yanked":false}`+"\n", hex.EncodeToString(sum[:])))
	return m, "[source.crates-io]\nreplace-with = \"mirror\"\n\n[source.mirror]\nregistry = \"sparse+http://" + m.addr() + "/index/\"\n"
}

// TestCargoCrateThroughGrantAndEditedSourceRemoved: cargo downloads a
// crate from the person's registry mirror (their ~/.cargo/config.toml,
// carried into the sandbox's CARGO_HOME) once --allow-domain grants it —
// without the grant it fails at once (a loopback mirror is reached
// directly, so the refusal is the kernel's EPERM) — and builds it.
// Then issue 26's class 2 for cargo: the agent edits the extracted crate
// source in the workspace's cargo cache (chmod first) and a clean build
// in the same session compiles the edit; the next session, offline,
// compiles the crate as the .crate (checked against Cargo.lock) has it:
// lite-agent compared the extracted directory with its .crate before the
// session and removed it, and cargo extracted it again.
func TestCargoCrateThroughGrantAndEditedSourceRemoved(t *testing.T) {
	need(t, "Rust", "cargo", "rustc")
	m, config := cargoRegistry(t)
	u := newFakeUser(t)
	if home, err := os.UserHomeDir(); err == nil {
		if _, err := os.Stat(filepath.Join(home, ".rustup")); err == nil {
			u.env = append(u.env, "RUSTUP_HOME="+filepath.Join(home, ".rustup"))
		}
	}
	writeFile(t, filepath.Join(u.home, ".cargo", "config.toml"), config)
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "Cargo.toml"), "[package]\nname = \"rw\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\ntinycrate = \"1\"\n")
	writeFile(t, filepath.Join(ws, "src", "main.rs"), "fn main() { println!(\"answer={}\", tinycrate::answer()); }\n")

	res, _ := u.bashSession(t, ws, nil, timedCmd("cargo run -q"))
	m.refusedAtOnce(t, "cargo run, no grant", res[0].text, "answer=", 5*time.Second)
	src := `$(ls -d $CARGO_HOME/registry/src/*/tinycrate-1.0.0)/src/lib.rs`
	res, _ = u.bashSession(t, ws, []string{"--allow-domain", m.addr()}, "cargo run -q",
		"chmod u+w "+src+" && sed -i s/42/666/ "+src+" && echo planted", "cargo clean -q && cargo run -q")
	if !strings.Contains(res[0].text, "answer=42") || !m.served("/api/tinycrate-1.0.0.crate") {
		t.Fatalf("cargo run with the registry granted:\n%s", res[0].text)
	}
	if !strings.Contains(res[1].text, "planted") || !strings.Contains(res[2].text, "answer=666") {
		t.Fatalf("the attack is not shown (edited and compiled in its own session):\n%s\n%s", res[1].text, res[2].text)
	}
	res, _ = u.bashSession(t, ws, nil, "cargo clean -q && cargo run -q")
	if !strings.Contains(res[0].text, "answer=42") {
		t.Fatalf("the next session compiled the edited crate, or did not build:\n%s", res[0].text)
	}
}
