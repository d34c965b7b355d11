package test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/lite-agent/lite-agent/sandbox"
)

// This file is the machinery of the escape suite (escape_test.go): the
// fixture each run gets, the three ways a scenario runs (unconfined, through
// `lite-agent sandbox run`, through the bash tool of `lite-agent run`), and
// the things the attacks aim at, all owned by the test: victim processes,
// a loopback listener, unix sockets, a host in a network namespace.

// sysPATH is the PATH every run gets: system directories only, so that
// python3 is /usr/bin/python3 and not a shim under the tester's home.
const sysPATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// nobody is the unprivileged user of TestEscapeUnprivileged.
const nobody = 65534

// marker words: every script prints ranMarker first (so a blocked attack is
// told from a command that never ran) and successMarker when the operation
// it tried worked. Scripts spell the latter "SUCC""EEDED" so that an error
// message quoting the script never fakes a success.
const (
	ranMarker     = "RAN"
	successMarker = "SUCCEEDED"
	prelude       = "echo RAN\nok() { echo \"SUCC\"\"EEDED: $*\"; }\n"
)

type mode string

const (
	unconfined mode = "unconfined"
	sandboxRun mode = "sandbox run"
	bashTool   mode = "bash tool"
)

// viaCLI reports whether m is `lite-agent sandbox run`.
func (m mode) viaCLI() bool { return m == sandboxRun }

// via says which confined paths a scenario runs through.
type via int

const (
	viaSandboxRun via = 1 << iota
	viaBashTool
	viaBoth = viaSandboxRun | viaBashTool
)

func (v via) modes() []mode {
	var ms []mode
	if v&viaSandboxRun != 0 {
		ms = append(ms, sandboxRun)
	}
	if v&viaBashTool != 0 {
		ms = append(ms, bashTool)
	}
	return ms
}

// baseline says whether the attack is also run unconfined, to prove that
// the test would notice it working.
type baseline int

const (
	noBaseline   baseline = iota // a bomb, or nothing to compare with
	baseAny                      // works unconfined, as root and as nobody
	baseRoot                     // works unconfined as root only
	baseOptional                 // may not work unconfined on every kernel (x32): logged
)

// needs are what a scenario requires of the machine.
type needs int

const (
	needEscapeTool needs = 1 << iota // the C program, built with cc
	needNetns                        // root, ip, nsenter: a test host in a netns
	needIPv6Netns                    // the netns host has IPv6 addresses
	needLoopback6                    // ::1 works here
)

// scenario is one attack (blocked unless works) or one piece of
// functionality (works) run through the sandbox.
type scenario struct {
	name string
	// script runs with bash -c in the workspace, after the prelude;
	// {{NAME}} placeholders are filled from the fixture.
	script string
	// flags are extra `sandbox run` flags (placeholders allowed);
	// runFlags are extra `run` flags of the bash-tool runs.
	flags    []string
	runFlags []string
	via      via
	needs    needs
	// setup prepares the fixture of one run (victims, listeners).
	setup func(t *testing.T, fx *fixture)
	// stdin is given to unconfined and sandbox-run runs; pty gives them
	// a pseudo-terminal instead.
	stdin string
	pty   bool
	// timeoutMS is the bash tool's timeout_ms (default 30000).
	timeoutMS int

	// Attacks: the same script run unconfined must succeed (base), and
	// confined it must not: no success marker, no secret in the output,
	// and no evidence from escaped (a changed file, a token a listener
	// received, a process that outlived the sandbox).
	base       baseline
	baseScript string // the unconfined script when it differs
	escaped    func(fx *fixture) string

	// Functionality: works is true, the command must run and print want.
	works    bool
	want     []string
	wantCode int // the exit code (bash tool: "exit code N" when not 0)

	// check makes extra assertions on a confined run.
	check func(t *testing.T, fx *fixture, r *result)
	// unpriv: part of the representative subset run as nobody.
	unpriv bool
}

