package server

// The reading of docs/PROTOCOL.md for the tests that keep it true: its
// fenced blocks, its tables, and the JSON shapes it writes.

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sluicefeed/sluice/internal/testkit/docmd"
)

func readProtocolDoc(t *testing.T) string { t.Helper(); return docmd.Read(t, protocolDoc) }

// docBlock returns the non-blank lines of the fenced code block whose info
// string is exactly info.
func docBlock(t *testing.T, doc, info string) []string {
	t.Helper()
	return docmd.Block(t, protocolDoc, doc, info)
}

// docTable returns the rows of the table whose header row is exactly
// header, each cell trimmed and stripped of an enclosing code span.
func docTable(t *testing.T, doc string, header ...string) [][]string {
	t.Helper()
	return docmd.Table(t, protocolDoc, doc, header...)
}

// docShape is a JSON object's keys as the contract writes them:
// {"table", "parent"?, "snapshots": [{"snapshot", ...}]}. A key marked ?
// may be left out; a key followed by an object, or a list of one, has
// objects of that shape as its value.
type docShape struct {
	keys     []string
	optional map[string]bool
	nested   map[string]*docShape
}

var docShapeToken = regexp.MustCompile(`\s*("[a-z_]+"|[{}\[\]:,?])`)

// parseDocShape parses a shape; text after it is an error.
func parseDocShape(s string) (*docShape, error) {
	var toks []string
	for rest := s; strings.TrimSpace(rest) != ""; {
		m := docShapeToken.FindStringSubmatchIndex(rest)
		if m == nil || m[0] != 0 {
			return nil, fmt.Errorf("unexpected %q", rest)
		}
		toks, rest = append(toks, rest[m[2]:m[3]]), rest[m[1]:]
	}
	p := &docShapeParser{toks: toks}
	sh, err := p.object()
	if err == nil && p.i != len(toks) {
		err = fmt.Errorf("unexpected %q after the object", toks[p.i])
	}
	return sh, err
}

type docShapeParser struct {
	toks []string
	i    int
}

func (p *docShapeParser) next() string {
	if p.i == len(p.toks) {
		return ""
	}
	p.i++
	return p.toks[p.i-1]
}

func (p *docShapeParser) peek() string {
	if p.i == len(p.toks) {
		return ""
	}
	return p.toks[p.i]
}

func (p *docShapeParser) object() (*docShape, error) {
	if tok := p.next(); tok != "{" {
		return nil, fmt.Errorf("want {, found %q", tok)
	}
	sh := &docShape{optional: map[string]bool{}, nested: map[string]*docShape{}}
	if p.peek() == "}" {
		p.next()
		return sh, nil
	}
	for {
		tok := p.next()
		if !strings.HasPrefix(tok, `"`) {
			return nil, fmt.Errorf("want a key, found %q", tok)
		}
		key := strings.Trim(tok, `"`)
		sh.keys = append(sh.keys, key)
		if p.peek() == "?" {
			p.next()
			sh.optional[key] = true
		}
		if p.peek() == ":" {
			p.next()
			list := p.peek() == "["
			if list {
				p.next()
			}
			inner, err := p.object()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
			if list && p.next() != "]" {
				return nil, fmt.Errorf("%s: want ]", key)
			}
			sh.nested[key] = inner
		}
		switch tok := p.next(); tok {
		case ",":
		case "}":
			return sh, nil
		default:
			return nil, fmt.Errorf("want , or }, found %q", tok)
		}
	}
}

// check reports how a JSON value (decoded into any) departs from the
// shape: keys it lacks, keys the shape does not document.
func (sh *docShape) check(path string, v any) []string {
	obj, ok := v.(map[string]any)
	if !ok {
		return []string{fmt.Sprintf("%s is %T, not an object", path, v)}
	}
	var out []string
	for _, k := range sh.keys {
		if _, ok := obj[k]; !ok && !sh.optional[k] {
			out = append(out, fmt.Sprintf("%s lacks the key %q", path, k))
		}
	}
	for k, val := range obj {
		if !slices.Contains(sh.keys, k) {
			out = append(out, fmt.Sprintf("%s has the key %q, which the contract does not document", path, k))
			continue
		}
		inner := sh.nested[k]
		if inner == nil || val == nil {
			continue
		}
		if list, ok := val.([]any); ok {
			for i, e := range list {
				out = append(out, inner.check(fmt.Sprintf("%s.%s[%d]", path, k, i), e)...)
			}
		} else {
			out = append(out, inner.check(path+"."+k, val)...)
		}
	}
	return out
}
