package filter

import "slices"

// Limits of a client's filter: MaxLength bytes, and MaxDepth parentheses
// and NOTs nested in one another.
const (
	MaxLength = maxFilterLength
	MaxDepth  = maxFilterDepth
)

// ParseColumns checks a filter's syntax, without a schema, and returns the
// columns it refers to as written (nested fields dotted), in order of first
// use: what a caller may authorize before the table is loaded. Errors wrap
// ErrInvalidFilter.
func ParseColumns(text string) ([]string, error) {
	node, err := parseFilter(text)
	if err != nil {
		return nil, err
	}
	var out []string
	add := func(c string) {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	var walk func(n filterNode)
	walk = func(n filterNode) {
		switch n := n.(type) {
		case andNode:
			walk(n.left)
			walk(n.right)
		case orNode:
			walk(n.left)
			walk(n.right)
		case notNode:
			walk(n.child)
		case cmpNode:
			add(n.column)
		case inNode:
			add(n.column)
		case nullNode:
			add(n.column)
		}
	}
	walk(node)
	return out, nil
}

// Clip shortens a client's text to the length the filter's error messages
// quote of a token, for other messages that quote what a client sent.
func Clip(s string) string { return clip(s) }