// suite holds what all scenarios of one top-level test share.
type suite struct {
	bin    string // the lite-agent binary this suite runs
	esc    string // the compiled escape tool; "" when it could not be built
	escErr string
	unpriv bool // run everything as nobody through setpriv

	lo       *tokenListener // TCP and UDP on 127.0.0.1 (and ::1 when lo6)
	lo6      bool
	unixOut  *tokenListener // a pathname unix socket outside any workspace
	abstract *tokenListener // an abstract unix socket
	net      *netHost       // nil when netErr says why
	netErr   string
}

func newSuite(t *testing.T, unpriv bool) *suite {
	t.Helper()
	s := &suite{bin: binary, unpriv: unpriv}
	if unpriv {
		// nobody must be able to reach and run the binary: a copy in a
		// world-readable directory (the build directory is 0700).
		dir := s.tempDir(t)
		s.bin = filepath.Join(dir, "lite-agent")
		copyFile(t, binary, s.bin, 0o755)
	}
	if cc, err := exec.LookPath("cc"); err != nil {
		s.escErr = "cc is not installed, so the C attack program could not be built"
	} else {
		out := filepath.Join(t.TempDir(), "escape")
		b, err := exec.Command(cc, "-O1", "-Wall", "-o", out, "testdata/escape/escape.c").CombinedOutput()
		if err != nil {
			t.Fatalf("building testdata/escape/escape.c: %v\n%s", err, b)
		}
		s.esc = out
	}

	s.lo = listenTokens(t, "tcp", "127.0.0.1:0")
	port := s.lo.port()
	s.lo.listenUDP(t, fmt.Sprintf("127.0.0.1:%d", port))
	if l, err := net.Listen("tcp", fmt.Sprintf("[::1]:%d", port)); err == nil {
		s.lo.serve(t, l)
		s.lo.listenUDP(t, fmt.Sprintf("[::1]:%d", port))
		s.lo6 = true
	}
	sockDir := s.tempDir(t)
	s.unixOut = listenTokens(t, "unix", filepath.Join(sockDir, "agent.sock"))
	os.Chmod(filepath.Join(sockDir, "agent.sock"), 0o777)
	s.abstract = listenTokens(t, "unix", "@lite-agent-escape-"+randHex(8))

	s.net, s.netErr = setupNetHost(t)
	return s
}

// tempDir is a directory removed after the test; nobody can traverse it
// when the suite runs unprivileged (t.TempDir's are 0700).
func (s *suite) tempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "lite-agent-escape-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func (s *suite) missing(n needs) string {
	switch {
	case n&needEscapeTool != 0 && s.esc == "":
		return s.escErr
	case n&(needNetns|needIPv6Netns) != 0 && s.net == nil:
		return s.netErr
	case n&needIPv6Netns != 0 && s.net.priv6 == "":
		return "IPv6 could not be set up on the test's veth pair"
	case n&needLoopback6 != 0 && !s.lo6:
		return "::1 is not available on this machine's loopback"
	}
	return ""
}

// fixture is the world of one run: a workspace and, outside it, a fake
// home with a fake SSH key and a directory of files the test owns.
type fixture struct {
	s                   *suite
	mode                mode // the run this fixture is for
	root, ws, home, out string
	agent               string // state and script of the bash-tool run
	keyFile, key        string // the fake private key and its secret line
	token               string // what network attempts send
	secrets             []string
	vars                map[string]string
	env                 []string
	stdin               *os.File // a pty slave, for scenarios with pty
	victim              *victim
	sampler             *procSampler
}

