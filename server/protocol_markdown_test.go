package server

// The reading of docs/PROTOCOL.md for the tests that keep it true: its
// fenced blocks, its tables, and the JSON shapes it writes.

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func readProtocolDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(protocolDoc)
	if err != nil {
		t.Fatalf("the wire contract: %v", err)
	}
	return string(b)
}

// docBlock returns the non-blank lines of the fenced code block whose info
// string is exactly info ("json accepted").
func docBlock(t *testing.T, doc, info string) []string {
	t.Helper()
	lines := strings.Split(doc, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != "```"+info {
			continue
		}
		var out []string
		for _, body := range lines[i+1:] {
			if strings.TrimSpace(body) == "```" {
				if len(out) == 0 {
					t.Fatalf("%s: the block ```%s is empty", protocolDoc, info)
				}
				return out
			}
			if strings.TrimSpace(body) != "" {
				out = append(out, strings.TrimSpace(body))
			}
		}
		t.Fatalf("%s: the block ```%s is not closed", protocolDoc, info)
	}
	t.Fatalf("%s has no ```%s block", protocolDoc, info)
	return nil
}

// docTable returns the rows of the table whose header row is exactly
// header, each cell trimmed and stripped of an enclosing code span.
func docTable(t *testing.T, doc string, header ...string) [][]string {
	t.Helper()
	lines := strings.Split(doc, "\n")
	for i, l := range lines {
		if !slices.Equal(docRowCells(l), header) {
			continue
		}
		var rows [][]string
		for _, r := range lines[min(i+2, len(lines)):] {
			if !strings.HasPrefix(strings.TrimSpace(r), "|") {
				break
			}
			cells := docRowCells(r)
			if len(cells) != len(header) {
				t.Fatalf("%s: row %q of the table %v has %d cells", protocolDoc, r, header, len(cells))
			}
			rows = append(rows, cells)
		}
		if len(rows) == 0 {
			t.Fatalf("%s: the table %v has no rows", protocolDoc, header)
		}
		return rows
	}
	t.Fatalf("%s has no table with the header %v", protocolDoc, header)
	return nil
}

func docRowCells(line string) []string {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") || len(line) < 2 {
		return nil
	}
	cells := strings.Split(line[1:len(line)-1], "|")
	for i, c := range cells {
		cells[i] = docUnspan(strings.TrimSpace(c))
	}
	return cells
}

// docUnspan strips the backticks of a cell that is one code span.
func docUnspan(s string) string {
	if len(s) >= 2 && s[0] == '`' && s[len(s)-1] == '`' && !strings.Contains(s[1:len(s)-1], "`") {
		return s[1 : len(s)-1]
	}
	return s
}

var docCodeSpan = regexp.MustCompile("`([^`]+)`")

// docCodeSpans returns the contents of the code spans of s, in order.
func docCodeSpans(s string) []string {
	var out []string
	for _, m := range docCodeSpan.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
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
