package policies

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/lite-agent/lite-agent/sandbox"
)

// The [sandbox] table of a policy file:
//
//	[sandbox]
//	network       = "loopback"                 # none, loopback, private, unrestricted
//	allow_domains = ["@go", "docs.example.com"] # the domain proxy's grants
//	deny_domains  = ["*.ads.example"]           # wins over allow_domains
//	read          = ["~/src/shared-lib"]        # read-only paths
//	write         = ["/srv/scratch"]            # read-write paths
//	env           = ["GOFLAGS", "CI=1"]         # NAME (copied) or NAME=VALUE
//	toolchains    = "auto"                      # auto, none, or ["go", "node"]
//	git           = "read-only"                 # or "writable" (commands may commit, and plant hooks)
//	level         = "full"                      # or "container": no namespaces (see sandbox.LevelContainer)
//
// A path is absolute, "~/..." (the user's home), or — in a workspace's
// file — relative to the workspace.

// sandboxKey reads one key of the [sandbox] table; ok is false for a key
// it does not know (the caller reports it).
func (fp *fileParser) sandboxKey(key, name string, line int, v *unstable.Node) (error, bool) {
	s := &fp.f.Sandbox
	src := fp.source(line)
	switch key {
	case "network":
		str, err := fp.str(name, line, v)
		if err != nil {
			return err, true
		}
		m, err := sandbox.ParseNetworkMode(str)
		if err != nil || str == "" {
			return fp.errorf(line, "%s: unknown network mode %q (none, loopback, private or unrestricted)", name, str), true
		}
		s.Network, s.NetworkSource = m, src
		return nil, true
	case "level":
		str, err := fp.str(name, line, v)
		if err != nil {
			return err, true
		}
		l, err := sandbox.ParseLevel(str)
		if err != nil || str == "" {
			return fp.errorf(line, "%s: unknown sandbox level %q (full or container)", name, str), true
		}
		s.Level, s.LevelSource = l, src
		return nil, true
	case "git":
		str, err := fp.str(name, line, v)
		if err != nil {
			return err, true
		}
		g, err := ParseGit(str)
		if err != nil {
			return fp.errorf(line, "%s: %v", name, err), true
		}
		s.Git, s.GitSource = g, src
		return nil, true
	case "toolchains":
		var text string
		switch v.Kind {
		case unstable.String:
			text = string(v.Data)
		case unstable.Array:
			items, err := fp.strings(name, line, v)
			if err != nil {
				return err, true
			}
			var parts []string
			for _, it := range items {
				if it.Value == "auto" || it.Value == "none" {
					return fp.errorf(lineOf(it.Source), "%s: %q is a value of its own (toolchains = %q), not a list entry", name, it.Value, it.Value), true
				}
				parts = append(parts, it.Value)
			}
			text = strings.Join(parts, ",")
			if text == "" {
				text = "none"
			}
		default:
			return fp.errorf(line, "%s must be \"auto\", \"none\" or an array of toolchain names, not %s", name, kindName(v.Kind)), true
		}
		tcs, err := ParseToolchains(text)
		if err != nil {
			return fp.errorf(line, "%s: %v", name, err), true
		}
		s.Toolchains, s.ToolchainsSource = tcs, src
		return nil, true
	case "allow_domains", "deny_domains", "read", "write", "env":
		items, err := fp.strings(name, line, v)
		if err != nil {
			return err, true
		}
		for i := range items {
			it := &items[i]
			switch key {
			case "read", "write":
				p, err := fp.sandboxPath(it.Value)
				if err != nil {
					return fp.errorf(lineOf(it.Source), "%s: %v", name, err), true
				}
				it.Value = p
			case "env":
				n, _, _ := strings.Cut(it.Value, "=")
				if !validEnvName(n) {
					return fp.errorf(lineOf(it.Source), "%s: %q: want NAME or NAME=VALUE", name, it.Value), true
				}
			default:
				if err := CheckDomain(it.Value); err != nil {
					return fp.errorf(lineOf(it.Source), "%s: %v", name, err), true
				}
			}
		}
		dst := map[string]*[]Grant{"allow_domains": &s.AllowDomains, "deny_domains": &s.DenyDomains,
			"read": &s.Read, "write": &s.Write, "env": &s.Env}[key]
		*dst = append(*dst, items...)
		return nil, true
	}
	return nil, false
}

// strings reads an array of strings, each with its own line as source.
func (fp *fileParser) strings(name string, line int, v *unstable.Node) ([]Grant, error) {
	if v.Kind != unstable.Array {
		return nil, fp.errorf(line, "%s must be an array of strings, not %s", name, kindName(v.Kind))
	}
	var out []Grant
	for it := v.Children(); it.Next(); {
		e := it.Node()
		if e.Kind == unstable.Comment {
			continue
		}
		l := fp.lineOf(e)
		if l == 0 {
			l = line
		}
		if e.Kind != unstable.String {
			return nil, fp.errorf(l, "%s: every entry is a string, not %s", name, kindName(e.Kind))
		}
		out = append(out, Grant{Value: string(e.Data), Source: fp.source(l)})
	}
	return out, nil
}

// sandboxPath makes a [sandbox] path absolute: "~/" is the user's home; a
// relative path is the workspace's, in a workspace's policy file only.
func (fp *fileParser) sandboxPath(p string) (string, error) {
	switch {
	case p == "":
		return "", errEmptyPath
	case p == "~" || strings.HasPrefix(p, "~/"):
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(home, p[1:]), nil
	case filepath.IsAbs(p):
		return filepath.Clean(p), nil
	}
	if dir := filepath.Dir(fp.path); filepath.Base(dir) == ".lite-agent" {
		return relativeTo(filepath.Dir(dir), p), nil
	}
	return "", errRelativePath(p)
}

type pathError string

func (e pathError) Error() string { return string(e) }

var errEmptyPath = pathError("an empty path")

func errRelativePath(p string) error {
	return pathError("path " + quote(p) + " is relative; give it absolute or as ~/... (relative paths mean the workspace's, in a workspace's policy file)")
}

func quote(s string) string { return "\"" + s + "\"" }

// validEnvName reports whether name is a shell variable name.
func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i, c := range name {
		if c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}

// CheckDomain checks a domain grant as written: a name ("example.com"),
// subdomains ("*.example.com"), a literal IP[:PORT], or a registry alias
// (@go, @npm, @pypi, @crates, @maven, @registries).
func CheckDomain(d string) error {
	if strings.HasPrefix(d, "@") {
		if d == "@registries" || ToolchainByAlias(d) != nil {
			return nil
		}
		return pathError("unknown registry alias " + quote(d) + " (" + strings.Join(RegistryAliases(), ", ") + ")")
	}
	name := strings.TrimPrefix(d, "*.")
	if name == "" || strings.ContainsAny(name, " /*@\t") {
		return pathError("domain " + quote(d) + " is not a name (example.com), *.example.com or IP[:PORT]")
	}
	return nil
}