func (s *suite) newFixture(t *testing.T) *fixture {
	t.Helper()
	root := s.tempDir(t)
	fx := &fixture{
		s: s, root: root,
		ws: filepath.Join(root, "ws"), home: filepath.Join(root, "home"),
		out: filepath.Join(root, "out"), agent: filepath.Join(root, "agent"),
		key: "FAKE-SSH-KEY-" + randHex(16), token: "tok-" + randHex(8),
	}
	fx.keyFile = filepath.Join(fx.home, ".ssh", "id_rsa")
	for _, d := range []string{fx.ws, fx.out, fx.agent, filepath.Join(fx.home, ".ssh")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(fx.home, 0o700)
	os.Chmod(filepath.Join(fx.home, ".ssh"), 0o700)
	writeMode(t, fx.keyFile, "-----BEGIN OPENSSH PRIVATE KEY-----\n"+fx.key+"\n-----END OPENSSH PRIVATE KEY-----\n", 0o600)
	writeMode(t, filepath.Join(fx.home, ".bashrc"), "# original bashrc\n", 0o644)
	writeMode(t, filepath.Join(fx.out, "victim.txt"), "original\n", 0o644)
	writeMode(t, filepath.Join(fx.out, "secret.txt"), fx.key+"\n", 0o600)
	// What a hostile repository could ship: symlinks to the outside.
	for link, target := range map[string]string{"evil-link": fx.keyFile, "victim-link": filepath.Join(fx.out, "victim.txt"), "home-link": fx.home} {
		if err := os.Symlink(target, filepath.Join(fx.ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	if s.esc != "" {
		copyFile(t, s.esc, filepath.Join(fx.ws, "escape"), 0o755)
	}
	copyFile(t, "testdata/escape/net.py", filepath.Join(fx.ws, "net.py"), 0o644)

	secretEnv := map[string]string{
		"FOO_API_KEY":           "sk-foo-" + randHex(12),
		"GITHUB_TOKEN":          "ghp_" + randHex(12),
		"AWS_SECRET_ACCESS_KEY": "aws-" + randHex(12),
		"DB_PASSWORD":           "pw-" + randHex(12),
		"ANTHROPIC_API_KEY":     "sk-ant-" + randHex(12),
	}
	fx.secrets = []string{fx.key}
	fx.env = []string{"PATH=" + sysPATH, "HOME=" + fx.home, "LANG=C.UTF-8", "TERM=xterm", "USER=tester"}
	for k, v := range secretEnv {
		fx.env = append(fx.env, k+"="+v)
		fx.secrets = append(fx.secrets, v)
	}

	fx.vars = map[string]string{
		"WS": fx.ws, "HOME": fx.home, "OUT": fx.out, "KEY": fx.keyFile,
		"ESC": filepath.Join(fx.ws, "escape"), "NET": "python3 " + filepath.Join(fx.ws, "net.py"),
		"TOKEN": fx.token, "NUM": strconv.Itoa(100000 + int(randUint32()%900000)),
		"LOPORT": strconv.Itoa(s.lo.port()), "UNIXOUT": s.unixOut.addr, "ABSTRACT": strings.TrimPrefix(s.abstract.addr, "@"),
	}
	if s.net != nil {
		fx.vars["NSPRIV"], fx.vars["NSPUB"], fx.vars["NSPORT"] = s.net.priv4, s.net.pub4, strconv.Itoa(s.net.port)
		fx.vars["NSPRIV6"], fx.vars["NSPUB6"] = s.net.priv6, s.net.pub6
	}
	t.Cleanup(func() { fx.cleanup() })
	return fx
}

// chown hands the fixture to nobody once setup has made everything.
func (fx *fixture) chown(t *testing.T) {
	if !fx.s.unpriv {
		return
	}
	err := filepath.Walk(fx.root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, nobody, nobody)
	})
	if err != nil {
		t.Fatal(err)
	}
}

var placeholder = regexp.MustCompile(`\{\{([A-Z0-9]+)\}\}`)

// expand fills the {{NAME}} placeholders of s. It may run on any
// goroutine, so a missing value is an Errorf.
func (fx *fixture) expand(t *testing.T, s string) string {
	return placeholder.ReplaceAllStringFunc(s, func(m string) string {
		v, ok := fx.vars[m[2:len(m)-2]]
		if !ok {
			t.Errorf("no value for %s", m)
		}
		return v
	})
}

// cleanup ends what a failed sandbox may have left behind: processes
// whose command line or working directory is in this fixture (the test
// started them all), and a tmpfs mounted on the workspace.
func (fx *fixture) cleanup() {
	syscall.Unmount(filepath.Join(fx.ws, "mnt"), syscall.MNT_DETACH)
	for _, pid := range processesMatching(func(cmdline, cwd string) bool {
		return strings.Contains(cmdline, fx.root) || strings.HasPrefix(cwd, fx.root)
	}) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// result is how one run ended.
type result struct {
	mode      mode
	code      int
	stdout    string
	stderr    string
	out       string // what the command printed (bash tool: the result text)
	all       string // everything the run printed, to search for secrets
	toolError bool
	noResult  bool // bash tool: the agent ended without a tool result
	dur       time.Duration
}

func (r *result) String() string {
	out := r.out
	if r.noResult {
		out = "(no tool result; the agent's stream:)\n" + r.stdout
	}
	return fmt.Sprintf("%s: exit %d after %v\n--- output:\n%s\n--- stderr:\n%s", r.mode, r.code, r.dur.Round(time.Millisecond), clip(out), clip(r.stderr))
}

func clip(s string) string {
	if len(s) > 3000 {
		return s[:1500] + "\n[...]\n" + s[len(s)-1500:]
	}
	return s
}

// failedClosed tells a sandbox that refused to start, with the reason,
// from a command that ran.
func (r *result) failedClosed() bool {
	switch r.mode {
	case sandboxRun:
		return r.code == 125
	case bashTool:
		// The kernel prepares the sandbox before the first turn: a
		// refusal ends the run without any tool result.
		return r.noResult || r.toolError && !ranLine.MatchString(r.out)
	}
	return false
}

// saysUnsupported: the refusal names the sandbox's "not enforceable"
// error, which says what is missing.
func (r *result) saysUnsupported() bool {
	return strings.Contains(r.stdout+r.stderr+r.out, sandbox.ErrUnsupported.Error())
}

// run runs the scenario once in mode m against fx.
func (s *suite) run(t *testing.T, fx *fixture, sc *scenario, m mode) *result {
	script := prelude + sc.script
	if m == unconfined && sc.baseScript != "" {
		script = prelude + sc.baseScript
	}
	script = fx.expand(t, script)
	var argv []string
	env := fx.env
	switch m {
	case unconfined:
		argv = []string{"bash", "-c", script}
	case sandboxRun:
		argv = []string{s.bin, "sandbox", "run", "--workspace", fx.ws}
		for _, f := range sc.flags {
			argv = append(argv, fx.expand(t, f))
		}
		argv = append(argv, "--", "bash", "-c", script)
	case bashTool:
		timeout := sc.timeoutMS
		if timeout == 0 {
			timeout = 30000
		}
		js, _ := json.Marshal(map[string]any{"turns": []any{
			map[string]any{"tool_calls": []any{map[string]any{"id": "attack", "name": "bash", "input": map[string]any{"command": script, "timeout_ms": timeout}}}},
			map[string]any{"text": "done"},
		}})
		scriptFile := filepath.Join(fx.agent, "script.json")
		if err := os.WriteFile(scriptFile, js, 0o644); err != nil {
			t.Errorf("%s: %v", m, err)
		}
		argv = []string{s.bin, "run", "--workspace", fx.ws, "--state-dir", filepath.Join(fx.agent, "state"),
			"--script", scriptFile, "--allowed-tools", "bash", "--output-format", "stream-json"}
		argv = append(append(argv, sc.runFlags...), "run the command")
	}
	if s.unpriv {
		argv = append([]string{"setpriv", "--reuid=" + strconv.Itoa(nobody), "--regid=" + strconv.Itoa(nobody), "--clear-groups", "--"}, argv...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = fx.ws, env
	// A process that escaped the sandbox may hold the output open: give
	// up on it after a while rather than hang.
	cmd.WaitDelay = 3 * time.Second
	switch {
	case m == bashTool:
	case sc.pty:
		cmd.Stdin = fx.stdin
	case sc.stdin != "":
		cmd.Stdin = strings.NewReader(sc.stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := &result{mode: m, dur: time.Since(start), stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.code = 128 + int(ws.Signal())
		}
	case err != nil && !errors.Is(err, exec.ErrWaitDelay):
		t.Errorf("%s: %v", m, err)
		r.code = -1
	}
	if ctx.Err() != nil {
		t.Errorf("%s: still running after 90s: killed", m)
	}
	r.out, r.all = r.stdout+r.stderr, r.stdout+r.stderr
	if m == bashTool {
		s.parseToolRun(t, r)
	}
	return r
}

// The bash tool's notes at the end of its result, read as exit codes the
// way `sandbox run` returns them.
var (
	exitCodeNote = regexp.MustCompile(`exit code (\d+)\s*$`)
	signalNote   = regexp.MustCompile(`killed by signal (SIG[A-Z]+)`)
	timeoutNote  = regexp.MustCompile(`(?i)timed out`)
	signalNums   = map[string]int{"SIGKILL": 9, "SIGTERM": 15, "SIGINT": 2, "SIGSEGV": 11, "SIGABRT": 6, "SIGPIPE": 13, "SIGBUS": 7, "SIGSYS": 31, "SIGXFSZ": 25}
)

// parseToolRun finds the bash tool's result in the stream-json output.
func (s *suite) parseToolRun(t *testing.T, r *result) {
	agentCode := r.code
	r.out, r.code = "", -1
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	found := false
	for sc.Scan() {
		var ev event
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev["type"] != "tool_result" || ev["id"] != "attack" {
			continue
		}
		found = true
		r.out = contentText(ev)
		r.toolError = ev["is_error"] == true
		r.code = 0
		switch m := signalNote.FindStringSubmatch(r.out); {
		case exitCodeNote.MatchString(r.out):
			r.code, _ = strconv.Atoi(exitCodeNote.FindStringSubmatch(r.out)[1])
		case m != nil && signalNums[m[1]] != 0:
			r.code = 128 + signalNums[m[1]]
		case r.toolError && timeoutNote.MatchString(r.out):
			r.code = 124
		case r.toolError:
			r.code = -1
		}
	}
	if !found {
		r.noResult, r.code = true, agentCode
	}
}

// victim is a process the test started outside the sandbox: a sleep in
// the outside directory, with the fake key as its stdin and a secret in
// its environment, for the attacks on other processes.
type victim struct {
	pid  int
	done chan struct{}
}

func (fx *fixture) startVictim(t *testing.T) *victim {
	t.Helper()
	argv := []string{"sleep", "300"}
	if fx.s.unpriv {
		argv = append([]string{"setpriv", "--reuid=" + strconv.Itoa(nobody), "--regid=" + strconv.Itoa(nobody), "--clear-groups", "--"}, argv...)
	}
	secret := "victim-" + randHex(12)
	fx.secrets = append(fx.secrets, secret)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = fx.out
	cmd.Env = []string{"PATH=" + sysPATH, "VICTIM_SECRET=" + secret}
	key, err := os.Open(fx.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	defer key.Close()
	cmd.Stdin = key
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	v := &victim{pid: cmd.Process.Pid, done: make(chan struct{})}
	go func() { cmd.Wait(); close(v.done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-v.done })
	// Wait until setpriv has become sleep (the same pid after exec).
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", v.pid)); strings.TrimSpace(string(b)) == "sleep" {
			break
		}
	}
	fx.victim = v
	fx.vars["PID"] = strconv.Itoa(v.pid)
	return v
}

func (v *victim) alive() bool {
	select {
	case <-v.done:
		return false
	default:
		return true
	}
}

// tokenListener accepts TCP, UDP or unix connections, greets each with
// "hello\n" and logs the token line each sends.
type tokenListener struct {
	addr string
	mu   sync.Mutex
	seen []string
	ls   []io.Closer
}

func listenTokens(t *testing.T, network, addr string) *tokenListener {
	t.Helper()
	l, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	tl := &tokenListener{addr: l.Addr().String()}
	if network == "unix" {
		tl.addr = addr
	}
	tl.serve(t, l)
	return tl
}

func (tl *tokenListener) serve(t *testing.T, l net.Listener) {
	tl.ls = append(tl.ls, l)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			// One connection at a time, in the order they came: a
			// sentinel connection made after a run is recorded after
			// anything the run got through (flush).
			func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				c.Write([]byte("hello\n"))
				line, _ := bufio.NewReader(c).ReadString('\n')
				tl.record("stream " + strings.TrimSpace(line))
			}()
		}
	}()
}

func (tl *tokenListener) listenUDP(t *testing.T, addr string) {
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			n, _, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			tl.record("udp " + strings.TrimSpace(string(buf[:n])))
		}
	}()
}

