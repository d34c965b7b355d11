package tools

import (
	"regexp"
	"strings"
)

// jsonschema-go nests every error in "validating <pointer>: " prefixes. The
// model needs the innermost pointer (which field) and the innermost reason.
var validatingRE = regexp.MustCompile(`validating (/[^:]*|root): `)

func cleanValidationError(err error) string {
	msg := err.Error()
	pointers := validatingRE.FindAllStringSubmatch(msg, -1)
	reason := validatingRE.ReplaceAllString(msg, "")
	field := ""
	for _, p := range pointers {
		if p[1] != "root" {
			field = p[1]
		}
	}
	if field == "" {
		return reason
	}
	// "/properties/city" → "city"; nested "/properties/a/properties/b" → "a.b".
	parts := strings.Split(strings.TrimPrefix(field, "/"), "/")
	var names []string
	for i := 0; i < len(parts); i++ {
		if parts[i] == "properties" && i+1 < len(parts) {
			names = append(names, parts[i+1])
			i++
		} else if parts[i] == "items" {
			names = append(names, "[]")
		}
	}
	if len(names) == 0 {
		return reason
	}
	return "field " + strings.ReplaceAll(strings.Join(names, "."), ".[]", "[]") + ": " + reason
}
