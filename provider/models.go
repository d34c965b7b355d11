package provider

import "strings"

// ModelInfo is what lite-agent knows about a model family: how much it can
// read and how much it may write in one answer.
type ModelInfo struct {
	// Family is the table entry that matched ("" when none did).
	Family string
	// ContextWindow is the input the model accepts, in tokens; zero when
	// unknown (the kernel then compacts only when the provider refuses a
	// request as too long).
	ContextWindow int
	// MaxOutputTokens is the default max_tokens of a request; zero when
	// unknown.
	MaxOutputTokens int
	// Thinking says whether the family accepts extended thinking.
	Thinking bool
}

// modelTable is matched by prefix, first match wins, so a more specific
// prefix comes before a shorter one. Numbers are the vendor's published
// limits for each family; dated snapshots ("claude-sonnet-4-5-20250929")
// and aliases ("claude-sonnet-4-5") share their family's entry.
var modelTable = []ModelInfo{
	// Claude 4.x: Opus 4 and 4.1 write at most 32k; Sonnet 4.x, Opus 4.5+
	// and Haiku 4.5 64k. All have a 200k window (Sonnet's 1M needs a beta
	// header lite-agent does not send).
	{Family: "claude-opus-4-1", ContextWindow: 200_000, MaxOutputTokens: 32_000, Thinking: true},
	{Family: "claude-opus-4-0", ContextWindow: 200_000, MaxOutputTokens: 32_000, Thinking: true},
	{Family: "claude-opus-4-2025", ContextWindow: 200_000, MaxOutputTokens: 32_000, Thinking: true},
	{Family: "claude-opus-4", ContextWindow: 200_000, MaxOutputTokens: 64_000, Thinking: true},
	{Family: "claude-sonnet-4", ContextWindow: 200_000, MaxOutputTokens: 64_000, Thinking: true},
	{Family: "claude-haiku-4", ContextWindow: 200_000, MaxOutputTokens: 64_000, Thinking: true},
	{Family: "claude-3-7-sonnet", ContextWindow: 200_000, MaxOutputTokens: 64_000, Thinking: true},
	{Family: "claude-3-5-haiku", ContextWindow: 200_000, MaxOutputTokens: 8_192},
	{Family: "claude-3-5-sonnet", ContextWindow: 200_000, MaxOutputTokens: 8_192},
	{Family: "claude-3-haiku", ContextWindow: 200_000, MaxOutputTokens: 4_096},
	{Family: "claude-", ContextWindow: 200_000, MaxOutputTokens: 8_192},
	// OpenAI-compatible families commonly served.
	{Family: "gpt-4.1", ContextWindow: 1_047_576, MaxOutputTokens: 32_768},
	{Family: "gpt-4o", ContextWindow: 128_000, MaxOutputTokens: 16_384},
	{Family: "gpt-5", ContextWindow: 400_000, MaxOutputTokens: 128_000},
	{Family: "o3", ContextWindow: 200_000, MaxOutputTokens: 100_000},
	{Family: "o4-mini", ContextWindow: 200_000, MaxOutputTokens: 100_000},
}

// LookupModel returns what the table knows about a model name, matched
// case-insensitively by family prefix; the zero ModelInfo when nothing
// matches (a local model: its server decides).
func LookupModel(name string) ModelInfo {
	n := strings.ToLower(strings.TrimSpace(name))
	// Bedrock and Vertex names carry a vendor prefix ("anthropic.claude-…",
	// "us.anthropic.claude-…"); the family is what follows.
	if i := strings.LastIndex(n, "anthropic."); i >= 0 {
		n = n[i+len("anthropic."):]
	}
	for _, m := range modelTable {
		if strings.HasPrefix(n, m.Family) {
			return m
		}
	}
	return ModelInfo{}
}
