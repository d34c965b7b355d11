package sandbox

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// unprivilegedTests run again as uid 65534 (TestAsUnprivilegedUser): real
// users are not root. As that user the sandbox gets no cgroup and uses a
// user+PID namespace, RLIMIT_NPROC counted in that namespace and RLIMIT_AS;
// every check must still hold, or the test must say why it does not apply.
var unprivilegedTests = []string{
	"TestRunExitCodesAndPipelines", "TestStdinPassthrough", "TestEnvFiltering",
	"TestTmpdirPrivateAndCleaned", "TestToolchainWorksInside", "TestOutputTruncated",
	"TestTimeoutKillsWholeTree", "TestContextCancelAndKill", "TestDaemonDoesNotOutliveCommand",
	"TestProbeAndEnforcement", "TestConcurrentRuns",
	"TestEscapeFiles", "TestEscapeSeccomp", "TestEscapeSetID", "TestEscapeCapabilitiesAndSession", "TestEscapeI386Table",
	"TestConnectFromThreadInEveryMode", "TestOwnListenersEveryMode", "TestEscapeTIOCSTI",
	"TestLimitsForkBomb", "TestLimitsMemoryBomb", "TestLimitsFileSize",
	"TestEscapeRoutingSockopts", "TestEscapeSocketProtocols", "TestEscapeUnixModes",
	"TestPIDNamespaceInit", "TestMountNSMetadata", "TestMountNSHeldByTheSupervisor",
	"TestCaptureFailsClosed", "TestCaptureHardLinks", "TestCaptureSocketBind", "TestStaleTempDirsRemoved",
	"TestTmpdirReusedAfterModeChanges", "TestTmpdirReplacedBySymlinkIsNotFollowed",
	"TestPseudoTerminalUsableTIOCSTIStillRefused", "TestHostPseudoTerminalsUnreachable", "TestPseudoTerminalsOffWithoutMountNS", "TestProcSelfFiles",
	"TestCaptureRace", "TestCaptureEmulationSemantics", "TestServerResolvesRelativePathsInRoot", "TestCaptureEmulationConfined", "TestCaptureSeesEveryKindOfChangeBeforeItHappens",
	"TestParentsListNamesOnly", "TestOldRootUnreachable", "TestRootSymlinksOnTheWay",
	"TestGitReadOnly", "TestGitNewNamesRefused", "TestGitStillReads",
	"TestFidelityProbeTable", "TestPrivateShmVarTmpRun", "TestRepositoriesInPrivateRoots", "TestRefusalsReported",
	"TestWritersKeepHeldFiles", "TestWritersPauseStopsWrites", "TestWritersPauseWaitsForCapturedCall", "TestWritersRegistryBound",
	"TestCommandsStartInNamespaceTemplate",
}

const nobody = 65534

// TestAsUnprivilegedUser re-runs part of this package's tests as uid 65534
// (setpriv, from root), with a workspace and TMPDIR that user owns.
func TestAsUnprivilegedUser(t *testing.T) {
	if os.Getenv("LITE_AGENT_UNPRIVILEGED_CHILD") != "" {
		t.Skip("already the unprivileged run")
	}
	requireRoot(t, "switching to uid 65534 with setpriv")
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv not installed: would re-run the suite as uid 65534")
	}
	// The test binary lives in a root-only build directory: copy it. (Not
	// t.TempDir: its parent is root-only too.)
	dir, err := os.MkdirTemp("", "lite-agent-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "sandbox.test")
	if err := copyFile(os.Args[0], bin, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tmp, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	// The Go caller of the thread tests, built here: a build as that user
	// would start from an empty cache.
	goBin := filepath.Join(dir, "threadconnect")
	if err := copyFile(goCaller(t), goBin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--",
		bin, "-test.run", "^("+strings.Join(unprivilegedTests, "|")+")$", "-test.v", "-test.count=1")
	cmd.Env = []string{"LITE_AGENT_UNPRIVILEGED_CHILD=1", "TMPDIR=" + tmp, "HOME=" + tmp,
		"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", goCallerEnv + "=" + goBin}
	out, err := cmd.CombinedOutput()
	text := string(out)
	if err != nil || !strings.Contains(text, "\nPASS\n") {
		t.Fatalf("the unprivileged run failed: %v\n%s", err, text)
	}
	// Make sure the tests ran rather than skipped, and show what the
	// sandbox gave that user.
	for _, name := range unprivilegedTests {
		if strings.Contains(text, "--- PASS: "+name+" ") {
			continue
		}
		if why, ok := hostSkips[name]; ok && strings.Contains(text, "--- SKIP: "+name+" ") && strings.Contains(text, why) {
			// The host lacks what the test attacks, for root as well: the
			// skip (printed below) is the host's, not the user's.
			t.Logf("%s skipped as uid 65534, as it does as root on this host (%s)", name, why)
			continue
		}
		t.Errorf("%s did not pass as uid 65534", name)
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "Enforcement:") || strings.Contains(line, "Probe:") || strings.Contains(line, "not meaningful") || strings.Contains(line, "SKIP") {
			t.Log(strings.TrimSpace(line))
		}
	}
}

// hostSkips are the tests of unprivilegedTests that skip on a host which
// lacks what they attack, whoever runs them, with the text their skip
// gives: TestEscapeI386Table on a kernel without IA32 emulation (int 0x80
// faults unconfined, so there is no i386 table to reach).
var hostSkips = map[string]string{
	"TestEscapeI386Table": "no IA32 emulation",
}

func copyFile(from, to string, mode os.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
