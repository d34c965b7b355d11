// Package fakeapi is a local fake of the Anthropic Messages API for tests
// and benchmarks: it speaks the real streaming wire format, enforces a
// context window (a 400 "prompt is too long" past it) and accounts for
// prompt caching as the API documents it, so that a session's cost can be
// measured without a key or the network.
//
// # Tokens and caching
//
// A request is the sequence tools → system blocks → message blocks; each
// block costs len(its JSON without cache_control)/4 tokens. A block that
// carries cache_control is a breakpoint: the prefix up to it is written
// to the cache (cache_creation_input_tokens), unless it was written
// before. The read (cache_read_input_tokens) is the longest prefix written
// before that ends at one of the 20 blocks at or before a breakpoint. The
// rest is input_tokens. Entries do not expire (a session here is far
// shorter than the API's 5 minutes between hits).
package fakeapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// lookback is how many blocks before a breakpoint the API checks for an
// earlier cache entry.
const lookback = 20

// Request is a received request, decoded.
type Request struct {
	Model     string            `json:"model"`
	MaxTokens int               `json:"max_tokens"`
	System    []json.RawMessage `json:"system"`
	Tools     []json.RawMessage `json:"tools"`
	Messages  []Message         `json:"messages"`
	Thinking  json.RawMessage   `json:"thinking"`
	// Body is the request as sent.
	Body []byte `json:"-"`
	// Breakpoints counts the cache_control markers.
	Breakpoints int `json:"-"`
}

// Message is one message of a request.
type Message struct {
	Role    string            `json:"role"`
	Content []json.RawMessage `json:"content"`
}

// Block is a content block, decoded loosely.
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
}

// Decode decodes a content block.
func Decode(raw json.RawMessage) Block {
	var b Block
	_ = json.Unmarshal(raw, &b)
	return b
}

// LastText is the text of the request's last message.
func (r *Request) LastText() string {
	if len(r.Messages) == 0 {
		return ""
	}
	var s strings.Builder
	for _, c := range r.Messages[len(r.Messages)-1].Content {
		if b := Decode(c); b.Type == "text" {
			s.WriteString(b.Text)
		}
	}
	return s.String()
}

// Reply is one assistant turn.
type Reply struct {
	Thinking, Signature string // a thinking block first, when set
	Text                string
	// ToolName and ToolInput make a tool_use block after the text.
	ToolName  string
	ToolInput string
	// Stop is the stop_reason; default tool_use with a tool, else end_turn.
	Stop         string
	OutputTokens int64
}

// Usage is what one response reported, or, summed, a session.
type Usage struct {
	Requests      int
	Input         int64
	CacheWrites   int64
	CacheReads    int64
	Output        int64
	MaxPrompt     int64
	TooLong       int
	Breakpoints   int // the most in one request
	RequestTokens []int64
}

// Billed is the input-equivalent cost: input + 1.25 × writes + 0.1 ×
// reads, the API's prices relative to uncached input.
func (u Usage) Billed() float64 {
	return float64(u.Input) + 1.25*float64(u.CacheWrites) + 0.1*float64(u.CacheReads)
}

// Server is the fake API.
type Server struct {
	*httptest.Server
	// Window is the context window enforced; zero: none.
	Window int64

	mu      sync.Mutex
	respond func(*Request) Reply
	cache   map[[32]byte]bool
	usage   Usage
	reqs    []*Request
	ids     int
}

