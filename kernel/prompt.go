package kernel

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"text/template"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lite-agent/lite-agent/internal/safefile"
	"github.com/lite-agent/lite-agent/sandbox"
)

// systemTemplate is the default system prompt: a file in the repository
// (kernel/prompt/system.md) so that what the model is told can be read
// and reviewed like code.
//
//go:embed prompt/system.md
var systemTemplate string

// Parsed on first use: a program that never builds a prompt (`lite-agent
// sandbox run`) does not pay for it at start.
var systemTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("system.md").Parse(systemTemplate))
})

// Instruction file limits: one file, and all of them together. A bigger
// file is skipped (and reported), not cut: half an instruction can be
// worse than none.
const (
	InstructionFileLimit  = 32 << 10
	InstructionTotalLimit = 96 << 10
)

// InstructionFile is a project-instructions file the session loaded (or
// skipped: then Error says why), as session_start lists it.
type InstructionFile struct {
	Path   string `json:"path"`
	Bytes  int    `json:"bytes"`
	SHA256 string `json:"sha256,omitempty"`
	Error  string `json:"error,omitempty"`
}

// instructionNames are read in each directory, in this order: AGENTS.md
// is the cross-tool convention, CLAUDE.md what Claude Code reads.
var instructionNames = []string{"AGENTS.md", "CLAUDE.md"}

// UserInstructionsPath is the user's own instructions file:
// $XDG_CONFIG_HOME/lite-agent/AGENTS.md (~/.config/lite-agent/AGENTS.md).
func UserInstructionsPath() string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "lite-agent", "AGENTS.md")
}

// gitInfo finds the repository the workspace is in: the nearest directory
// at or above it holding .git, and the branch HEAD names.
func gitInfo(workspace string) (root, branch string) {
	for dir := workspace; ; {
		if fi, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			root = dir
			head := readHEAD(dir, fi)
			if ref, ok := strings.CutPrefix(head, "ref: refs/heads/"); ok && len(ref) <= 100 && branchRE.MatchString(ref) {
				branch = ref
			} else if head != "" {
				branch = "(detached HEAD or unreadable)"
			}
			return root, branch
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ""
		}
		dir = parent
	}
}

// branchRE is what a branch name may be to reach the system prompt: HEAD
// is agent-writable, and a "branch" with a newline in it would be text
// of the agent's choosing in the system prompt. The length (at most 100)
// is checked apart: a counted repetition such as {1,100} compiles to that
// many copies (~0.4 ms at every program start).
var branchRE = regexp.MustCompile(`^[A-Za-z0-9._/+-]+$`)

// readHEAD reads .git/HEAD, or the HEAD of the gitdir a .git file points
// to (a worktree). The workspace is agent-writable, so these are read
// with safefile: no symlink, FIFO or device can make this block or leak.
func readHEAD(dir string, fi fs.FileInfo) string {
	var data []byte
	if fi.IsDir() {
		data, _ = safefile.ReadFileBeneath(dir, ".git/HEAD", 4096)
	} else if link, err := safefile.ReadFileBeneath(dir, ".git", 4096); err == nil {
		gitdir, ok := strings.CutPrefix(strings.TrimSpace(string(link)), "gitdir: ")
		if ok {
			if !filepath.IsAbs(gitdir) {
				gitdir = filepath.Join(dir, gitdir)
			}
			data, _ = safefile.ReadFile(filepath.Join(gitdir, "HEAD"), 4096)
		}
	}
	return strings.TrimSpace(string(data))
}

// loadInstructions reads the project instructions: the user's file, then
// AGENTS.md and CLAUDE.md from the repository root (or the workspace,
// outside a repository) down to the workspace — the nearest last, so that
// it has the last word. It returns the text for the system prompt and the
// list for session_start.
func loadInstructions(workspace, repoRoot string) (string, []InstructionFile) {
	var b strings.Builder
	var files []InstructionFile
	total := 0
	add := func(path string, data []byte, err error) {
		if errors.Is(err, fs.ErrNotExist) {
			return
		}
		f := InstructionFile{Path: path, Bytes: len(data)}
		switch {
		case err != nil:
			f.Error = err.Error()
		case total+len(data) > InstructionTotalLimit:
			f.Error = fmt.Sprintf("skipped: the instruction files together may hold at most %d bytes", InstructionTotalLimit)
		default:
			sum := sha256.Sum256(data)
			f.SHA256 = hex.EncodeToString(sum[:])
			total += len(data)
			fmt.Fprintf(&b, "\n\n## %s\n\n%s", path, strings.TrimSpace(string(data)))
		}
		files = append(files, f)
	}
	// The user's file is the user's own, outside the workspace: a plain
	// safe read (no symlink in the last component, no FIFO).
	if p := UserInstructionsPath(); p != "" {
		data, err := safefile.ReadFile(p, InstructionFileLimit)
		add(p, data, err)
	}
	// Directories from the top down. Every one of them may be writable by
	// the agent (the workspace certainly is), so each file is opened
	// beneath its directory with no symlink anywhere in its path.
	var dirs []string
	top := workspace
	if repoRoot != "" {
		top = repoRoot
	}
	for dir := workspace; ; dir = filepath.Dir(dir) {
		dirs = append([]string{dir}, dirs...)
		if dir == top || filepath.Dir(dir) == dir {
			break
		}
	}
	for _, dir := range dirs {
		for _, name := range instructionNames {
			data, err := safefile.ReadFileBeneath(dir, name, InstructionFileLimit)
			add(filepath.Join(dir, name), data, err)
		}
	}
	if b.Len() == 0 {
		return "", files
	}
	return "# Project instructions\nThe person and the project gave these instructions; follow them unless they conflict with the sandbox or the permissions above." + b.String(), files
}

