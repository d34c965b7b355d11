package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// APIError is an error answer of the server: an HTTP error response, or an
// error object sent inside a stream (StatusCode 0). Its message is the
// server's, whatever shape its body had; it unwraps to the SDK's *sdk.Error
// when the SDK could parse one, for its headers and raw dumps.
type APIError struct {
	StatusCode int    // HTTP status; 0 for an error inside a 200 stream
	Type       string // "invalid_request_error", "server_error"… when given
	Code       string // "invalid_api_key", "rate_limit_exceeded"… when given
	Message    string // the server's message, or a piece of its body
	RequestID  string // x-request-id, when given

	hint string // what the user may check, for bodies that say nothing
	err  *sdk.Error
}

// Error reads like "401 invalid_request_error: Incorrect API key provided
// (code invalid_api_key)"; callers add the "openai: " prefix once.
func (e *APIError) Error() string {
	var b strings.Builder
	if e.StatusCode > 0 {
		b.WriteString(strconv.Itoa(e.StatusCode))
	} else {
		b.WriteString("stream error")
	}
	if e.Type != "" {
		b.WriteString(" " + e.Type)
	}
	switch {
	case e.Message != "":
		b.WriteString(": " + e.Message)
	case e.Type == "" && e.StatusCode > 0:
		b.WriteString(" " + http.StatusText(e.StatusCode))
	}
	if e.Code != "" && e.Code != e.Type && e.Code != strconv.Itoa(e.StatusCode) {
		fmt.Fprintf(&b, " (code %s)", e.Code)
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " (request-id %s)", e.RequestID)
	}
	if e.hint != "" {
		b.WriteString(": " + e.hint)
	}
	return b.String()
}

// Unwrap returns the SDK's error, or nil when the SDK could not parse the
// body.
func (e *APIError) Unwrap() error {
	if e.err == nil {
		return nil
	}
	return e.err
}

// newAPIError builds the error of an HTTP error response from its raw body.
func newAPIError(r *httpErrorRes, sdkErr *sdk.Error) *APIError {
	e := &APIError{StatusCode: r.status, RequestID: r.header.Get("X-Request-Id"), err: sdkErr}
	var ok bool
	e.Type, e.Code, e.Message, ok = parseErrorBody(r.body)
	if !ok {
		// Not JSON, or JSON without a message: a proxy's page, an empty
		// body. Show text, but not markup.
		if s := snippet(r.body); s != "" && !strings.HasPrefix(s, "<") {
			e.Message = s
		}
		if r.status == http.StatusNotFound {
			e.hint = fmt.Sprintf("nothing at %s; check the base URL (OpenAI-compatible servers usually serve under /v1)", r.url)
		}
	}
	return e
}

// streamError reads an error object sent as an event of a 200 stream, and
// says whether it is worth retrying.
func streamError(se *ssestream.StreamError) (*APIError, bool) {
	e := &APIError{}
	var ok bool
	e.Type, e.Code, e.Message, ok = parseErrorBody(se.Event.Data)
	if !ok {
		e.Message = snippet(se.Event.Data)
	}
	return e, transientError(e.Type, e.Code)
}

// transientError says whether an error object inside a stream names a
// condition that a new request may not meet: the server's own fault,
// overload, rate limits, timeouts. Servers spell these differently (OpenAI
// uses type "server_error", vLLM "InternalServerError" with a numeric code),
// so both the type and the code are looked at.
func transientError(typ, code string) bool {
	if n, err := strconv.Atoi(code); err == nil {
		return retryableStatus(n)
	}
	for _, s := range []string{typ, code} {
		switch strings.ToLower(s) {
		case "server_error", "api_error", "internal_error", "internalservererror",
			"overloaded_error", "overloaded", "serviceunavailableerror", "service_unavailable",
			"rate_limit_exceeded", "rate_limit_error", "ratelimiterror",
			"timeout", "timeout_error", "timeouterror":
			return true
		}
	}
	return false
}

// parseErrorBody finds the type, code and message in the error bodies that
// OpenAI-compatible servers send: {"error": {"message", "type", "code"}}
// (OpenAI, llama.cpp, Ollama), {"error": "text"}, {"message", "type",
// "code"} at the top (vLLM) and {"detail": …} (FastAPI servers). ok is false
// when the body is none of these.
func parseErrorBody(body []byte) (typ, code, msg string, ok bool) {
	var top map[string]json.RawMessage
	if json.Unmarshal(bytes.TrimSpace(body), &top) != nil {
		return "", "", "", false
	}
	obj := top
	if raw, found := top["error"]; found {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return "", "", s, s != ""
		}
		var inner map[string]json.RawMessage
		if json.Unmarshal(raw, &inner) == nil {
			obj = inner
		}
	}
	typ, code, msg = scalar(obj["type"]), scalar(obj["code"]), scalar(obj["message"])
	if msg == "" {
		if d, found := top["detail"]; found {
			if msg = scalar(d); msg == "" {
				msg = snippet(d)
			}
		}
	}
	return typ, code, msg, msg != "" || typ != ""
}

// scalar returns a JSON string's text or a number's digits; "" for anything
// else, null included.
func scalar(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// snippet returns b as one line of at most about 200 characters, for error
// messages that quote what the server sent.
func snippet(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}

func isDecodeError(err error) bool {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	return errors.As(err, &syn) || errors.As(err, &typ)
}