// New starts a fake API that answers each request with respond.
func New(window int64, respond func(*Request) Reply) *Server {
	s := &Server{Window: window, respond: respond, cache: map[[32]byte]bool{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Usage returns the session's totals so far.
func (s *Server) Usage() Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.usage
	u.RequestTokens = append([]int64(nil), u.RequestTokens...)
	return u
}

// Requests returns the requests received so far.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.reqs...)
}

// Tokens estimates a block's tokens as the fake counts them.
func Tokens(raw []byte) int64 { return int64(len(raw)+3) / 4 }

// segment is one block of the cache order.
type segment struct {
	tokens int64
	bp     bool
	raw    []byte
}

func segments(r *Request) []segment {
	var out []segment
	add := func(raw json.RawMessage) {
		// Canonical form (keys sorted, no cache_control), so that a block
		// is the same prefix whether or not it carries the breakpoint.
		var m map[string]any
		bp := false
		if json.Unmarshal(raw, &m) == nil {
			_, bp = m["cache_control"]
			delete(m, "cache_control")
			raw, _ = json.Marshal(m)
		}
		out = append(out, segment{tokens: Tokens(raw), bp: bp, raw: raw})
	}
	for _, t := range r.Tools {
		add(t)
	}
	for _, b := range r.System {
		add(b)
	}
	for _, m := range r.Messages {
		for i, c := range m.Content {
			if i == 0 {
				// The role is part of the prefix.
				out = append(out, segment{tokens: 2, raw: []byte("role:" + m.Role)})
			}
			add(c)
		}
	}
	return out
}

func (s *Server) serve(w http.ResponseWriter, hr *http.Request) {
	if hr.Method != http.MethodPost || hr.URL.Path != "/v1/messages" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(hr.Body)
	req := &Request{Body: body}
	if err := json.Unmarshal(body, req); err != nil {
		writeError(w, 400, "invalid_request_error", "bad JSON: "+err.Error())
		return
	}
	req.Breakpoints = bytes.Count(body, []byte(`"cache_control"`))
	if req.Breakpoints > 4 {
		writeError(w, 400, "invalid_request_error", fmt.Sprintf("A maximum of 4 blocks with cache_control may be provided. Found %d.", req.Breakpoints))
		return
	}

	segs := segments(req)
	cum := make([]int64, len(segs)+1)
	hashes := make([][32]byte, len(segs)+1)
	h := sha256.New()
	for i, sg := range segs {
		cum[i+1] = cum[i] + sg.tokens
		h.Write(sg.raw)
		h.Write([]byte{0})
		copy(hashes[i+1][:], h.Sum(nil))
	}
	total := cum[len(segs)]

	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.usage.Requests++
	s.usage.Breakpoints = max(s.usage.Breakpoints, req.Breakpoints)
	s.usage.RequestTokens = append(s.usage.RequestTokens, total)
	if s.Window > 0 && total > s.Window {
		s.usage.TooLong++
		s.mu.Unlock()
		writeError(w, 400, "invalid_request_error", fmt.Sprintf("prompt is too long: %d tokens > %d maximum", total, s.Window))
		return
	}
	s.usage.MaxPrompt = max(s.usage.MaxPrompt, total)
	// Read: the longest prefix written before, ending within lookback
	// blocks at or before a breakpoint.
	var read int64
	last := 0
	for i, sg := range segs {
		if !sg.bp {
			continue
		}
		last = i + 1
		for p := i + 1; p > 0 && p > i+1-lookback; p-- {
			if s.cache[hashes[p]] {
				read = max(read, cum[p])
				break
			}
		}
	}
	var write int64
	for i, sg := range segs {
		if sg.bp && !s.cache[hashes[i+1]] {
			s.cache[hashes[i+1]] = true
		}
	}
	if last > 0 && cum[last] > read {
		write = cum[last] - read
	}
	input := total - read - write
	reply := s.respond(req)
	if reply.OutputTokens == 0 {
		reply.OutputTokens = Tokens([]byte(reply.Text+reply.ToolInput+reply.Thinking)) + 5
	}
	s.usage.Input += input
	s.usage.CacheWrites += write
	s.usage.CacheReads += read
	s.usage.Output += reply.OutputTokens
	s.ids++
	id := s.ids
	s.mu.Unlock()
	writeStream(w, hr, id, reply, input, write, read)
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
	w.Write(b)
}

func q(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// writeStream writes the reply as the API streams it.
func writeStream(w http.ResponseWriter, hr *http.Request, id int, r Reply, input, write, read int64) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	ev := func(name, data string) {
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
	}
	ev("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_%d","type":"message","role":"assistant","model":"fake","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"output_tokens":1}}}`, id, input, write, read))
	idx := 0
	if r.Thinking != "" {
		ev("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"thinking","thinking":"","signature":""}}`, idx))
		ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"thinking_delta","thinking":%s}}`, idx, q(r.Thinking)))
		ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"signature_delta","signature":%s}}`, idx, q(r.Signature)))
		ev("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, idx))
		idx++
	}
	if r.Text != "" {
		ev("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"text","text":""}}`, idx))
		ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%s}}`, idx, q(r.Text)))
		ev("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, idx))
		idx++
	}
	stop := r.Stop
	if r.ToolName != "" {
		ev("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":"toolu_%d","name":%s,"input":{}}}`, idx, id, q(r.ToolName)))
		ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%s}}`, idx, q(r.ToolInput)))
		ev("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, idx))
		if stop == "" {
			stop = "tool_use"
		}
	}
	if stop == "" {
		stop = "end_turn"
	}
	ev("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%s,"stop_sequence":null},"usage":{"output_tokens":%d}}`, q(stop), r.OutputTokens))
	ev("message_stop", `{"type":"message_stop"}`)
	_ = rc.Flush()
	_ = hr
}
