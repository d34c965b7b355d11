package kernel

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/lite-agent/lite-agent/policies"
	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/tools"
)

// AgentTool is the name of the tool that starts a subagent. It exists in a
// session whose Options.Agents is not empty; its name is what rules, hook
// matchers and Tools use.
const AgentTool = "agent"

// The length is checked apart: a counted repetition such as {1,128}
// compiles to that many copies (~0.6 ms at every program start).
var agentNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// agentInput is the agent tool's input.
type agentInput struct {
	Agent       string `json:"agent" jsonschema:"the subagent to run"`
	Prompt      string `json:"prompt" jsonschema:"the task: everything the subagent needs to know, since it does not see this conversation"`
	Description string `json:"description,omitempty" jsonschema:"a few words on what the subagent will do"`
}

// checkAgents checks the subagent definitions, in name order.
func checkAgents(o *Options) error {
	names := make([]string, 0, len(o.Agents))
	for name := range o.Agents {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		def := o.Agents[name]
		bad := func(format string, args ...any) error {
			return fmt.Errorf("kernel: Agents[%q]: %s", name, fmt.Sprintf(format, args...))
		}
		if len(name) > 64 || !agentNameRE.MatchString(name) {
			return bad("an agent name is 1-64 letters, digits, '_' and '-'")
		}
		if strings.TrimSpace(def.Description) == "" {
			return bad("Description is empty (the main agent reads it to choose a subagent)")
		}
		if strings.TrimSpace(def.Prompt) == "" {
			return bad("Prompt is empty (it is the subagent's system prompt)")
		}
		if def.MaxTurns < 0 {
			return bad("MaxTurns is negative")
		}
		if _, err := compileNamePatterns("Tools", def.Tools); err != nil {
			return bad("%v", err)
		}
		if def.PermissionMode != "" {
			m, err := policies.ParseMode(string(def.PermissionMode))
			if err != nil {
				return bad("PermissionMode: %v", err)
			}
			if m == PermissionBypass && !o.AllowDangerouslySkipPermissions {
				return bad("PermissionMode bypassPermissions needs AllowDangerouslySkipPermissions")
			}
		}
	}
	return nil
}

// newAgentTool builds the agent tool for a session's subagents. The kernel
// runs it itself (runSubagent); its handler is never called.
func newAgentTool(agents map[string]AgentDefinition) (*tools.Tool, error) {
	names := make([]string, 0, len(agents))
	for name := range agents {
		names = append(names, name)
	}
	slices.Sort(names)
	schema, err := jsonschema.For[agentInput](nil)
	if err != nil {
		return nil, fmt.Errorf("kernel: the agent tool's schema: %w", err)
	}
	enum := make([]any, len(names))
	var desc strings.Builder
	desc.WriteString("Start a subagent on a task. It works in a conversation of its own, with its own instructions and tools, and its final answer is this tool's result. It does not see this conversation: put everything it needs in the prompt. Subagents:")
	for i, name := range names {
		enum[i] = name
		fmt.Fprintf(&desc, "\n- %s: %s", name, agents[name].Description)
	}
	schema.Properties["agent"].Enum = enum
	return tools.New(AgentTool, desc.String(),
		func(*tools.Context, agentInput) (*tools.Result, error) {
			return nil, errors.New("the agent tool only runs inside the kernel's loop")
		},
		&tools.Options{
			InputSchema: schema,
			Security:    &tools.Security{Network: tools.NetworkNone, Filesystem: tools.FilesystemNone, SideEffects: tools.SideEffectsNone},
		})
}

// runSubagent runs the subagent a call of the agent tool asks for and
// returns its final answer as the call's result. Its events go to forward
// (into the parent's stream), stamped with its name, id and the call's id.
//
// Everything that guards the main agent guards the subagent, because it
// is the same: the gate's rules, hooks, CanUseTool and approval handler,
// the sandbox, the checkpointer, the task registry and the budget are the
// session's (see session). What a subagent has of its own is its
// conversation, its system prompt and model name, its turn limit, its
// permission mode, and its tools — a subset of the main agent's.
func (r *run) runSubagent(ctx context.Context, call tools.Call, forward func(Event) bool) *tools.Result {
	var in agentInput
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return tools.Errorf("invalid input for %s: %v", AgentTool, err)
	}
	def, ok := r.opts.Agents[in.Agent]
	if !ok {
		return tools.Errorf("there is no subagent named %q", in.Agent)
	}
	sub := r.newSubagent(ctx, in.Agent, def, call.ID, in.Prompt)
	defer sub.cancel()
	yield := func(e Event, _ error) bool { return forward(e) }
	prompt := provider.Message{Role: provider.RoleUser, Content: []provider.Block{{Type: provider.BlockText, Text: in.Prompt}}}
	if err := sub.appendMessage(prompt); err != nil {
		return tools.Errorf("the subagent %s could not start: %v", in.Agent, err)
	}
	end, ok := sub.converse(yield)
	if !ok {
		return tools.Errorf("not finished: the run was stopped while the subagent %s was working", in.Agent)
	}
	switch {
	case end.subtype == SubtypeSuccess:
		if strings.TrimSpace(end.text) == "" {
			return tools.Text("(the subagent finished without a final answer)")
		}
		return tools.Text(end.text)
	case errors.Is(end.err, ErrInterrupted):
		// An interrupt inside a subagent stops the whole run, as it would
		// in the main agent.
		r.haltAll(end)
	}
	// A spent budget has stopped the whole run already (see addUsage).
	return tools.Errorf("the subagent %s did not finish: %v", in.Agent, end.err)
}

// newSubagent prepares the loop of one subagent run over the parent's
// session.
func (r *run) newSubagent(ctx context.Context, name string, def AgentDefinition, callID, prompt string) *run {
	var id [4]byte
	_, _ = rand.Read(id[:])
	sub := &run{
		session:      r.session,
		prompt:       prompt,
		system:       def.Prompt,
		modelName:    def.Model,
		maxTurns:     def.MaxTurns,
		agent:        name,
		agentID:      name + "-" + hex.EncodeToString(id[:]),
		parentCallID: callID,
		parentTurn:   r.userTurn(),
		visible:      map[string]*tools.Tool{},
	}
	if sub.modelName == "" || sub.modelName == "inherit" {
		sub.modelName = r.modelName
	}
	sub.ctx, sub.cancel = context.WithCancel(ctx)
	// The same gate: the same rules, hooks and handlers, not a copy of
	// them; only the mode and the name of who asks differ.
	sub.gate = r.gate
	sub.gate.agent, sub.gate.agentID, sub.gate.delegate = sub.agent, sub.agentID, nil
	if def.PermissionMode != "" && r.gate.mode != PermissionPlan {
		// checkAgents has parsed it.
		sub.gate.mode, _ = policies.ParseMode(string(def.PermissionMode))
	}
	// The parent's tools, in its order, narrowed by the definition; never
	// the agent tool.
	allowed, _ := compileNamePatterns("Tools", def.Tools)
	for _, n := range r.names {
		t := r.visible[n]
		if t == r.agentTool || def.Tools != nil && !allowed.match(n) {
			continue
		}
		sub.addVisible(t)
	}
	return sub
}
