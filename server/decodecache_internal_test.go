package server

import (
	"bytes"
	"context"
	"errors"
	"iter"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
)

// source is a read a test shares through the cache: it yields batches of
// rows rows (ids from 0 on, one snapshot per batch), failing with fail
// after failAfter batches when fail is set, and counts its reads.
type source struct {
	mem       memory.Allocator
	batches   int
	rows      int
	delay     time.Duration
	fail      error
	failAfter int
	// block, when set, makes the read wait for ctx after its batches.
	block bool

	reads    atomic.Int64
	produced atomic.Int64
	running  atomic.Int64
}

var testSchema = arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)

func (s *source) read(ctx context.Context) iter.Seq2[feed.Batch, error] {
	s.reads.Add(1)
	return func(yield func(feed.Batch, error) bool) {
		s.running.Add(1)
		defer s.running.Add(-1)
		for i := range s.batches {
			if s.fail != nil && i == s.failAfter {
				yield(feed.Batch{}, s.fail)
				return
			}
			if s.delay > 0 {
				time.Sleep(s.delay)
			}
			b := array.NewInt64Builder(s.mem)
			for r := range s.rows {
				b.Append(int64(i*s.rows + r))
			}
			col := b.NewArray()
			b.Release()
			rec := array.NewRecordBatch(testSchema, []arrow.Array{col}, int64(s.rows))
			col.Release()
			s.produced.Add(1)
			if !yield(feed.Batch{Record: rec, Snapshot: feed.Snapshot{ID: int64(100 + i), CommitSeq: int64(i + 1)},
				SnapshotComplete: true}, nil) {
				return
			}
		}
		if s.block {
			<-ctx.Done()
			yield(feed.Batch{}, ctx.Err())
		}
	}
}

// readAll reads key through the cache and returns the bodies of the
// batches it was sent.
func readAll(ctx context.Context, c *decodeCache, key string, src *source) ([][]byte, error) {
	var got [][]byte
	err := c.read(ctx, key, src.read, encodeOptions("", src.mem), func(b encodedBatch) error {
		got = append(got, b.msgs[0].body)
		return nil
	})
	return got, err
}

func newSource(t *testing.T, batches, rows int) *source {
	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return &source{mem: mem, batches: batches, rows: rows}
}

// N readers of one key at once: one read, every reader gets every batch,
// the same bytes.
func TestDecodeCacheSingleFlight(t *testing.T) {
	const readers = 20
	src := newSource(t, 5, 100)
	src.delay = 5 * time.Millisecond
	c := newDecodeCache(1<<20, time.Minute, nil)
	var wg sync.WaitGroup
	results := make([][][]byte, readers)
	start := make(chan struct{})
	for i := range readers {
		wg.Go(func() {
			<-start
			got, err := readAll(context.Background(), c, "k", src)
			if err != nil {
				t.Error(err)
			}
			results[i] = got
		})
	}
	close(start)
	wg.Wait()
	if n := src.reads.Load(); n != 1 {
		t.Fatalf("%d reads of the source for %d readers, want 1", n, readers)
	}
	if h, m := c.hits.Load(), c.misses.Load(); h != readers-1 || m != 1 {
		t.Fatalf("hits %d, misses %d; want %d, 1", h, m, readers-1)
	}
	for i, got := range results {
		if len(got) != 5 {
			t.Fatalf("reader %d got %d batches, want 5", i, len(got))
		}
		for j := range got {
			if !bytes.Equal(got[j], results[0][j]) {
				t.Fatalf("reader %d batch %d differs from reader 0's", i, j)
			}
		}
	}
	// Every batch is a different one.
	if bytes.Equal(results[0][0], results[0][1]) {
		t.Fatal("batches 0 and 1 are equal")
	}
}

// An entry serves new readers for the TTL after its fill, and is dropped
// once the TTL has passed.
func TestDecodeCacheTTL(t *testing.T) {
	src := newSource(t, 3, 10)
	c := newDecodeCache(1<<20, 100*time.Millisecond, nil)
	ctx := context.Background()
	for range 2 {
		if _, err := readAll(ctx, c, "k", src); err != nil {
			t.Fatal(err)
		}
	}
	if n := src.reads.Load(); n != 1 {
		t.Fatalf("%d reads within the TTL, want 1", n)
	}
	c.mu.Lock()
	held := c.bytes
	c.mu.Unlock()
	if held == 0 {
		t.Fatal("the cache holds nothing after a read")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.mu.Lock()
		held, entries := c.bytes, len(c.entries)
		c.mu.Unlock()
		if held == 0 && entries == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes, %d entries held past the TTL", held, entries)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := readAll(ctx, c, "k", src); err != nil {
		t.Fatal(err)
	}
	if n := src.reads.Load(); n != 2 {
		t.Fatalf("%d reads after the TTL, want 2", n)
	}
}

