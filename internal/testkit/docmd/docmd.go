// Package docmd reads the Markdown of the project's docs for the tests that
// keep them true (docs/PROTOCOL.md): whole files, fenced code blocks by
// their info string, tables by their header row, and code spans.
package docmd

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Read returns the text of the doc at path, failing t when it cannot.
func Read(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the doc %s: %v", path, err)
	}
	return string(b)
}

// Block returns the non-blank lines, trimmed, of the fenced code block of
// doc (read from path) whose info string is exactly info ("sql
// accepted"); an absent, empty or unclosed block fails t.
func Block(t testing.TB, path, doc, info string) []string {
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
					t.Fatalf("%s: the block ```%s is empty", path, info)
				}
				return out
			}
			if strings.TrimSpace(body) != "" {
				out = append(out, strings.TrimSpace(body))
			}
		}
		t.Fatalf("%s: the block ```%s is not closed", path, info)
	}
	t.Fatalf("%s has no ```%s block", path, info)
	return nil
}

// Table returns the rows of the table of doc (read from path) whose header
// row is exactly header, each cell trimmed and stripped of an enclosing
// code span; an absent or empty table, or a row of another width, fails t.
func Table(t testing.TB, path, doc string, header ...string) [][]string {
	t.Helper()
	lines := strings.Split(doc, "\n")
	for i, l := range lines {
		if !slices.Equal(RowCells(l), header) {
			continue
		}
		var rows [][]string
		for _, r := range lines[min(i+2, len(lines)):] {
			if !strings.HasPrefix(strings.TrimSpace(r), "|") {
				break
			}
			cells := RowCells(r)
			if len(cells) != len(header) {
				t.Fatalf("%s: row %q of the table %v has %d cells", path, r, header, len(cells))
			}
			rows = append(rows, cells)
		}
		if len(rows) == 0 {
			t.Fatalf("%s: the table %v has no rows", path, header)
		}
		return rows
	}
	t.Fatalf("%s has no table with the header %v", path, header)
	return nil
}

// RowCells returns the cells of a table row (nil for another line), each
// trimmed and stripped of an enclosing code span.
func RowCells(line string) []string {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") || len(line) < 2 {
		return nil
	}
	cells := strings.Split(line[1:len(line)-1], "|")
	for i, c := range cells {
		cells[i] = Unspan(strings.TrimSpace(c))
	}
	return cells
}

// Unspan strips the backticks of a cell that is one code span.
func Unspan(s string) string {
	if len(s) >= 2 && s[0] == '`' && s[len(s)-1] == '`' && !strings.Contains(s[1:len(s)-1], "`") {
		return s[1 : len(s)-1]
	}
	return s
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

// CodeSpans returns the contents of the code spans of s, in order.
func CodeSpans(s string) []string {
	var out []string
	for _, m := range codeSpan.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}