func (tl *tokenListener) record(s string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.seen = append(tl.seen, s)
}

// saw returns what the listener got carrying token, or "".
func (tl *tokenListener) saw(token string) string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for _, s := range tl.seen {
		if strings.Contains(s, token) {
			return s
		}
	}
	return ""
}

func (tl *tokenListener) port() int {
	_, p, _ := net.SplitHostPort(tl.addr)
	n, _ := strconv.Atoi(p)
	return n
}

// netHost is a test host in a network namespace this test made: a veth
// pair, a private (10.254.R.2/30) and a public-range (198.18.R.2/30,
// benchmark space) address, the same in IPv6 when it can (fd6c:R::2,
// 2001:db8:R::2), and listen.py logging every token it receives. Packets
// to these addresses go down the veth pair into the namespace and nowhere
// else: setupNetHost checks each route before any test uses it.
type netHost struct {
	ns          string
	priv4, pub4 string
	priv6, pub6 string
	port        int
	log         string
}

func setupNetHost(t *testing.T) (*netHost, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil, "not root: a test host in a network namespace needs root (ip netns add, veth); this would have checked that loopback mode cannot reach it and private mode can"
	}
	for _, tool := range []string{"ip", "nsenter", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, tool + " is not installed: no test host in a network namespace; this would have checked that loopback mode cannot reach it and private mode can"
		}
	}
	id := randHex(3)
	r := 1 + int(randUint32()%250)
	h := &netHost{
		ns:    "lae-" + id,
		priv4: fmt.Sprintf("10.254.%d.2", r), pub4: fmt.Sprintf("198.18.%d.2", r),
		log: filepath.Join(t.TempDir(), "netns.log"),
	}
	hostIf, nsIf := "lae"+id+"h", "lae"+id+"n"
	ip := func(args ...string) error {
		b, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, b)
		}
		return nil
	}
	if b, _ := exec.Command("ip", "-4", "route").CombinedOutput(); strings.Contains(string(b), fmt.Sprintf("10.254.%d.", r)) || strings.Contains(string(b), fmt.Sprintf("198.18.%d.", r)) {
		return nil, "the randomly chosen test subnet is in use here; run again"
	}
	if err := ip("netns", "add", h.ns); err != nil {
		return nil, "cannot create a network namespace: " + err.Error()
	}
	t.Cleanup(func() { ip("netns", "del", h.ns); ip("link", "del", hostIf) })
	steps := [][]string{
		{"link", "add", hostIf, "type", "veth", "peer", "name", nsIf, "netns", h.ns},
		{"addr", "add", fmt.Sprintf("10.254.%d.1/30", r), "dev", hostIf},
		{"addr", "add", fmt.Sprintf("198.18.%d.1/30", r), "dev", hostIf},
		{"link", "set", hostIf, "up"},
		{"-n", h.ns, "addr", "add", h.priv4 + "/30", "dev", nsIf},
		{"-n", h.ns, "addr", "add", h.pub4 + "/30", "dev", nsIf},
		{"-n", h.ns, "link", "set", nsIf, "up"},
		{"-n", h.ns, "link", "set", "lo", "up"},
	}
	for _, st := range steps {
		if err := ip(st...); err != nil {
			return nil, "setting up the veth pair: " + err.Error()
		}
	}
	p6, q6 := fmt.Sprintf("fd6c:6974:%x::", r), fmt.Sprintf("2001:db8:%x::", r)
	if ip("-6", "addr", "add", p6+"1/64", "dev", hostIf, "nodad") == nil &&
		ip("-6", "addr", "add", q6+"1/64", "dev", hostIf, "nodad") == nil &&
		ip("-n", h.ns, "-6", "addr", "add", p6+"2/64", "dev", nsIf, "nodad") == nil &&
		ip("-n", h.ns, "-6", "addr", "add", q6+"2/64", "dev", nsIf, "nodad") == nil {
		h.priv6, h.pub6 = p6+"2", q6+"2"
	}
	// Never aim at an address whose route leaves through anything but
	// our veth.
	for _, a := range []string{h.priv4, h.pub4, h.priv6, h.pub6} {
		if a == "" {
			continue
		}
		b, err := exec.Command("ip", "route", "get", a).CombinedOutput()
		if err != nil || !strings.Contains(string(b), "dev "+hostIf) {
			return nil, fmt.Sprintf("the route to %s does not go through the test's veth (%s): refusing to aim at it", a, strings.TrimSpace(string(b)))
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "nsenter", "--net=/run/netns/"+h.ns, "python3", "testdata/escape/listen.py", h.log)
	cmd.Env = []string{"PATH=" + sysPATH}
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, "starting the listener in the namespace: " + err.Error()
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ready <- line
	}()
	select {
	case line := <-ready:
		if _, err := fmt.Sscanf(line, "ready %d", &h.port); err != nil {
			return nil, fmt.Sprintf("the listener in the namespace said %q", line)
		}
	case <-time.After(10 * time.Second):
		return nil, "the listener in the namespace did not start within 10s"
	}
	return h, ""
}

