package checkpoint

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Two names that differ only in bytes that are not UTF-8, and a valid
// non-ASCII one.
const (
	nameFF   = "a\xff"
	nameFE   = "a\xfe"
	nameUTF8 = "é-ü.txt"
)

// TestPlainJSONMergesInvalidNames is the attack without the fix: the
// session log used to store names as JSON strings, and encoding/json
// writes both names as "a\ufffd" — one of two pre-images is lost, and a
// rewind creates a name that never existed.
func TestPlainJSONMergesInvalidNames(t *testing.T) {
	a, _ := json.Marshal(nameFF)
	b, _ := json.Marshal(nameFE)
	if !bytes.Equal(a, b) {
		t.Skipf("encoding/json no longer merges invalid names (%s, %s): the exact encoding is still needed for older readers", a, b)
	}
	var back string
	json.Unmarshal(a, &back)
	if back == nameFF || back == nameFE {
		t.Fatalf("plain JSON round-tripped %q", back)
	}
	t.Logf("plain JSON: %q and %q are both logged as %s (read back as %q)", nameFF, nameFE, a, back)
}

// TestExactNameRoundTrips: every name comes back byte for byte, valid
// UTF-8 names stay plain strings (readable, as in version 1 logs), and a
// valid name that looks like the object form is still a string.
func TestExactNameRoundTrips(t *testing.T) {
	names := []string{nameFF, nameFE, nameUTF8, "plain.txt", `{"b64":"YQ=="}`, "d\x80/x\xc3", "\xed\xa0\x80", "tab\there", strings.Repeat("\xff", 300)}
	seen := map[string]string{}
	for _, n := range names {
		b, err := json.Marshal(exactName(n))
		if err != nil {
			t.Fatal(err)
		}
		if prev, dup := seen[string(b)]; dup {
			t.Fatalf("%q and %q encode alike: %s", prev, n, b)
		}
		seen[string(b)] = n
		var back exactName
		if err := json.Unmarshal(b, &back); err != nil || string(back) != n {
			t.Fatalf("%q -> %s -> %q, %v", n, b, back, err)
		}
		if plain, _ := json.Marshal(n); (b[0] == '"') != bytes.Equal(b, plain) {
			t.Fatalf("%q: %s, plain JSON %s: valid names must stay plain strings", n, b, plain)
		}
	}
	for _, bad := range []string{`{}`, `{"b64":"%%%"}`, `{"b64":1}`} {
		var n exactName
		if err := json.Unmarshal([]byte(bad), &n); err == nil {
			t.Errorf("%s decoded as %q", bad, n)
		}
	}
}

