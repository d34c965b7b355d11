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
// embedded kernel.Agent's, what it does: a field added to Config fails
// TestConfigCannotExpressConfinement until it is listed here.
var configOnly = map[string]string{
	"Preset":            "chooses the sandbox, the ceilings, the default mode and rules everything else is checked against",
	"PolicyFiles":       "which policy files policies.Load reads (their rules and hooks come before the agent's)",
	"NoCheckpoints":     "leaves Confinement.Checkpoints nil (New's to set)",
	"CheckpointMaxSize": "the checkpoint store's cap (checkpoint.Options.MaxStoreSize): bounds the state directory, widens nothing",
	"SandboxGrants":     "the options layer of the sandbox settings, laid over the preset's and the policy files' into Confinement.Sandbox (New's to set); read during New only",
	"Host":              "the machine the toolchain profiles of Confinement.Sandbox are resolved on, during New only",
	"MCPServers":        "checked against the preset (CheckMCPServers), then handed to the kernel as Confinement.Toolsets (mcp.NewToolset, capped at MCPMaxNetwork(preset))",
	"MCPConnectTimeout": "the toolset's connect timeout: a deadline, widens nothing",
}

// agentFields says, for every field of kernel.Agent, how New bounds it
// against the preset or why it cannot widen anything. Config embeds
// kernel.Agent whole, so a field added there reaches every hardened
// agent with no other line in this package: this list, checked by
// TestEveryAgentFieldIsDecided, is where that is decided on purpose. A
// field that would widen what the agent can reach belongs in
// kernel.Confinement instead, which Config cannot set.
var agentFields = map[string]string{
	"Model":                           "the caller's model; required",
	"ModelName":                       "passed to the model, widens nothing",
	"SystemPrompt":                    "text for the model, no permission",
	"AppendSystemPrompt":              "text for the model, no permission",
	"NoProjectInstructions":           "leaves text out, widens nothing",
	"ContextWindow":                   "when to compact, widens nothing",
	"ThinkingBudget":                  "tokens, bounded by MaxBudgetTokens like the rest",
	"WebSearch":                       "copied by New; the kernel refuses it unless the preset's sandbox network is unrestricted",
	"MaxTokens":                       "bounds an answer, widens nothing",
	"Workspace":                       "resolved by New; the preset's sandbox is built for it",
	"CustomTools":                     "CheckTools against the preset",
	"Tools":                           "narrows only",
	"AllowedTools":                    "allow rules of the options layer; deny wins",
	"DisallowedTools":                 "deny only",
	"Rules":                           "after the preset's and the policy files' (a workspace file tighten-only under strict); deny wins",
	"PermissionMode":                  "refused when the preset forbids it (bypassPermissions under strict)",
	"AllowDangerouslySkipPermissions": "checked with the mode",
	"Hooks":                           "after the policy files' command hooks (deny-only where untrusted)",
	"CanUseTool":                      "decides only what would otherwise ask; deny rules and the sandbox still apply",
	"Approval":                        "a person's answer to what would otherwise ask",
	"UserInput":                       "a person's answer, no permission",
	"OnUnknownDomain":                 "a person's answer about a host no grant names; deny_domains and the proxy's rebinding check still apply",
	"MaxTurns":                        "a limit, widens nothing",
	"ToolTimeout":                     "a deadline; the sandbox's limits still apply",
	"StateDir":                        "the kernel refuses one inside the workspace",
	"Agents":                          "a definition's bypassPermissions is refused where the preset refuses the mode",
	"MaxBudgetTokens":                 "a limit, widens nothing",
	"OutputFormat":                    "what the answer looks like, widens nothing",
}

