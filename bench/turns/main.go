// Command turns measures how the time of one turn changes over a long
// session: a model that calls a tool on every turn, for -turns turns, and
// the median turn time of each stretch of -bucket turns, early to late. A
// flat row means a turn costs the same at turn 2,000 as at turn 1.
//
//	go run ./bench/turns [-turns 2000] [-bucket 200] [-model scripted|anthropic|openai] [-checkpoints] [-tool write_file|read_file]
//
// -model anthropic and -model openai stream each answer from a local
// server speaking the Messages or the Chat Completions API's wire format
// (it reads and drops the request), so the provider sends the whole
// conversation on every turn as it would to the real API; scripted is the
// in-process model. The kernel runs in this
// process, with the session's transcript (and, with -checkpoints, its
// checkpoints) in a temporary state directory.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lite-agent/lite-agent/kernel"
	"github.com/lite-agent/lite-agent/local"
	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/provider/anthropic"
	"github.com/lite-agent/lite-agent/provider/openai"
	"github.com/lite-agent/lite-agent/provider/scripted"
)

func main() {
	turns := flag.Int("turns", 2000, "tool-call turns in the session")
	bucket := flag.Int("bucket", 200, "turns per reported median")
	model := flag.String("model", "scripted", "scripted (in-process), anthropic or openai (a local server on the Messages or Chat Completions API's wire format)")
	checkpoints := flag.Bool("checkpoints", false, "record checkpoints (a durable seal per turn)")
	tool := flag.String("tool", "write_file", "the tool called on every turn: write_file (a small file, one of 20) or read_file")
	flag.Parse()
	if err := run(*turns, *bucket, *model, *tool, *checkpoints); err != nil {
		fmt.Fprintln(os.Stderr, "turns:", err)
		os.Exit(1)
	}
}

// call is the tool call of turn i.
func call(tool string, i int) (string, string) {
	if tool == "read_file" {
		return "read_file", fmt.Sprintf(`{"path":"f%d.txt"}`, i%20)
	}
	return "write_file", fmt.Sprintf(`{"path":"f%d.txt","content":%q}`, i%20, strings.Repeat(fmt.Sprintf("turn %d\n", i), 10))
}

func run(turns, bucket int, modelName, tool string, checkpoints bool) error {
	ws, err := os.MkdirTemp("", "turns-ws-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(ws)
	state, err := os.MkdirTemp("", "turns-state-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(state)
	for i := range 20 {
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%d.txt", i)), []byte(strings.Repeat("line\n", 40)), 0o644); err != nil {
			return err
		}
	}

	var model provider.Model
	switch modelName {
	case "scripted":
		var s scripted.Script
		for i := range turns {
			name, input := call(tool, i)
			s.Turns = append(s.Turns, scripted.Turn{Text: fmt.Sprintf("Turn %d.", i), ToolCalls: []scripted.ToolCall{{Name: name, Input: json.RawMessage(input)}}})
		}
		s.Turns = append(s.Turns, scripted.Turn{Text: "Done."})
		if model, err = scripted.New(s); err != nil {
			return err
		}
	case "anthropic":
		srv := httptest.NewServer(sseServer(turns, tool))
		defer srv.Close()
		if model, err = anthropic.New(&anthropic.Options{APIKey: "sk-ant-bench", BaseURL: srv.URL, MaxRetries: -1}); err != nil {
			return err
		}
	case "openai":
		srv := httptest.NewServer(openaiServer(turns, tool))
		defer srv.Close()
		if model, err = openai.New(&openai.Options{APIKey: "sk-bench", BaseURL: srv.URL + "/v1", MaxRetries: -1}); err != nil {
			return err
		}
	default:
		return fmt.Errorf("-model %q: want scripted, anthropic or openai", modelName)
	}
	opts := kernel.Options{
		Agent: kernel.Agent{
			Model:        model,
			ModelName:    "claude-sonnet-4-6",
			Workspace:    ws,
			StateDir:     state,
			AllowedTools: []string{tool},
			// A window no session here fills: the turns measure the loop,
			// not compaction.
			ContextWindow: 1 << 30,
		},
		Prompt: "Work through the files.",
	}
	if checkpoints {
		opts.Checkpoints = local.Checkpoints(state)
	}
	var stamps []time.Time
	var res kernel.Event
	start := time.Now()
	for ev, err := range kernel.Query(context.Background(), opts) {
		if err != nil {
			return err
		}
		switch ev.Type {
		case kernel.EventToolResult:
			stamps = append(stamps, time.Now())
		case kernel.EventResult:
			res = ev
		}
	}
	if res.Result == nil || res.Result.IsError || len(stamps) != turns {
		return fmt.Errorf("the session did not finish: %d of %d turns, %+v", len(stamps), turns, res.Result)
	}
	fmt.Printf("%d turns, model %s, tool %s, checkpoints %v: %s in all\n", turns, modelName, tool, checkpoints, time.Since(start).Round(time.Millisecond))
	fmt.Printf("median turn (ms) per %d turns:", bucket)
	var first, last time.Duration
	for i := 1; i+bucket <= len(stamps); i += bucket {
		var d []time.Duration
		for j := i; j < i+bucket; j++ {
			d = append(d, stamps[j].Sub(stamps[j-1]))
		}
		slices.Sort(d)
		m := d[len(d)/2]
		if i == 1 {
			first = m
		}
		last = m
		fmt.Printf(" %.2f", float64(m.Microseconds())/1000)
	}
	fmt.Printf("\nlast/first: %.2f\n", float64(last)/float64(first))
	return nil
}

// sseServer answers request n with a tool call (or, after turns, with
// text) on the Messages API's wire format. It reads the request through
// and drops it.
func sseServer(turns int, tool string) http.HandlerFunc {
	n := 0
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		i := n
		n++
		w.Header().Set("Content-Type", "text/event-stream")
		ev := func(typ, data string) { fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data) }
		ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}`)
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Turn %d."}}`, i))
		ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
		stop := "end_turn"
		if i < turns {
			name, input := call(tool, i)
			in, _ := json.Marshal(input)
			ev("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_%d","name":%q,"input":{}}}`, i, name))
			ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":%s}}`, in))
			ev("content_block_stop", `{"type":"content_block_stop","index":1}`)
			stop = "tool_use"
		}
		ev("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":20}}`, stop))
		ev("message_stop", `{"type":"message_stop"}`)
	}
}

// openaiServer is sseServer on the Chat Completions API's wire format.
func openaiServer(turns int, tool string) http.HandlerFunc {
	n := 0
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		i := n
		n++
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta, finish string) {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", delta, finish)
		}
		chunk(fmt.Sprintf(`{"role":"assistant","content":"Turn %d."}`, i), "null")
		finish := `"stop"`
		if i < turns {
			name, input := call(tool, i)
			in, _ := json.Marshal(input)
			chunk(fmt.Sprintf(`{"tool_calls":[{"index":0,"id":"call_%d","type":"function","function":{"name":%q,"arguments":%s}}]}`, i, name, in), "null")
			finish = `"tool_calls"`
		}
		chunk(`{}`, finish)
		fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5,\"total_tokens\":15}}\n\ndata: [DONE]\n\n")
	}
}
