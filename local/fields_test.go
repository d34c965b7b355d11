package local

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/kernel"
	"github.com/lite-agent/lite-agent/tools"
)

// configOnly names, for every field of Config that is not one of the
// embedded kernel.Options, what it does: a field added to Config fails
// TestEveryOptionIsClassified until it is listed here.
var configOnly = map[string]string{
	"Preset":            "chooses the sandbox, the ceilings, the default mode and rules everything else is checked against",
	"PolicyFiles":       "which policy files policies.Load reads (their rules and hooks come before the options')",
	"NoCheckpoints":     "leaves Options.Checkpoints nil (New's to set)",
	"CheckpointMaxSize": "the checkpoint store's cap (checkpoint.Options.MaxStoreSize): bounds the state directory, widens nothing",
	"SandboxGrants":     "the options layer of the sandbox settings, laid over the preset's and the policy files' into Options.Sandbox (New's to set); read during New only",
	"Host":              "the machine the toolchain profiles of Options.Sandbox are resolved on, during New only",
	"MCPServers":        "checked against the preset (CheckMCPServers), then handed to the kernel as Options.Toolsets (mcp.NewToolset, capped at MCPMaxNetwork(preset))",
	"MCPConnectTimeout": "the toolset's connect timeout: a deadline, widens nothing",
}

// TestEveryOptionIsClassified is the guard that makes a new kernel
// option be decided on: every field reachable through Config — the
// embedded kernel.Options' and Config's own — is named, with what New
// does with it, and none of Config's own hides a kernel option.
func TestEveryOptionIsClassified(t *testing.T) {
	ot := reflect.TypeOf(kernel.Options{})
	for i := range ot.NumField() {
		name := ot.Field(i).Name
		f, ok := optionFields[name]
		if !ok || f.why == "" || f.by < byConfig || f.by > byQuery {
			t.Errorf("kernel.Options.%s is new: say in optionFields (fields.go) whether the caller (byConfig: how New checks it, or why it widens nothing), the preset (byPreset) or a query (byQuery) chooses it", name)
		}
	}
	for name := range optionFields {
		if _, ok := ot.FieldByName(name); !ok {
			t.Errorf("optionFields names %s, which kernel.Options no longer has", name)
		}
	}
	// A query chooses its prompt (Query's argument) and what a
	// QueryOption sets, nothing else.
	want := []string{"Prompt"}
	qt := reflect.TypeOf(queryOptions{})
	for i := range qt.NumField() {
		n := qt.Field(i).Name
		want = append(want, strings.ToUpper(n[:1])+n[1:])
	}
	var got []string
	for name, f := range optionFields {
		if f.by == byQuery {
			got = append(got, name)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("byQuery fields %v, but a query sets %v", got, want)
	}

	ct := reflect.TypeOf(Config{})
	for _, f := range reflect.VisibleFields(ct) {
		switch {
		case f.Anonymous:
			if f.Type != ot {
				t.Errorf("Config embeds %v: only kernel.Options is classified", f.Type)
			}
		case len(f.Index) == 1:
			if configOnly[f.Name] == "" {
				t.Errorf("Config.%s is new: say in configOnly what it does", f.Name)
			}
		case len(f.Index) != 2 || optionFields[f.Name].why == "":
			t.Errorf("Config.%s (index %v) is reachable but not classified", f.Name, f.Index)
		}
	}
	for i := range ot.NumField() {
		name := ot.Field(i).Name
		if f, _ := ct.FieldByName(name); len(f.Index) != 2 {
			t.Errorf("Config.%s hides kernel.Options.%s: rename Config's", name, name)
		}
	}
}

// nonZero returns a value of type t that is not its zero value, or false
// when it cannot make one (an interface: give a sample).
func nonZero(t reflect.Type) (reflect.Value, bool) {
	v := reflect.New(t).Elem()
	switch t.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.String:
		v.SetString("x")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Pointer:
		v = reflect.New(t.Elem())
	case reflect.Slice:
		v = reflect.MakeSlice(t, 1, 1)
	case reflect.Map:
		v = reflect.MakeMap(t)
	case reflect.Func:
		v = reflect.MakeFunc(t, func([]reflect.Value) []reflect.Value {
			out := make([]reflect.Value, t.NumOut())
			for i := range out {
				out[i] = reflect.Zero(t.Out(i))
			}
			return out
		})
	default:
		return v, false
	}
	return v, true
}

type recorderStub struct{}

func (recorderStub) RecordSnapshot(string) error { return nil }

// samples are the values for fields nonZero cannot make, or whose
// arbitrary value New would refuse for a reason of its own.
func samples() map[string]reflect.Value {
	return map[string]reflect.Value{
		"Snapshots":       reflect.ValueOf(tools.SnapshotRecorder(recorderStub{})),
		"CustomTools":     reflect.ValueOf([]*tools.Tool{okTool}),
		"Tools":           reflect.ValueOf([]string{"bash"}),
		"AllowedTools":    reflect.ValueOf([]string{"bash(make:*)"}),
		"DisallowedTools": reflect.ValueOf([]string{"bash(rm:*)"}),
	}
}

func sample(t *testing.T, f reflect.StructField) reflect.Value {
	t.Helper()
	if v, ok := samples()[f.Name]; ok {
		return v
	}
	v, ok := nonZero(f.Type)
	if !ok {
		t.Fatalf("kernel.Options.%s: no sample value of %v; add one to samples", f.Name, f.Type)
	}
	return v
}