// confinementFields says, for every field of kernel.Confinement, what New
// sets it to: a field added there fails TestEveryAgentFieldIsDecided
// until New has been taught to set it from the preset (or to leave it at
// its zero value, which must then be the strict choice).
var confinementFields = map[string]string{
	"Sandbox":           "the preset's policy, the policy files' [sandbox] tables and Config.SandboxGrants (policies.Policy.SandboxPolicy)",
	"HandlerCeiling":    "HandlerCeiling(preset)",
	"InProcessHandlers": "false: every custom handler runs confined",
	"Checkpoints":       "the state directory's checkpoints, unless Config.NoCheckpoints",
	"Snapshots":         "nil: pre-images go through Checkpoints",
	"Toolsets":          "New's own toolset of Config.MCPServers, checked against the preset",
}

// fieldNames returns the names of t's fields.
func fieldNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		out = append(out, t.Field(i).Name)
	}
	return out
}

// TestConfigCannotExpressConfinement is the guarantee that replaced the
// run-time refusal of kernel options New sets itself: no field reachable
// through Config is one of kernel.Confinement's (the sandbox, the
// ceiling, toolsets, in-process handlers, checkpoints) or one a query
// chooses (Prompt, SessionID, Resume), so a program that tries to set
// one does not compile. Config embeds kernel.Agent and nothing else of
// the kernel's, and each of its own fields is listed in configOnly.
func TestConfigCannotExpressConfinement(t *testing.T) {
	ot := reflect.TypeOf(kernel.Options{})
	at := reflect.TypeOf(kernel.Agent{})
	refused := fieldNames(reflect.TypeOf(kernel.Confinement{}))
	for _, f := range reflect.VisibleFields(ot) {
		if len(f.Index) == 1 && !f.Anonymous {
			refused = append(refused, f.Name) // the query's own
		}
	}
	if !slices.Contains(refused, "Sandbox") || !slices.Contains(refused, "InProcessHandlers") || !slices.Contains(refused, "Prompt") || !slices.Contains(refused, "Resume") {
		t.Fatalf("the refused names %v miss the ones this test is about: it looks at the wrong types", refused)
	}
	ct := reflect.TypeOf(Config{})
	for _, f := range reflect.VisibleFields(ct) {
		if slices.Contains(refused, f.Name) {
			t.Errorf("Config.%s (index %v) is settable, but New chooses it (kernel.Confinement) or a query does", f.Name, f.Index)
		}
		switch {
		case f.Anonymous:
			if f.Type != at {
				t.Errorf("Config embeds %v: only kernel.Agent, what the caller may choose", f.Type)
			}
		case len(f.Index) == 1:
			if configOnly[f.Name] == "" {
				t.Errorf("Config.%s is new: say in configOnly what it does", f.Name)
			}
		}
	}
	for _, name := range fieldNames(at) {
		if f, _ := ct.FieldByName(name); len(f.Index) != 2 {
			t.Errorf("Config.%s hides kernel.Agent.%s: rename Config's", name, name)
		}
	}
	// A query chooses its prompt (Query's argument) and what a
	// QueryOption sets, which are the query's fields of kernel.Options.
	want := []string{"Prompt"}
	qt := reflect.TypeOf(queryOptions{})
	for i := range qt.NumField() {
		n := qt.Field(i).Name
		want = append(want, strings.ToUpper(n[:1])+n[1:])
	}
	var got []string
	for i := range ot.NumField() {
		if !ot.Field(i).Anonymous {
			got = append(got, ot.Field(i).Name)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("kernel.Options' query fields are %v, but a query sets %v", got, want)
	}
}

// TestEveryAgentFieldIsDecided makes a new field of kernel.Agent (which
// reaches every hardened agent, since Config embeds it) and a new field
// of kernel.Confinement (which New must set) be decided on in this
// package: each is named, with how New bounds it or what New sets it to.
func TestEveryAgentFieldIsDecided(t *testing.T) {
	for _, c := range []struct {
		typ   reflect.Type
		table map[string]string
		ask   string
	}{
		{reflect.TypeOf(kernel.Agent{}), agentFields, "how New checks it against the preset, or why it widens nothing (a field that widens what the agent reaches belongs in kernel.Confinement)"},
		{reflect.TypeOf(kernel.Confinement{}), confinementFields, "what New sets it to from the preset"},
	} {
		names := fieldNames(c.typ)
		for _, name := range names {
			if c.table[name] == "" {
				t.Errorf("%v.%s is new: say in local's table %s", c.typ, name, c.ask)
			}
		}
		for name := range c.table {
			if !slices.Contains(names, name) {
				t.Errorf("local's table names %s, which %v no longer has", name, c.typ)
			}
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

// samples are the values for fields nonZero cannot make, or whose
// arbitrary value New would refuse for a reason of its own.
func samples() map[string]reflect.Value {
	return map[string]reflect.Value{
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
		t.Fatalf("kernel.Agent.%s: no sample value of %v; add one to samples", f.Name, f.Type)
	}
	return v
}

// derived are the fields of kernel.Agent New does not pass on as they
// are: it resolves, layers or defaults them (each has its own test).
var derived = map[string]string{
	"Model":          "required; the caller's object (every test sets it)",
	"Workspace":      "resolved (kernel.ResolveWorkspace)",
	"Rules":          "after the preset's and the policy files' (TestNewWiresPresetAndPolicyFiles)",
	"Hooks":          "after the policy files' (TestCommandHooks)",
	"PermissionMode": "parsed, else the files' or the preset's (TestNewWiresPresetAndPolicyFiles)",
}

// TestAgentFieldsReachTheAgent: every field of the agent the caller
// chooses reaches the agent's queries unchanged — so a field added to
// kernel.Agent needs no other line in package local to work behind the
// assembler (before, Config copied each field by hand and an option it
// forgot silently did not exist).
func TestAgentFieldsReachTheAgent(t *testing.T) {
	at := reflect.TypeOf(kernel.Agent{})
	cfg := Config{PolicyFiles: noFiles, NoCheckpoints: true, Agent: kernel.Agent{
		Model: model(t, `{"turns": [{"text": "hi"}]}`), Workspace: t.TempDir()}}
	cv := reflect.ValueOf(&cfg.Agent).Elem()
	for i := range at.NumField() {
		f := at.Field(i)
		if derived[f.Name] == "" {
			cv.Field(i).Set(sample(t, f))
		}
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := reflect.ValueOf(a.Options().Agent)
	for i := range at.NumField() {
		f := at.Field(i)
		if derived[f.Name] != "" {
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
// pointer of kernel.Options (its Agent's and its Confinement's), and the
// slices, maps and pointers of the structs those point to, so that a
// field added as a slice or a policy gains a field that is copied by hand
// or this test fails: a shared one would let the caller change the agent
// after New.
func TestCloneOptionsSharesNothing(t *testing.T) {
	var o kernel.Options
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
	parts := func(o *kernel.Options) []reflect.Value {
		return []reflect.Value{reflect.ValueOf(&o.Agent).Elem(), reflect.ValueOf(&o.Confinement).Elem()}
	}
	for _, pv := range parts(&o) {
		fill(pv)
		for i := range pv.NumField() {
			if f := pv.Field(i); f.Kind() == reflect.Pointer && f.Elem().Kind() == reflect.Struct {
				fill(f.Elem())
			}
		}
	}
	c := cloneOptions(o)
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
	op, cp := parts(&o), parts(&c)
	for i := range op {
		check("", op[i], cp[i], true)
	}
	// And the query's fields are plain strings: nothing else of Options
	// could be shared.
	for _, f := range reflect.VisibleFields(reflect.TypeOf(o)) {
		if len(f.Index) == 1 && !f.Anonymous && f.Type.Kind() != reflect.String {
			t.Errorf("kernel.Options.%s is a %v: copy it in cloneOptions and check it here", f.Name, f.Type)
		}
	}
}
