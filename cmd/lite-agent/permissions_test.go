package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// streamEvents parses stream-json output.
func streamEvents(t *testing.T, out string) []map[string]any {
	t.Helper()
	var evs []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("not JSON: %q", sc.Text())
		}
		evs = append(evs, ev)
	}
	return evs
}

func byID(evs []map[string]any, typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, ev := range evs {
		if ev["type"] == typ {
			out[ev["id"].(string)] = ev
		}
	}
	return out
}

func contentOf(ev map[string]any) string {
	var s string
	for _, c := range ev["content"].([]any) {
		s += c.(map[string]any)["text"].(string)
	}
	return s
}

func bashCall(id, cmd string) string {
	b, _ := json.Marshal(map[string]any{"id": id, "name": "bash", "input": map[string]string{"command": cmd}})
	return string(b)
}

// isolate points the user's policy file and the trust store of workspace
// policy files at empty directories, so that the machine's own never leak
// into a test (nor a test's records into the machine's store).
func isolate(t *testing.T) string {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	return dir
}

// TestRunWithPolicyFile is the end-to-end case of the permission issue: a
// policy file allows one command, denies another; the allowed one runs,
// the denied one is refused with the reason visible to the model, and a
// compound command that hides a denied part behind an allowed one is
// refused too.
func TestRunWithPolicyFile(t *testing.T) {
	e := newCLIEnv(t)
	cfg := isolate(t)
	// The user's file allows (strict does not let a workspace loosen);
	// the workspace's file denies.
	os.MkdirAll(filepath.Join(cfg, "lite-agent"), 0o755)
	os.WriteFile(filepath.Join(cfg, "lite-agent", "policy.toml"), []byte("[permissions]\nallow = [\"bash(mkdir:*)\", \"bash(git status)\"]\n"), 0o644)
	os.MkdirAll(filepath.Join(e.ws, ".lite-agent"), 0o755)
	wsPolicy := filepath.Join(e.ws, ".lite-agent", "policy.toml")
	os.WriteFile(wsPolicy, []byte("# no network tools, whatever the model says\n[permissions]\ndeny = [\n  \"bash(curl:*)\",\n  \"bash(wget:*)\",\n]\n"), 0o644)
	script := e.script(`{"turns": [
	  {"tool_calls": [` + strings.Join([]string{
		bashCall("ok", "mkdir made-by-agent"),
		bashCall("denied", "curl http://127.0.0.1:9/exfiltrate"),
		bashCall("hidden", "mkdir decoy && curl http://127.0.0.1:9/x"),
		bashCall("subst", "mkdir $(curl http://127.0.0.1:9/name)"),
		bashCall("opaque", "mkdir other; $(echo wget) http://127.0.0.1:9/"),
		bashCall("unlisted", "touch f"),
	}, ",") + `]},
	  {"text": "done"}]}`)
	code, out, errOut := e.run("", "run", "--script", script, "--output-format", "stream-json", "go")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	evs := streamEvents(t, out)
	perm, res := byID(evs, "permission"), byID(evs, "tool_result")
	check := func(id, decision, by, modelSees string) {
		t.Helper()
		p, r := perm[id], res[id]
		if p == nil || r == nil {
			t.Fatalf("%s: permission %v result %v", id, p, r)
		}
		if p["decision"] != decision || p["by"] != by {
			t.Errorf("%s: permission event %v, want %s by %s", id, p, decision, by)
		}
		if got := contentOf(r); !strings.Contains(got, modelSees) {
			t.Errorf("%s: the model saw %q, want %q", id, got, modelSees)
		}
		if (decision == "deny") != (r["is_error"] == true) {
			t.Errorf("%s: is_error %v", id, r["is_error"])
		}
	}
	check("ok", "allow", "rule", "(no output)")
	check("denied", "deny", "rule", `deny rule "bash(curl:*)"`)
	check("hidden", "deny", "rule", `matches "curl http://127.0.0.1:9/x"`)
	check("subst", "deny", "rule", `deny rule "bash(curl:*)"`)
	check("opaque", "deny", "headless", "cannot prove")
	check("unlisted", "deny", "headless", "needs approval")
	if p := perm["denied"]; p["rule"] != "bash(curl:*)" || p["rule_source"] != wsPolicy+":4" {
		t.Errorf("the denial does not name the rule and its line: %v", p)
	}
	if p := perm["ok"]; !strings.HasSuffix(p["rule_source"].(string), filepath.Join("lite-agent", "policy.toml")+":2") {
		t.Errorf("the allow does not name the user's file: %v", p)
	}
	if fi, err := os.Stat(filepath.Join(e.ws, "made-by-agent")); err != nil || !fi.IsDir() {
		t.Errorf("the allowed command did not run: %v", err)
	}
	for _, f := range []string{"decoy", "other", "f"} {
		if _, err := os.Stat(filepath.Join(e.ws, f)); err == nil {
			t.Errorf("%s exists: a refused command ran", f)
		}
	}
	// The transcript — what the model is sent — carries the reason.
	var sid string
	for _, ev := range evs {
		if ev["type"] == "session_start" {
			sid = ev["session_id"].(string)
		}
	}
	tr, err := os.ReadFile(filepath.Join(e.state, "sessions", sid+".jsonl"))
	if err != nil || !strings.Contains(string(tr), `permission denied: deny rule \"bash(curl:*)\"`) {
		t.Errorf("transcript lacks the denial reason (%v)", err)
	}
}

