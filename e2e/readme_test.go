package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sluicefeed/sluice/internal/testkit/docmd"
)

// readmeFirstSnippet returns the Python of README.md's first snippet (the
// `.tmp/venv/bin/python -c '...'` command of "The two commands") and the
// README's first fenced block, the output it shows at its top.
func readmeFirstSnippet(t *testing.T) (script, shown string) {
	t.Helper()
	doc := docmd.Read(t, "../README.md")
	const head = "\n## The two commands\n"
	i := strings.Index(doc, head)
	if i < 0 {
		t.Fatalf("README.md has no %q", strings.TrimSpace(head))
	}
	top, sec := doc[:i], doc[i+len(head):]
	if j := strings.Index(sec, "\n## "); j >= 0 {
		sec = sec[:j]
	}
	const cmd = ".tmp/venv/bin/python -c '"
	k := strings.Index(sec, cmd)
	if k < 0 {
		t.Fatalf("README.md's %q runs no %s...'", strings.TrimSpace(head), cmd)
	}
	script = sec[k+len(cmd):]
	end := strings.Index(script, "'")
	if end < 0 {
		t.Fatalf("README.md's first snippet is not closed:\n%s", sec[k:])
	}
	script = script[:end]

	k = strings.Index(top, "\n```")
	if k < 0 {
		t.Fatal("README.md has no fenced block before " + strings.TrimSpace(head))
	}
	block := top[k+1:]
	block = block[strings.Index(block, "\n")+1:]
	end = strings.Index(block, "```\n")
	if end < 0 {
		t.Fatal("README.md's first fenced block is not closed")
	}
	return script, block[:end]
}

// TestReadmeFirstSnippet runs README.md's first snippet, as is but for the
// address, against the demo table and checks that it prints exactly the
// history the README shows at its top (trailing spaces aside).
func TestReadmeFirstSnippet(t *testing.T) {
	py := python(t)
	script, shown := readmeFirstSnippet(t)
	if !strings.Contains(script, readmeURI) {
		t.Fatalf("README.md's first snippet does not connect to %s:\n%s", readmeURI, script)
	}
	srv, _ := startDemo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	script = strings.ReplaceAll(script, readmeURI, `"`+srv.URI()+`"`)
	var stderr strings.Builder
	cmd := exec.CommandContext(ctx, py, "-c", script)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("README.md's first snippet: %v\n%s%s", err, out, stderr.String())
	}
	trim := func(s string) string {
		lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
		for i, l := range lines {
			lines[i] = strings.TrimRight(l, " ")
		}
		return strings.Join(lines, "\n")
	}
	if trim(string(out)) != trim(shown) {
		t.Fatalf("README.md's first snippet printed\n%s\nwhere the README shows\n%s", out, shown)
	}
}
