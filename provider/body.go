package provider

import (
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
)

// BodyHead is a response body that keeps its first 512 bytes as they are
// read, so that a body which turned out not to be an event stream can be
// quoted in the error.
type BodyHead struct {
	io.ReadCloser
	Head []byte
}

func (h *BodyHead) Read(p []byte) (int, error) {
	n, err := h.ReadCloser.Read(p)
	if room := 512 - len(h.Head); room > 0 {
		h.Head = append(h.Head, p[:min(n, room)]...)
	}
	return n, err
}

// IsEventStream reports whether a response's Content-Type is
// text/event-stream.
func IsEventStream(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == "text/event-stream"
}

// NotEventStream is the error of a 200 response that carried no event
// because it is something else: a proxy's or portal's HTML page, JSON from
// a server that ignored "stream": true. It names the content type and
// quotes the start of the body; such an answer is not retried, as the
// next request would get the same.
func NotEventStream(name, contentType string, head []byte, hint string) error {
	if contentType == "" {
		contentType = "no Content-Type"
	}
	s := strings.Join(strings.Fields(string(head)), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	if s == "" {
		s = "(empty body)"
	}
	return fmt.Errorf("%s: the server answered 200 with %s instead of an event stream (%s): %s", name, contentType, hint, s)
}