func TestRunPolicyFileErrors(t *testing.T) {
	e := newCLIEnv(t)
	isolate(t)
	os.MkdirAll(filepath.Join(e.ws, ".lite-agent"), 0o755)
	path := filepath.Join(e.ws, ".lite-agent", "policy.toml")
	script := e.script(`{"turns": [{"text": "ok"}]}`)
	for _, c := range []struct{ file, want string }{
		{"[permissions]\ndeny = [\"bash(curl:*\"]\n", path + ":2: permissions.deny: rule \"bash(curl:*\": the argument pattern must end with ')'"},
		{"[permissions]\nallow = [\"bash\"]\n", path + ":2: allow rule \"bash\": the strict preset does not let the workspace's policy file loosen"},
		{"[permisions]\n", path + ":1: unknown table [permisions]"},
		{"[[hooks]]\nevent = \"PreToolUse\"\n", path + ":1: the hook has no command"},
	} {
		os.WriteFile(path, []byte(c.file), 0o644)
		code, _, errOut := e.run("", "run", "--script", script, "go")
		if code != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("policy file %q: exit %d, stderr %q; want 1 and %q", c.file, code, errOut, c.want)
		}
	}
}

func TestRunPermissionFlags(t *testing.T) {
	e := newCLIEnv(t)
	isolate(t)
	write := e.script(`{"turns": [{"tool_calls": [{"id": "w", "name": "write_file", "input": {"path": "a.txt", "content": "x"}}]}, {"text": "done"}]}`)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--permission-mode", "yollo"}, 2, "unknown permission mode"},
		{[]string{"--permission-mode", "bypassPermissions"}, 2, "needs --dangerously-skip-permissions"},
		// yolo is bypassPermissions and needs the same opt-in.
		{[]string{"--permission-mode", "yolo"}, 2, "yolo needs --dangerously-skip-permissions"},
		{[]string{"--permission-mode", "yolo", "--dangerously-skip-permissions"}, 1, "strict preset does not allow bypassPermissions"},
		// A name that is no tool is an error naming the nearest one.
		{[]string{"--disallowed-tools", "Wirte"}, 1, `did you mean "write_file"?`},
		{[]string{"--tools", "read_file,WebSearch"}, 1, "a Claude Code tool lite-agent does not have"},
		{[]string{"--dangerously-skip-permissions", "--permission-mode", "plan"}, 2, "conflicts"},
		{[]string{"--preset", "lax"}, 2, "unknown preset"},
		{[]string{"--dangerously-skip-permissions"}, 1, "strict preset does not allow bypassPermissions"},
		{[]string{"--allowed-tools", "bash(git status"}, 2, "unclosed"},
		{[]string{"--allowed-tools", "get_weather(x)"}, 1, "takes no argument pattern"},
	} {
		args := append([]string{"run", "--script", write}, c.args...)
		code, _, errOut := e.run("", append(args, "go")...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errOut, c.code, c.want)
		}
	}
	run := func(args ...string) (map[string]any, string) {
		os.Remove(filepath.Join(e.ws, "a.txt"))
		code, out, errOut := e.run("", append(append([]string{"run", "--script", write, "--output-format", "stream-json"}, args...), "go")...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		p := byID(streamEvents(t, out), "permission")["w"]
		return p, contentOf(byID(streamEvents(t, out), "tool_result")["w"])
	}
	if p, _ := run("--preset", "standard", "--dangerously-skip-permissions"); p["decision"] != "allow" || p["by"] != "mode" || p["mode"] != "bypassPermissions" {
		t.Errorf("bypass: %v", p)
	}
	if p, _ := run("--preset", "permissive"); p["decision"] != "allow" || p["mode"] != "acceptEdits" {
		t.Errorf("permissive's default mode: %v", p)
	}
	if p, text := run("--permission-mode", "plan", "--allowed-tools", "write_file"); p["decision"] != "deny" || !strings.Contains(text, "plan mode") {
		t.Errorf("plan: %v %q", p, text)
	}
	if p, text := run("--permission-mode", "dontAsk"); p["decision"] != "deny" || !strings.Contains(text, "dontAsk") {
		t.Errorf("dontAsk: %v %q", p, text)
	}
	if p, _ := run("--allowed-tools", "write_file(a.txt),bash(git add a,b)"); p["decision"] != "allow" || p["rule"] != "write_file(a.txt)" {
		t.Errorf("--allowed-tools with rules: %v", p)
	}
	if p, _ := run("--allowed-tools", "write_file", "--disallowed-tools", "write_file(*.txt)"); p["decision"] != "deny" || p["rule_source"] != "DisallowedTools" {
		t.Errorf("--disallowed-tools beats --allowed-tools: %v", p)
	}
	// Claude Code's names: yolo, and a deny rule written Write(...).
	if p, _ := run("--preset", "standard", "--permission-mode", "yolo", "--dangerously-skip-permissions"); p["decision"] != "allow" || p["mode"] != "bypassPermissions" {
		t.Errorf("yolo: %v", p)
	}
	if p, _ := run("--preset", "standard", "--dangerously-skip-permissions", "--disallowed-tools", "Write(*.txt)"); p["decision"] != "deny" || p["rule"] != "Write(*.txt)" {
		t.Errorf("--disallowed-tools Write(*.txt) under bypass: %v", p)
	}
	if _, text := run("--preset", "standard", "--dangerously-skip-permissions", "--disallowed-tools", "Bash,Write,Edit"); !strings.Contains(text, `no tool named "write_file"`) {
		t.Errorf("--disallowed-tools Bash,Write,Edit does not hide write_file: %q", text)
	}
	// Text output shows a denial on stderr.
	code, _, errOut := e.run("", "run", "--script", write, "go")
	if code != 0 || !strings.Contains(errOut, "[denied write_file: ") {
		t.Errorf("text output: exit %d, stderr %q", code, errOut)
	}
}

