package sandbox

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/lite-agent/lite-agent/internal/paths"
)

// FilterEnv builds a confined child's environment.
//
// allow is the policy's list (Policy.Env): a NAME copies that variable from
// parent when it is set there; NAME=VALUE sets it explicitly. extra
// (Command.Env) is applied on top, in the same syntax, later entries
// winning. A variable whose name looks like a secret (see LooksSecret) is
// never copied from parent by name — not even when it is on the allowlist —
// and passes only when given explicitly as NAME=VALUE, so that a token in the
// agent's own environment cannot leak into a command by accident.
//
// Everything not named is dropped. The result keeps the order in which names
// first appear. FilterEnv does not set TMPDIR; the sandbox does that for each
// command.
func FilterEnv(parent []string, allow []string, extra []string) []string {
	from := make(map[string]string, len(parent))
	for _, kv := range parent {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			if _, dup := from[k]; !dup { // first wins, as getenv does
				from[k] = v
			}
		}
	}
	return filterEnv(func(k string) (string, bool) { v, ok := from[k]; return v, ok }, allow, extra)
}

// filterEnv is FilterEnv with the parent's variables behind lookup: a
// command's environment looks up the process's own (os.LookupEnv, which
// like getenv returns the first of duplicates) by name instead of copying
// and indexing all of it on every spawn.
func filterEnv(lookup func(string) (string, bool), allow []string, extra []string) []string {
	var order []string
	vals := map[string]string{}
	set := func(k, v string) {
		if _, seen := vals[k]; !seen {
			order = append(order, k)
		}
		vals[k] = v
	}
	apply := func(list []string) {
		for _, e := range list {
			k, v, explicit := strings.Cut(e, "=")
			if k == "" || strings.ContainsRune(k, 0) || strings.ContainsRune(v, 0) {
				continue
			}
			if explicit {
				set(k, v)
				continue
			}
			if LooksSecret(k) {
				continue
			}
			if pv, ok := lookup(k); ok {
				set(k, pv)
			}
		}
	}
	apply(allow)
	apply(extra)
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+vals[k])
	}
	return out
}

// LooksSecret reports whether an environment variable name looks like it
// holds a credential: *_KEY, *_TOKEN, *_SECRET, *PASSWORD*, *PASSWD*,
// *CREDENTIAL*, *API_KEY*, *APIKEY*, *PRIVATE_KEY*, *_PAT, *_AUTH, *SECRET*,
// *TOKEN*, AWS_*, AZURE_*, GCP_*/GOOGLE_* credentials, *_COOKIE, *_SESSION
// (case-insensitive). The list errs on the side of dropping: a variable that
// is needed can always be passed explicitly as NAME=VALUE.
func LooksSecret(name string) bool {
	n := strings.ToUpper(name)
	for _, s := range []string{"PASSWORD", "PASSWD", "PASSPHRASE", "SECRET", "CREDENTIAL", "TOKEN",
		"API_KEY", "APIKEY", "PRIVATE_KEY", "ACCESS_KEY", "AUTH_KEY", "CLIENT_KEY"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	for _, s := range []string{"_KEY", "_PAT", "_AUTH", "_COOKIE", "_SESSION", "_PASS", "_PWD"} {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	for _, p := range []string{"AWS_", "AZURE_", "GCP_", "GOOGLE_APPLICATION_", "KUBECONFIG", "DOCKER_AUTH", "NPM_CONFIG_"} {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	switch n {
	case "KEY", "PAT", "AUTH", "COOKIE", "PASS", "SSH_AUTH_SOCK", "GPG_AGENT_INFO":
		return true
	}
	return false
}

// envGet returns the value of name in env (last wins, like the C library's
// view of an environment built by FilterEnv).
func envGet(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

// envSet replaces or appends name=value.
func envSet(env []string, name, value string) []string {
	for i, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); ok && k == name {
			env[i] = name + "=" + value
			return env
		}
	}
	return append(env, name+"="+value)
}

// trimPath keeps the PATH entries a confined process can actually use:
// directories beneath one of the readable roots (compared after resolving
// symlinks, as Landlock sees them). An entry outside — a pyenv shim dir in
// $HOME, say — would only shadow the system's program with one that fails
// with EACCES. Relative entries are kept (they name the working directory).
func trimPath(path string, readable []string) string {
	if path == "" {
		return ""
	}
	var keep []string
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			keep = append(keep, dir)
			continue
		}
		real, err := filepath.EvalSymlinks(dir)
		if err != nil {
			continue
		}
		for _, root := range readable {
			if paths.Within(real, root) {
				keep = append(keep, dir)
				break
			}
		}
	}
	return strings.Join(keep, string(os.PathListSeparator))
}