// A failed fill fails the readers that shared it, and the next reader
// reads afresh (the error is not cached).
func TestDecodeCacheErrorsNotCached(t *testing.T) {
	src := newSource(t, 4, 10)
	src.fail, src.failAfter, src.delay = errors.New("file gone"), 2, 10*time.Millisecond
	c := newDecodeCache(1<<20, time.Minute, nil)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			got, err := readAll(context.Background(), c, "k", src)
			if !errors.Is(err, src.fail) || len(got) != 2 {
				t.Errorf("got %d batches and %v, want 2 and %v", len(got), err, src.fail)
			}
		})
	}
	wg.Wait()
	src.fail = nil
	got, err := readAll(context.Background(), c, "k", src)
	if err != nil || len(got) != 4 {
		t.Fatalf("after the failure: %d batches, %v; want 4 and no error", len(got), err)
	}
	if n := src.reads.Load(); n != 2 {
		t.Fatalf("%d reads, want 2 (the failed one shared, then a fresh one)", n)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bytes != c.entries["k"].bytes {
		t.Fatalf("the cache holds %d bytes, its one entry %d: the failed fill's batches were kept", c.bytes,
			c.entries["k"].bytes)
	}
}

// Past the byte bound, idle entries go (oldest first); an entry larger
// than the bound is streamed whole to its reader, held only in part, and
// not shared.
func TestDecodeCacheBound(t *testing.T) {
	src := newSource(t, 2, 1000)
	probe := newDecodeCache(1<<30, time.Minute, nil)
	if _, err := readAll(context.Background(), probe, "k", src); err != nil {
		t.Fatal(err)
	}
	one := probe.bytes // two batches
	c := newDecodeCache(one+one/2, time.Minute, nil)
	ctx := context.Background()
	for _, key := range []string{"a", "b", "a"} {
		if _, err := readAll(ctx, c, key, src); err != nil {
			t.Fatal(err)
		}
		if c.bytes > c.max {
			t.Fatalf("the cache holds %d bytes, over its bound of %d", c.bytes, c.max)
		}
	}
	if m := c.misses.Load(); m != 3 {
		t.Fatalf("%d misses, want 3 (b evicted a)", m)
	}

	big := newSource(t, 10, 1000)
	var peak int64
	err := c.read(ctx, "big", big.read, encodeOptions("", big.mem), func(encodedBatch) error {
		c.mu.Lock()
		peak = max(peak, c.bytes)
		c.mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if peak > c.max+one {
		t.Fatalf("a large read held %d bytes, bound %d", peak, c.max)
	}
	if _, err := readAll(ctx, c, "big", big); err != nil {
		t.Fatal(err)
	}
	if n := big.reads.Load(); n != 2 {
		t.Fatalf("the large read was shared (%d reads, want 2)", n)
	}
}

// A fill runs at most cacheLead batches ahead of its reader, and stops
// when its last reader leaves.
func TestDecodeCacheFollowsReaders(t *testing.T) {
	src := newSource(t, 50, 10)
	src.block = true
	c := newDecodeCache(1<<20, time.Minute, nil)
	ctx, cancel := context.WithCancel(context.Background())
	taken := 0
	err := c.read(ctx, "k", src.read, encodeOptions("", src.mem), func(encodedBatch) error {
		taken++
		time.Sleep(2 * time.Millisecond)
		if p := int(src.produced.Load()); p > taken+cacheLead+1 {
			t.Errorf("the fill produced %d batches while the reader took %d", p, taken)
		}
		if taken == 10 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("read ended with %v, want the reader's cancellation", err)
	}
	if n := src.running.Load(); n != 0 {
		t.Fatal("the fill still runs after its last reader left")
	}
	if len(c.entries) != 0 || c.bytes != 0 {
		t.Fatalf("an unfinished fill's entry is kept: %d entries, %d bytes", len(c.entries), c.bytes)
	}
}

// The first stream to send a cached batch sends it as its own: nothing is
// marshaled for sharing (nor charged to the entry) until a second stream
// sends the same batch, so a read no other stream shares never pays for
// it.
func TestSharedWireFirstSendOwn(t *testing.T) {
	charged := int64(0)
	w := &sharedWire{charge: func(n int64) { charged += n }}
	b := encodedBatch{msgs: []encodedMessage{{header: []byte("h"), body: []byte("body")}}, wire: w}
	msgs, ok, err := w.prepare(nil, b, kindChanges, []byte(`{}`))
	if msgs != nil || ok || err != nil || charged != 0 {
		t.Fatalf("first send: %d messages, ok %v, err %v, %d bytes charged; want it sent as the stream's own",
			len(msgs), ok, err, charged)
	}
}