// TestInteractivePrompt: in a terminal an ask becomes a prompt — allow
// once, allow always for this session, deny — showing the tool and input.
func TestInteractivePrompt(t *testing.T) {
	e := newCLIEnv(t)
	isolate(t)
	defer func(f func(io.Reader) bool) { isTerminal = f }(isTerminal)
	isTerminal = func(io.Reader) bool { return true }
	calls := []string{}
	for _, id := range []string{"once", "no", "always", "again", "eof"} {
		path := id + ".txt"
		if id == "again" {
			path = "always.txt"
		}
		calls = append(calls, `{"id": "`+id+`", "name": "write_file", "input": {"path": "`+path+`", "content": "x"}}`)
	}
	script := e.script(`{"turns": [{"tool_calls": [` + strings.Join(calls, ",") + `]}, {"text": "done"}]}`)
	// y, n, a — "again" is not asked (allowed by the session rule) — then
	// the input ends, which denies.
	code, out, errOut := e.run("y\nn\na\n", "run", "--script", script, "--output-format", "stream-json", "go")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	perm := byID(streamEvents(t, out), "permission")
	want := map[string][2]string{"once": {"allow", "can_use_tool"}, "no": {"deny", "can_use_tool"}, "always": {"allow", "can_use_tool"}, "again": {"allow", "rule"}, "eof": {"deny", "can_use_tool"}}
	for id, w := range want {
		if perm[id]["decision"] != w[0] || perm[id]["by"] != w[1] {
			t.Errorf("%s: %v, want %s by %s", id, perm[id], w[0], w[1])
		}
	}
	if perm["again"]["rule"] != "write_file(always.txt)" || perm["again"]["rule_source"] != "allowed for this session" {
		t.Errorf("again: %v", perm["again"])
	}
	if n := strings.Count(errOut, "write_file wants to run"); n != 4 {
		t.Errorf("%d prompts, want 4:\n%s", n, errOut)
	}
	for _, want := range []string{`{"content":"x","path":"once.txt"}`, "[a] allow always for this session (write_file(always.txt))", "[n] deny"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, errOut)
		}
	}
	for f, exists := range map[string]bool{"once.txt": true, "no.txt": false, "always.txt": true, "eof.txt": false} {
		if _, err := os.Stat(filepath.Join(e.ws, f)); (err == nil) != exists {
			t.Errorf("%s exists = %v, want %v", f, err == nil, exists)
		}
	}
}