// promptData is what the template is filled with.
type promptData struct {
	Workspace, OS, Date string
	Git                 bool
	Branch, RepoRoot    string
	Tools               []string
	Mode, ModeText      string
	Writable, Network   string
	// GitReadOnly: the sandbox keeps .git read-only
	// (sandbox.Policy.GitWritable off), which the model is told.
	GitReadOnly bool
}

var modeText = map[PermissionMode]string{
	PermissionDefault:     "Read-only tools run; anything that changes files or runs commands is allowed by a rule or asked about (and denied when nobody can be asked).",
	PermissionAcceptEdits: "File edits inside the workspace run without asking; other calls follow the rules.",
	PermissionPlan:        "Plan mode: nothing that changes anything runs. Investigate and present a plan.",
	PermissionBypass:      "Calls run without asking, except what deny rules, ask rules and hooks say. The sandbox still applies.",
}

// osName is "linux 6.8.0 (amd64)": the release matters for what the
// sandbox can do and what the toolchain is.
func osName() string {
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		return fmt.Sprintf("%s %s (%s)", runtime.GOOS, unix.ByteSliceToString(u.Release[:]), runtime.GOARCH)
	}
	return runtime.GOOS + " (" + runtime.GOARCH + ")"
}

// networkText describes the network of the sandbox's commands.
func networkText(p sandbox.Policy) string {
	switch p.Network {
	case sandbox.NetworkNone, "":
		return "none. Commands cannot reach any network, not even localhost: package installs (pip, npm, go get) and downloads fail. Work with what is installed and cached, or tell the person what needs fetching."
	case sandbox.NetworkLoopback:
		return "loopback only (localhost). The internet is unreachable: package installs and downloads fail."
	case sandbox.NetworkPrivate:
		return "loopback and private networks only; the internet is unreachable."
	}
	return "unrestricted."
}

// systemPrompt builds the session's system prompt: the default (or
// Options.SystemPrompt, which replaces it), Options.AppendSystemPrompt,
// then the project instructions. Nothing in it changes from one turn to
// the next — the date is the session's start date — so that the provider
// caches it once per session.
func (r *run) systemPrompt(created time.Time) (string, error) {
	o := r.opts
	var parts []string
	if o.SystemPrompt != "" {
		parts = append(parts, o.SystemPrompt)
	} else {
		root, branch := gitInfo(r.workspace)
		writable := []string{r.workspace + " (the workspace)"}
		writable = append(writable, r.basePolicy.ReadWritePaths...)
		writable = append(writable, "a private temporary directory ($TMPDIR)")
		d := promptData{
			Workspace: r.workspace, OS: osName(), Date: created.UTC().Format("2006-01-02"),
			Git: root != "", Branch: branch, RepoRoot: root,
			Tools: r.names, Mode: string(r.gate.mode), ModeText: modeText[r.gate.mode],
			Writable: strings.Join(writable, ", "), Network: networkText(r.basePolicy),
			GitReadOnly: !r.basePolicy.GitWritable,
		}
		if d.Mode == "" {
			d.Mode = string(PermissionDefault)
		}
		var b bytes.Buffer
		if err := systemTmpl().Execute(&b, d); err != nil {
			return "", fmt.Errorf("kernel: the system prompt template: %w", err)
		}
		parts = append(parts, strings.TrimSpace(b.String()))
	}
	if o.AppendSystemPrompt != "" {
		parts = append(parts, o.AppendSystemPrompt)
	}
	if !o.NoProjectInstructions {
		root, _ := gitInfo(r.workspace)
		text, files := loadInstructions(r.workspace, root)
		r.instructions = files
		if text != "" {
			parts = append(parts, text)
		}
	}
	return strings.Join(parts, "\n\n"), nil
}