// TestNewRefusesWhatItChooses: a Config that sets a kernel option New
// takes from the preset (the sandbox, the ceilings, in-process handlers,
// checkpoints) or a query chooses is refused, naming the field and what
// to do instead — it is never silently replaced. So is an option the
// table does not know yet (fail closed).
func TestNewRefusesWhatItChooses(t *testing.T) {
	ot := reflect.TypeOf(kernel.Options{})
	base := func() Config {
		return Config{PolicyFiles: noFiles, NoCheckpoints: true, Options: kernel.Options{
			Model: model(t, `{"turns": [{"text": "hi"}]}`), Workspace: t.TempDir(), StateDir: t.TempDir()}}
	}
	for i := range ot.NumField() {
		f := ot.Field(i)
		rule := optionFields[f.Name]
		if rule.by == byConfig {
			continue
		}
		cfg := base()
		reflect.ValueOf(&cfg.Options).Elem().Field(i).Set(sample(t, f))
		_, err := New(cfg)
		if err == nil || !strings.Contains(err.Error(), "local: Config."+f.Name+": "+rule.why) {
			t.Errorf("Config.%s set: %v", f.Name, err)
		}
	}
	// The same option, once nobody has classified it.
	saved := optionFields["MaxTurns"]
	delete(optionFields, "MaxTurns")
	defer func() { optionFields["MaxTurns"] = saved }()
	cfg := base()
	cfg.MaxTurns = 3
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "Config.MaxTurns: package local does not know this kernel option yet") {
		t.Errorf("an unclassified option: %v", err)
	}
}

// derived are the byConfig fields New does not pass on as they are: it
// resolves, layers or defaults them (each has its own test).
var derived = map[string]string{
	"Model":          "required; the caller's object (every test sets it)",
	"Workspace":      "resolved (kernel.ResolveWorkspace)",
	"Rules":          "after the preset's and the policy files' (TestNewWiresPresetAndPolicyFiles)",
	"Hooks":          "after the policy files' (TestCommandHooks)",
	"PermissionMode": "parsed, else the files' or the preset's (TestNewWiresPresetAndPolicyFiles)",
}

// TestConfigOptionsReachTheAgent: every option the caller chooses
// reaches the agent's queries unchanged — so a kernel option added and
// classified byConfig needs no other line in package local to work
// behind the assembler (before, Config copied each field by hand and an
// option it forgot silently did not exist).
func TestConfigOptionsReachTheAgent(t *testing.T) {
	ot := reflect.TypeOf(kernel.Options{})
	cfg := Config{PolicyFiles: noFiles, NoCheckpoints: true, Options: kernel.Options{
		Model: model(t, `{"turns": [{"text": "hi"}]}`), Workspace: t.TempDir()}}
	cv := reflect.ValueOf(&cfg.Options).Elem()
	for i := range ot.NumField() {
		f := ot.Field(i)
		if optionFields[f.Name].by == byConfig && derived[f.Name] == "" {
			cv.Field(i).Set(sample(t, f))
		}
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := reflect.ValueOf(a.Options())
	for i := range ot.NumField() {
		f := ot.Field(i)
		if optionFields[f.Name].by != byConfig || derived[f.Name] != "" {
			continue
		}
		want, have := cv.Field(i), got.Field(i)
		same := reflect.DeepEqual(want.Interface(), have.Interface())
		if f.Type.Kind() == reflect.Func {
			same = want.Pointer() == have.Pointer()
		}
		if !same {
			t.Errorf("Config.%s = %v reached the agent as %v", f.Name, want, have)
		}
	}
}

// shared are the reference-typed fields (and fields of the structs they
// point to) that a copy may share: the caller's own objects, which the
// agent does not own and the checks do not depend on.
var shared = map[string]bool{
	"OutputFormat.Schema": true, // the caller's schema, read only
}

// TestCloneOptionsSharesNothing: cloneOptions copies every slice, map and
// pointer of kernel.Options, and the slices, maps and pointers of the
// structs those point to, so that a kernel option added as a slice or a
// policy gains a field that is copied by hand or this test fails: a shared
// one would let the caller change the agent after New.
func TestCloneOptionsSharesNothing(t *testing.T) {
	var o kernel.Options
	ov := reflect.ValueOf(&o).Elem()
	fill := func(v reflect.Value) {
		for i := range v.NumField() {
			switch v.Type().Field(i).Type.Kind() {
			case reflect.Slice, reflect.Map, reflect.Pointer:
				if v.Type().Field(i).IsExported() {
					nz, _ := nonZero(v.Type().Field(i).Type)
					v.Field(i).Set(nz)
				}
			}
		}
	}
	fill(ov)
	for i := range ov.NumField() {
		if f := ov.Field(i); f.Kind() == reflect.Pointer && f.Elem().Kind() == reflect.Struct {
			fill(f.Elem())
		}
	}
	c := cloneOptions(o)
	cv := reflect.ValueOf(c)
	var check func(prefix string, a, b reflect.Value, deep bool)
	check = func(prefix string, a, b reflect.Value, deep bool) {
		for i := range a.NumField() {
			name := prefix + a.Type().Field(i).Name
			fa, fb := a.Field(i), b.Field(i)
			switch fa.Kind() {
			case reflect.Slice, reflect.Map, reflect.Pointer:
			default:
				continue
			}
			if fa.IsNil() || shared[name] {
				continue
			}
			if fb.IsNil() || fa.Pointer() == fb.Pointer() {
				t.Errorf("cloneOptions shares %s: copy it in cloneOptions (or say in shared why it may be shared)", name)
				continue
			}
			if deep && fa.Kind() == reflect.Pointer && fa.Elem().Kind() == reflect.Struct {
				check(name+".", fa.Elem(), fb.Elem(), false)
			}
		}
	}
	check("", ov, cv, true)
}
