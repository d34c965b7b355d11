package local

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/lite-agent/lite-agent/kernel"
)

// chooser says who chooses a field of kernel.Options behind the assembler.
type chooser int

const (
	// byConfig: the caller, in Config's embedded kernel.Options. New
	// passes it on (a deep copy), after checking it against the preset
	// where it could widen anything.
	byConfig chooser = iota + 1
	// byPreset: New, from the preset. Set in Config, it is refused: the
	// preset is what the caller chooses instead.
	byPreset
	// byQuery: each query (Query's prompt, a QueryOption). Set in Config,
	// it is refused: it would be overwritten by the first query.
	byQuery
)

// field is one entry of optionFields.
type field struct {
	by chooser
	// why, for byConfig, says how New checks the field against the preset
	// or why it cannot widen anything; otherwise it is the refusal's
	// reason and says what to do instead.
	why string
}

// optionFields classifies every field of kernel.Options. It is the one
// place a new kernel option must be named to reach the assembler: New
// copies Config's kernel.Options whole, so a byConfig field reaches every
// query with no other edit, and refuses the others when set. A field the
// table does not name is refused when set (fail closed: nobody decided
// how the preset bounds it), and TestEveryOptionIsClassified fails until
// it is named here.
var optionFields = map[string]field{
	"Prompt":    {byQuery, "a query's prompt is the argument of Agent.Query or Agent.Run"},
	"Resume":    {byQuery, "a query resumes a session with the Resume QueryOption"},
	"SessionID": {byQuery, "a query names its session with the SessionID QueryOption"},

	"Model":                           {byConfig, "the caller's model; required"},
	"ModelName":                       {byConfig, "passed to the model, widens nothing"},
	"SystemPrompt":                    {byConfig, "text for the model, no permission"},
	"AppendSystemPrompt":              {byConfig, "text for the model, no permission"},
	"NoProjectInstructions":           {byConfig, "leaves text out, widens nothing"},
	"ContextWindow":                   {byConfig, "when to compact, widens nothing"},
	"ThinkingBudget":                  {byConfig, "tokens, bounded by MaxBudgetTokens like the rest"},
	"WebSearch":                       {byConfig, "copied by New; the kernel refuses it unless the preset's sandbox network is unrestricted"},
	"MaxTokens":                       {byConfig, "bounds an answer, widens nothing"},
	"Workspace":                       {byConfig, "resolved by New; the preset's sandbox is built for it"},
	"CustomTools":                     {byConfig, "CheckTools against the preset"},
	"Tools":                           {byConfig, "narrows only"},
	"AllowedTools":                    {byConfig, "allow rules of the options layer; deny wins"},
	"DisallowedTools":                 {byConfig, "deny only"},
	"Rules":                           {byConfig, "after the preset's and the policy files' (a workspace file tighten-only under strict); deny wins"},
	"PermissionMode":                  {byConfig, "refused when the preset forbids it (bypassPermissions under strict)"},
	"AllowDangerouslySkipPermissions": {byConfig, "checked with the mode"},
	"Hooks":                           {byConfig, "after the policy files' command hooks (deny-only where untrusted)"},
	"CanUseTool":                      {byConfig, "decides only what would otherwise ask; deny rules and the sandbox still apply"},
	"Approval":                        {byConfig, "a person's answer to what would otherwise ask"},
	"UserInput":                       {byConfig, "a person's answer, no permission"},
	"OnUnknownDomain":                 {byConfig, "a person's answer about a host no grant names; deny_domains and the proxy's rebinding check still apply"},
	"MaxTurns":                        {byConfig, "a limit, widens nothing"},
	"ToolTimeout":                     {byConfig, "a deadline; the sandbox's limits still apply"},
	"StateDir":                        {byConfig, "the kernel refuses one inside the workspace"},
	"Agents":                          {byConfig, "a definition's bypassPermissions is refused where the preset refuses the mode"},
	"MaxBudgetTokens":                 {byConfig, "a limit, widens nothing"},
	"OutputFormat":                    {byConfig, "what the answer looks like, widens nothing"},

	"Sandbox":           {byPreset, "the preset's policy confines every command; choose the preset (Config.Preset), or call kernel.Query directly outside the assembler's guarantees"},
	"HandlerCeiling":    {byPreset, "HandlerCeiling(preset) bounds every custom handler; choose the preset (Config.Preset)"},
	"Toolsets":          {byPreset, "New hands the kernel one toolset, the MCP servers of Config.MCPServers checked against the preset (CheckMCPServers) and capped at MCPMaxNetwork(preset); a toolset of your own cannot be checked against it: give its tools as CustomTools, its servers as Config.MCPServers, or call kernel.Query directly"},
	"InProcessHandlers": {byPreset, "the strict assembler runs every custom handler confined in the sandbox and refuses to run them unconfined; use kernel.Query directly if you must"},
	"Checkpoints":       {byPreset, "New records checkpoints in StateDir (turn them off with Config.NoCheckpoints)"},
	"Snapshots":         {byPreset, "New records pre-images through its checkpoints (Config.NoCheckpoints turns them off)"},
}

// checkOptionFields refuses, each naming the field, the kernel options a
// Config may not set: those New sets from the preset, those a query
// chooses, and any the table does not classify. Reflection, not a list of
// ifs, so that the table above stays the only place a field is named.
func checkOptionFields(o *kernel.Options) error {
	var errs []error
	v := reflect.ValueOf(o).Elem()
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if v.Field(i).IsZero() {
			continue
		}
		switch f, ok := optionFields[name]; {
		case !ok:
			errs = append(errs, fmt.Errorf("local: Config.%s: package local does not know this kernel option yet, so it cannot say how the preset bounds it; leave it unset, or call kernel.Query directly", name))
		case f.by != byConfig:
			errs = append(errs, fmt.Errorf("local: Config.%s: %s", name, f.why))
		}
	}
	return errors.Join(errs...)
}
