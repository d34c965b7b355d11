package builtin

import "github.com/lite-agent/lite-agent/tools"

// All returns the built-in tools in the order the model sees them.
func All() []*tools.Tool {
	return []*tools.Tool{ReadFile(), WriteFile(), EditFile(), Glob(), Grep(), ListDir(), Bash(), BashOutput(), KillTask(), WebFetch()}
}

// Names returns the names of the built-in tools, in order.
func Names() []string {
	all := All()
	names := make([]string, len(all))
	for i, t := range all {
		names[i] = t.Name()
	}
	return names
}
