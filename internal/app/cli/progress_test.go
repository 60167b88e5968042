package cli

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a buffer the progress goroutine writes while the test
// reads.
type lockedBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestProgress(t *testing.T) {
	t.Run("a file: drawn at once, then a summary", func(t *testing.T) {
		var w lockedBuffer
		p := startProgress(&w, true, true)
		p.rows.Add(1234)
		p.bytes.Add(5_600_000)
		p.snapshot.Store(42)
		time.Sleep(3 * progressEvery)
		p.stop(true, "out.parquet")
		got := w.String()
		if !strings.Contains(got, "\r\x1b[K") || !strings.Contains(got, "1234 rows  5.6 MB  ") ||
			!strings.Contains(got, "rows/s") || !strings.Contains(got, "MB/s  snapshot 42") {
			t.Fatalf("no progress line: %q", got)
		}
		if !strings.Contains(got, "\r\x1b[K1234 rows, 5.6 MB to out.parquet in ") || !strings.HasSuffix(got, "/s)\n") {
			t.Fatalf("no summary after the cleared line: %q", got)
		}
	})
	t.Run("stdout: nothing within the first second", func(t *testing.T) {
		var w lockedBuffer
		p := startProgress(&w, true, false)
		p.rows.Add(10)
		time.Sleep(2 * progressEvery)
		p.stop(true, "")
		if got := w.String(); got != "" {
			t.Fatalf("a read shorter than a second drew %q", got)
		}
	})
	t.Run("a failed read: the line cleared, no summary", func(t *testing.T) {
		var w lockedBuffer
		p := startProgress(&w, true, true)
		time.Sleep(2 * progressEvery)
		p.stop(false, "out.csv")
		if got := w.String(); !strings.HasSuffix(got, "\r\x1b[K") || strings.Contains(got, "out.csv") {
			t.Fatalf("%q", got)
		}
	})
	t.Run("off", func(t *testing.T) {
		var w lockedBuffer
		p := startProgress(&w, false, true)
		time.Sleep(2 * progressEvery)
		p.stop(true, "out.csv")
		if got := w.String(); got != "" {
			t.Fatalf("%q", got)
		}
	})
}
