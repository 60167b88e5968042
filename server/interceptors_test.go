package server_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicefeed/sluice/server"
)

// logBuffer collects a server's log lines while it serves.
type logBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines returns the lines logged so far with msg as their message.
func (b *logBuffer) lines(msg string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, l := range strings.Split(b.buf.String(), "\n") {
		if strings.Contains(l, "msg="+msg+" ") || strings.Contains(l, `msg="`+msg+`"`) {
			out = append(out, l)
		}
	}
	return out
}

// TestClientCancelIsLoggedAsCancelled: a stream its client cancels ends
// with a "call cancelled" line at debug, not as a failed call.
func TestClientCancelIsLoggedAsCancelled(t *testing.T) {
	var logs logBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f := startWith(t, 4, 3000, 100, nil, func(o *server.Options) { o.Logger = log })
	tickets := []string{`{"table": "shop.orders"}`, `{"table": "shop.orders", "follow": true}`}
	for _, tk := range tickets {
		_ = f.cancelAfterFirstBatch(t, context.Background(), tk)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(logs.lines("call cancelled")) < len(tickets) {
		if time.Now().After(deadline) {
			t.Fatalf("%d \"call cancelled\" lines, want %d:\n%s", len(logs.lines("call cancelled")), len(tickets),
				strings.Join(logs.lines("call"), "\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, l := range logs.lines("call cancelled") {
		if !strings.Contains(l, "level=DEBUG") || !strings.Contains(l, "code=Canceled") || !strings.Contains(l, "DoGet") {
			t.Errorf("cancelled call logged as %q", l)
		}
	}
	for _, l := range logs.lines("call") {
		if strings.Contains(l, "code=Canceled") {
			t.Errorf("a cancelled call logged as a call that ended: %q", l)
		}
	}
	if l := logs.lines("call failed"); len(l) > 0 {
		t.Errorf("a cancelled call logged as failed: %q", l)
	}
}
