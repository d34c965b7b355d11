package tools

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ContentType names the kind of a content block in a tool result. The set
// and the JSON shapes are MCP's, so results pass through MCP unchanged.
type ContentType string

const (
	ContentText         ContentType = "text"
	ContentImage        ContentType = "image"
	ContentAudio        ContentType = "audio"
	ContentResourceLink ContentType = "resource_link"
	ContentResource     ContentType = "resource"
)

// Content is one block of a tool result. Only the fields of its Type are
// set: Text for text; Data and MIMEType for image and audio; URI, Name and
// the optional Title, Description, MIMEType and Size for resource_link;
// Resource for an embedded resource.
type Content struct {
	Type        ContentType       `json:"type"`
	Text        string            `json:"text,omitempty"`
	Data        []byte            `json:"data,omitempty"` // base64 in JSON
	MIMEType    string            `json:"mimeType,omitempty"`
	URI         string            `json:"uri,omitempty"`
	Name        string            `json:"name,omitempty"`
	Title       string            `json:"title,omitempty"`
	Description string            `json:"description,omitempty"`
	Size        int64             `json:"size,omitempty"`
	Resource    *ResourceContents `json:"resource,omitempty"`
}

// ResourceContents is an embedded resource: text or binary (Blob).
type ResourceContents struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     []byte `json:"blob,omitempty"`
}

// TextContent returns a text block.
func TextContent(text string) Content { return Content{Type: ContentText, Text: text} }

// ImageContent returns an image block of raw bytes and their MIME type.
func ImageContent(data []byte, mimeType string) Content {
	return Content{Type: ContentImage, Data: data, MIMEType: mimeType}
}

// AudioContent returns an audio block of raw bytes and their MIME type.
func AudioContent(data []byte, mimeType string) Content {
	return Content{Type: ContentAudio, Data: data, MIMEType: mimeType}
}

// ResourceLink returns a link to a resource the model may fetch later.
func ResourceLink(uri, name string) Content {
	return Content{Type: ContentResourceLink, URI: uri, Name: name}
}

// EmbeddedResource returns a resource whose contents travel with the result.
func EmbeddedResource(r ResourceContents) Content {
	return Content{Type: ContentResource, Resource: &r}
}

// Validate reports a block that lacks the fields its type needs.
func (c *Content) Validate() error {
	switch c.Type {
	case ContentText:
	case ContentImage, ContentAudio:
		if c.MIMEType == "" {
			return fmt.Errorf("%s content needs a mimeType", c.Type)
		}
	case ContentResourceLink:
		if c.URI == "" {
			return fmt.Errorf("resource_link content needs a uri")
		}
	case ContentResource:
		if c.Resource == nil || c.Resource.URI == "" {
			return fmt.Errorf("resource content needs a resource with a uri")
		}
	default:
		return fmt.Errorf("unknown content type %q", c.Type)
	}
	return nil
}

// Result is what a tool call returns to the model.
type Result struct {
	Content []Content `json:"content"`
	IsError bool      `json:"is_error"`
	// Structured is an optional machine-readable value beside the content
	// (MCP's structuredContent); it is not shown to the model.
	Structured any `json:"structured,omitempty"`
}

// Text returns a successful result holding one text block.
func Text(text string) *Result { return &Result{Content: []Content{TextContent(text)}} }

// Errorf returns an error result the model sees, formatted like fmt.Sprintf.
func Errorf(format string, args ...any) *Result {
	return &Result{Content: []Content{TextContent(fmt.Sprintf(format, args...))}, IsError: true}
}

// TextOf joins the text blocks of r, describing non-text blocks in brackets,
// for logs and plain-text output.
func (r *Result) TextOf() string {
	var b strings.Builder
	for i, c := range r.Content {
		if i > 0 {
			b.WriteByte('\n')
		}
		switch c.Type {
		case ContentText:
			b.WriteString(c.Text)
		case ContentImage, ContentAudio:
			fmt.Fprintf(&b, "[%s %s, %d bytes]", c.Type, c.MIMEType, len(c.Data))
		case ContentResourceLink:
			fmt.Fprintf(&b, "[resource_link %s %s]", c.URI, c.Name)
		case ContentResource:
			if c.Resource != nil && c.Resource.Text != "" {
				fmt.Fprintf(&b, "[resource %s]\n%s", c.Resource.URI, c.Resource.Text)
			} else if c.Resource != nil {
				fmt.Fprintf(&b, "[resource %s, %d bytes]", c.Resource.URI, len(c.Resource.Blob))
			}
		}
	}
	return b.String()
}

// MarshalJSON keeps Content a non-null array, as MCP requires.
func (r *Result) MarshalJSON() ([]byte, error) {
	type plain Result
	p := plain(*r)
	if p.Content == nil {
		p.Content = []Content{}
	}
	return json.Marshal(p)
}