// TestInvalidNamesRewindByteExact: files whose names differ only in
// invalid bytes, a valid non-ASCII name, a directory and a symlink target
// that are not UTF-8 are created, modified and deleted over several
// checkpoints; the log is read back from disk (the recorder is closed)
// and the session is rewound to every checkpoint, newest first, then
// redone: each time the tree must be the copy taken then, names and
// contents byte for byte.
func TestInvalidNamesRewindByteExact(t *testing.T) {
	e := newEnv(t, nil)
	e.plain(nameUTF8, "utf8 v0\n")
	trees := []map[string]node{snapshotTree(t, e.ws)}
	steps := []func(){
		func() { e.write(nameFF, "ff v1\n"); e.write(nameFE, "fe v1\n") },
		func() { e.write(nameFF, "ff v2\n"); e.write(nameUTF8, "utf8 v2\n"); e.write("d\x80/x\xc3", "deep\n") },
		func() {
			e.record(nameFE, "link\xfa")
			e.must(os.Remove(e.abs(nameFE)))
			e.must(os.Symlink("target\xfb", e.abs("link\xfa")))
		},
		func() {
			e.record(nameFF, nameFE)
			e.must(os.Rename(e.abs(nameFF), e.abs(nameFE)))
			e.record("d\x80")
			e.must(os.RemoveAll(e.abs("d\x80")))
		},
	}
	var numbers []int
	for i, step := range steps {
		step()
		cp := e.seal("step")
		if cp == nil {
			t.Fatalf("step %d sealed nothing", i)
		}
		numbers = append(numbers, cp.Number)
		trees = append(trees, snapshotTree(t, e.ws))
	}
	if _, ok := trees[1][nameFF]; !ok || len(trees[1]) != 3 {
		t.Fatalf("setup: %v", trees[1])
	}
	// Every name is listed as it is.
	cps, err := List(e.state, "s1")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, f := range cps[1].Files {
		listed = append(listed, f.Path)
	}
	if strings.Join(listed, "|") != nameFE+"|"+nameFF {
		t.Fatalf("checkpoint 1 lists %q", listed)
	}
	e.must(e.rec.Close())

	for k := len(numbers) - 1; k >= 0; k-- {
		if _, err := Rewind(e.state, "s1", numbers[k]-1, RewindOptions{}); err != nil {
			t.Fatalf("rewind to %d: %v", numbers[k]-1, err)
		}
		assertTree(t, e.ws, trees[k], "rewind to the state before step "+string(rune('1'+k)))
	}
	// The dry run of the redo names the exact bytes (the CLI escapes them
	// for a terminal).
	redo := numbers[len(numbers)-1]
	rep, err := Rewind(e.state, "s1", redo, RewindOptions{DryRun: true})
	if err != nil || !strings.Contains(rep.Diff, "+++ b/"+nameFE+"\n@@ -0,0 +1 @@\n+ff v2\n") || !strings.Contains(rep.Diff, "+target\xfb\n") {
		t.Fatalf("dry run of the redo: %v\n%q", err, rep.Diff)
	}
	if _, err := Rewind(e.state, "s1", redo, RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	assertTree(t, e.ws, trees[len(steps)], "redo")
}

// TestVersion1LogStillLoads: a log written before exact names (format
// version 1, names as plain strings) is read and rewound as before.
func TestVersion1LogStillLoads(t *testing.T) {
	e := newEnv(t, nil)
	e.plain("f", "v0\n")
	want := snapshotTree(t, e.ws)
	e.write("f", "v1\n")
	e.seal("w")
	e.must(e.rec.Close())
	lp := logPath(e.state, "s1")
	b, err := os.ReadFile(lp)
	if err != nil {
		t.Fatal(err)
	}
	v1 := bytes.Replace(b, []byte(`"v":2,`), []byte(`"v":1,`), 1)
	if bytes.Equal(v1, b) {
		t.Fatalf("no version 2 header in %s", b)
	}
	e.must(os.WriteFile(lp, v1, 0o600))
	if _, err := Rewind(e.state, "s1", 0, RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	assertTree(t, e.ws, want, "rewind of a version 1 log")
	if _, err := os.Stat(filepath.Join(e.ws, "f")); err != nil {
		t.Fatal(err)
	}
}

// TestPublicJSONKeepsNames: the listing's and the rewind report's JSON
// keep the two names apart, and valid names encode as plain strings, in
// the same place as before.
func TestPublicJSONKeepsNames(t *testing.T) {
	cp := Checkpoint{Files: []FileChange{{Path: nameFF, Change: "created"}, {Path: nameFE, Change: "created"}, {Path: nameUTF8, Change: "modified"}},
		External: []ExternalChange{{Path: nameFF, Now: KindFile}}, Ignored: []IgnoredPath{{Path: nameFE, Reason: "why"}}}
	rep := RewindReport{Changes: []Change{{Path: nameFF, Action: "create"}}, Conflicts: []Conflict{{Path: nameFE, Reason: "r"}}}
	for _, v := range []any{&cp, &rep} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(`\ufffd`)) {
			t.Fatalf("a name was merged: %s", b)
		}
		if _, isCP := v.(*Checkpoint); isCP && !bytes.Contains(b, []byte(`{"path":"`+nameUTF8+`","change":"modified"`)) {
			t.Fatalf("a valid name is not a plain string in its place: %s", b)
		}
		back := reflectNew(v)
		if err := json.Unmarshal(b, back); err != nil {
			t.Fatal(err)
		}
		b2, _ := json.Marshal(back)
		if !bytes.Equal(b, b2) {
			t.Fatalf("round trip:\n%s\n%s", b, b2)
		}
	}
	var back Checkpoint
	b, _ := json.Marshal(&cp)
	json.Unmarshal(b, &back)
	if back.Files[0].Path != nameFF || back.Files[1].Path != nameFE || back.External[0].Path != nameFF || back.Ignored[0].Path != nameFE {
		t.Fatalf("decoded %+v", back)
	}
}

func reflectNew(v any) any {
	switch v.(type) {
	case *Checkpoint:
		return new(Checkpoint)
	case *RewindReport:
		return new(RewindReport)
	}
	panic("unexpected type")
}