func TestPolicyShow(t *testing.T) {
	isolate(t)
	var out, errb strings.Builder
	if code := runCLI([]string{"policy", "show", "strict"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"preset strict", "bypassPermissions      refused", "network at most loopback", "deny  write_file(.git/**)", "may only tighten"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("policy show strict lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := runCLI([]string{"policy", "show", "standard", "--json"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatal(errb.String())
	}
	var p struct {
		Name  string `json:"name"`
		Mode  string `json:"permission_mode"`
		Rules []struct{ Behavior, Rule string }
	}
	if err := json.Unmarshal([]byte(out.String()), &p); err != nil || p.Name != "standard" || p.Mode != "default" || len(p.Rules) == 0 {
		t.Errorf("JSON: %v %+v", err, p)
	}
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, ".lite-agent"), 0o755)
	os.WriteFile(filepath.Join(ws, ".lite-agent/policy.toml"), []byte("[permissions]\ndeny = [\"bash(curl:*)\"]\n\n[[hooks]]\nevent = \"PreToolUse\"\nmatcher = \"bash\"\ncommand = \"true\"\n"), 0o644)
	out.Reset()
	if code := runCLI([]string{"policy", "show", "--workspace", ws}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatal(errb.String())
	}
	for _, want := range []string{"with the policy files", "bash(curl:*)", "policy.toml:2", "PreToolUse bash: true", "deny/ask only"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("policy show --workspace lacks %q:\n%s", want, out.String())
		}
	}
	if code := runCLI([]string{"policy", "show", "lax"}, strings.NewReader(""), &out, &errb); code != 2 {
		t.Errorf("unknown preset: exit %d", code)
	}
	if code := runCLI([]string{"policy"}, strings.NewReader(""), &out, &errb); code != 2 {
		t.Errorf("policy without show: exit %d", code)
	}
}

func TestRuleList(t *testing.T) {
	got, err := ruleList("--x", " read_file, bash(git add a,b) ,,mcp__x__*")
	if err != nil || strings.Join(got, "|") != "read_file|bash(git add a,b)|mcp__x__*" {
		t.Errorf("ruleList = %q, %v", got, err)
	}
	if _, err := ruleList("--x", "bash(a"); err == nil {
		t.Error("an unclosed parenthesis was accepted")
	}
}