// saw returns the line of the namespace host's log carrying token, or "".
func (h *netHost) saw(token string) string {
	b, _ := os.ReadFile(h.log)
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, token) {
			return line
		}
	}
	return ""
}

// procSampler counts, every few milliseconds, the live processes whose
// command line carries a marker, and remembers the most it saw.
type procSampler struct {
	marker string
	skip   string // argv[0] not to count (the lite-agent process itself)
	stop   chan struct{}
	done   chan struct{}
	max    int
}

func startSampler(t *testing.T, marker, skip string) *procSampler {
	p := &procSampler{marker: marker, skip: skip, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for {
			if n := p.count(); n > p.max {
				p.max = n
			}
			select {
			case <-p.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { p.finish() })
	return p
}

func (p *procSampler) count() int {
	return len(processesMatching(func(cmdline, _ string) bool {
		return strings.Contains(cmdline, p.marker) && !strings.HasPrefix(cmdline, p.skip+"\x00")
	}))
}

// finish stops sampling and returns the most processes seen at once.
func (p *procSampler) finish() int {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
	return p.max
}

// processesMatching lists the pids (other than this process) whose raw
// command line (NUL-separated) and working directory match.
func processesMatching(match func(cmdline, cwd string) bool) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || len(cmdline) == 0 {
			continue
		}
		cwd, _ := os.Readlink("/proc/" + e.Name() + "/cwd")
		if match(string(cmdline), cwd) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// openPTY opens a pseudo-terminal pair; the slave is what a confined
// command gets as stdin in the TIOCSTI attack.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal (%v): the TIOCSTI attack needs one as stdin", err)
	}
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("unlocking the pty: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatalf("the pty number: %v", e)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening the pty slave: %v", err)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	return m, s
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func randUint32() uint32 {
	b := make([]byte, 4)
	rand.Read(b)
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func writeMode(t *testing.T, path, content string, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, perm)
}

func copyFile(t *testing.T, from, to string, perm os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeMode(t, to, string(b), perm)
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return fi.Size()
}
