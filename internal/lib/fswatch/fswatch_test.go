package fswatch

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// counter counts its calls and signals each on a channel.
type counter struct {
	n    atomic.Int64
	call chan struct{}
}

func newCounter() *counter { return &counter{call: make(chan struct{}, 100)} }

func (c *counter) fn() {
	c.n.Add(1)
	select {
	case c.call <- struct{}{}:
	default:
	}
}

func (c *counter) wait(t *testing.T, what string) {
	t.Helper()
	select {
	case <-c.call:
	case <-time.After(5 * time.Second):
		t.Fatalf("no call after %s", what)
	}
}

// quiet fails when c is called within d.
func (c *counter) quiet(t *testing.T, d time.Duration, what string) {
	t.Helper()
	select {
	case <-c.call:
		t.Fatalf("called after %s", what)
	case <-time.After(d):
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestWatchMatchesNames: a subscriber is called for the changes of the
// names it matches only, a burst is coalesced into few calls, and two
// subscribers of one folder share its one watch, removed with the last.
func TestWatchMatchesNames(t *testing.T) {
	dir := t.TempDir()
	w := New(20*time.Millisecond, nil)
	defer w.Close()
	db := func(name string) bool { return name == "catalog.db" || name == "catalog.db-journal" }
	a, b := newCounter(), newCounter()
	stopA, err := w.Watch(dir, db, a.fn)
	if err != nil {
		t.Fatal(err)
	}
	stopB, err := w.Watch(dir+"/", func(name string) bool { return strings.HasSuffix(name, ".json") }, b.fn)
	if err != nil {
		t.Fatal(err)
	}
	if got := w.Watched(); len(got) != 1 {
		t.Fatalf("watched %v, want one folder for both subscribers", got)
	}

	write(t, filepath.Join(dir, "other.db"), "x")
	a.quiet(t, 100*time.Millisecond, "a change of a name it does not match")

	// A burst: a journal created, the file written, the journal removed.
	write(t, filepath.Join(dir, "catalog.db-journal"), "j")
	write(t, filepath.Join(dir, "catalog.db"), "db")
	if err := os.Remove(filepath.Join(dir, "catalog.db-journal")); err != nil {
		t.Fatal(err)
	}
	a.wait(t, "a burst of matching changes")
	time.Sleep(100 * time.Millisecond)
	if n := a.n.Load(); n > 2 {
		t.Fatalf("a burst of 4 events made %d calls, want them coalesced", n)
	}
	if b.n.Load() != 0 {
		t.Fatalf("b called %d times for names it does not match", b.n.Load())
	}

	// A rename into place (how Delta and Hadoop commits land).
	tmp := filepath.Join(dir, "_commit.tmp")
	write(t, tmp, "{}")
	if err := os.Rename(tmp, filepath.Join(dir, "00000000000000000001.json")); err != nil {
		t.Fatal(err)
	}
	b.wait(t, "a file renamed to a matching name")

	stopA()
	stopA() // stop is idempotent
	if got := w.Watched(); len(got) != 1 {
		t.Fatalf("watched %v after one of two subscribers stopped", got)
	}
	n := a.n.Load()
	write(t, filepath.Join(dir, "catalog.db"), "db2")
	b.quiet(t, 100*time.Millisecond, "a change b does not match")
	if a.n.Load() != n {
		t.Fatal("a stopped subscriber was called")
	}
	stopB()
	if got := w.Watched(); len(got) != 0 {
		t.Fatalf("still watched after every subscriber stopped: %v", got)
	}
}

// TestWatchLastEventCalled: however long a burst lasts, a call follows its
// last event (a subscriber that loads on each call sees the final state).
func TestWatchLastEventCalled(t *testing.T) {
	dir := t.TempDir()
	w := New(10*time.Millisecond, nil)
	defer w.Close()
	var last atomic.Int64 // the content seen by the latest call
	c := newCounter()
	path := filepath.Join(dir, "v")
	stop, err := w.Watch(dir, func(string) bool { return true }, func() {
		b, _ := os.ReadFile(path)
		var v int64
		for _, ch := range string(b) {
			v = v*10 + int64(ch-'0')
		}
		last.Store(v)
		c.fn()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	for i := 1; i <= 50; i++ {
		write(t, path, itoa(i))
		time.Sleep(time.Millisecond)
	}
	deadline := time.Now().Add(5 * time.Second)
	for last.Load() != 50 {
		if time.Now().After(deadline) {
			t.Fatalf("the last call saw %d, want the final 50", last.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := c.n.Load(); n >= 50 {
		t.Fatalf("%d calls for 50 writes a millisecond apart: not coalesced", n)
	}
}

func itoa(i int) string {
	s := ""
	for ; i > 0; i /= 10 {
		s = string(rune('0'+i%10)) + s
	}
	return s
}

// TestWatchErrors: a folder that does not exist cannot be watched, and a
// closed watcher watches nothing.
func TestWatchErrors(t *testing.T) {
	w := New(0, nil)
	if _, err := w.Watch(filepath.Join(t.TempDir(), "absent"), func(string) bool { return true }, func() {}); err == nil {
		t.Fatal("watching a folder that does not exist succeeded")
	}
	if len(w.Watched()) != 0 {
		t.Fatal("a failed watch is listed")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Watch(t.TempDir(), func(string) bool { return true }, func() {}); err != ErrClosed {
		t.Fatalf("Watch after Close: %v, want ErrClosed", err)
	}
}

// TestWatchNoLeak: the event loop ends with Close, and the delayed calls
// with their bursts: no goroutine is left.
func TestWatchNoLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 5 {
		dir := t.TempDir()
		w := New(0, nil)
		c := newCounter()
		stop, err := w.Watch(dir, func(string) bool { return true }, c.fn)
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dir, "f"), "x")
		c.wait(t, "a write")
		stop()
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		stop() // after Close: harmless
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines before, %d after:\n%s", before, runtime.NumGoroutine(),
				buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
