package sandbox

import (
	"reflect"
	"testing"
)

func TestFilterEnv(t *testing.T) {
	parent := []string{
		"PATH=/usr/bin:/bin", "HOME=/home/u", "LANG=C.UTF-8",
		"OPENAI_API_KEY=sk-1", "GITHUB_TOKEN=ghp", "AWS_ACCESS_KEY_ID=AK", "DB_PASSWORD=pw",
		"MY_SECRET=s", "SSH_AUTH_SOCK=/tmp/agent", "EDITOR=vi", "PATH=/shadowed",
	}
	for _, tc := range []struct {
		name         string
		allow, extra []string
		want         []string
	}{
		{"allowlist only", []string{"PATH", "HOME", "TERM"}, nil,
			[]string{"PATH=/usr/bin:/bin", "HOME=/home/u"}},
		{"secrets never by name", []string{"PATH", "OPENAI_API_KEY", "GITHUB_TOKEN", "AWS_ACCESS_KEY_ID", "DB_PASSWORD", "MY_SECRET", "SSH_AUTH_SOCK"}, nil,
			[]string{"PATH=/usr/bin:/bin"}},
		{"explicit values pass", []string{"PATH", "GITHUB_TOKEN=given"}, []string{"API_TOKEN=x"},
			[]string{"PATH=/usr/bin:/bin", "GITHUB_TOKEN=given", "API_TOKEN=x"}},
		{"extra overrides, order kept", []string{"PATH", "LANG"}, []string{"PATH=/opt/bin", "EDITOR"},
			[]string{"PATH=/opt/bin", "LANG=C.UTF-8", "EDITOR=vi"}},
		{"junk ignored", []string{"", "=x", "A\x00B=1"}, nil, []string{}},
	} {
		got := FilterEnv(parent, tc.allow, tc.extra)
		if len(got) == 0 && len(tc.want) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: FilterEnv = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestLooksSecret(t *testing.T) {
	for name, want := range map[string]bool{
		"OPENAI_API_KEY": true, "ANTHROPIC_API_KEY": true, "GITHUB_TOKEN": true, "GH_PAT": true,
		"AWS_SECRET_ACCESS_KEY": true, "AWS_PROFILE": true, "DB_PASSWORD": true, "MYSQL_PWD": true,
		"GOOGLE_APPLICATION_CREDENTIALS": true, "client_secret": true, "NPM_CONFIG__AUTH": true,
		"PATH": false, "HOME": false, "TERM": false, "LANG": false, "KEYBOARD_LAYOUT": false, "EDITOR": false,
	} {
		if got := LooksSecret(name); got != want {
			t.Errorf("LooksSecret(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestTrimPath(t *testing.T) {
	got := trimPath("/usr/local/bin:/root/.pyenv/shims:/usr/bin:relative:/no/such/dir", []string{"/usr"})
	if got != "/usr/local/bin:/usr/bin:relative" {
		t.Errorf("trimPath = %q", got)
	}
}

func TestProcSelfLike(t *testing.T) {
	for p, want := range map[string]bool{
		"/proc/self": true, "/proc/self/fd": true, "/proc/thread-self": true, "/proc/123": true, "/proc/123/root": true,
		"/proc/cpuinfo": false, "/proc": false, "/proc/sys/kernel": false, "/usr/proc/self": false,
	} {
		if got := procSelfLike(p); got != want {
			t.Errorf("procSelfLike(%q) = %v", p, got)
		}
	}
}
