package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/sluicefeed/sluice/feed"
)

// Defaults of the decode cache (see Options.DecodeCacheBytes).
const (
	// DefaultDecodeCacheBytes is the default bound of the encoded batches
	// the decode cache holds (flightd's --decode-cache-bytes).
	DefaultDecodeCacheBytes = 32 << 20
	// DefaultDecodeCacheTTL is how long, by default, a read's encoded
	// batches are served to new readers once the read has ended.
	DefaultDecodeCacheTTL = 30 * time.Second
	// cacheLead is how many batches a fill decodes ahead of the reader it
	// follows (the fastest one; the slowest once its entry is too large
	// to keep whole).
	cacheLead = 2
)

// errEntryDropped ends a fill whose entry was dropped.
var errEntryDropped = errors.New("decode cache: entry dropped")

// encodedMessage is one Arrow IPC message: its flatbuffer header and body.
type encodedMessage struct{ header, body []byte }

// encodedBatch is a change batch encoded once, without the app_metadata
// that each stream renders for itself (see batchWriter.writeEncoded). Its
// bytes are never written once it is made: every stream sends the same.
type encodedBatch struct {
	msgs     []encodedMessage
	rows     int64
	snapshot feed.Snapshot
	complete bool
	size     int64
	// wire is the batch's messages marshaled once for the streams that
	// may send them so (see sharedStream).
	wire *sharedWire
}

// sharedWire is a batch's messages marshaled once, with their
// app_metadata, by the first stream that sends them, and sent as they are
// by every stream that may (see batchWriter.writeEncoded): a decode
// cache's readers of a batch send the same bytes, since the app_metadata
// of a batch depends on the batch and the kind of read alone, and the kind
// is part of the entry's key. The marshaled bytes are Go memory that gRPC
// holds while it writes them, and no one writes again. charge, set by the
// cache, adds their size to the entry's bytes.
type sharedWire struct {
	// sends counts the calls of prepare: the first stream to send the
	// batch sends it as its own (its body without a copy); marshaling it
	// once for all pays from the second on, and a read no other stream
	// shares (a large one, past the cache's bound) never pays it.
	sends atomic.Int32
	once  sync.Once
	kind  int
	msgs  []outMsg
	err   error
	// extra is the size charged to the entry; guarded by the cache's mu.
	extra  int64
	charge func(int64)
}

// prepare returns the batch's messages marshaled by ss's codec with the
// app_metadata meta of a read of kind kind, marshaling them on its second
// call; ok is false on the first call and when the batch was marshaled for
// another kind of read (then the stream sends its own).
func (w *sharedWire) prepare(ss grpc.ServerStream, b encodedBatch, kind int, meta []byte) (msgs []outMsg, ok bool,
	err error) {
	if w.sends.Add(1) == 1 {
		return nil, false, nil
	}
	w.once.Do(func() {
		w.kind = kind
		var size int64
		for _, m := range b.msgs {
			fd := &flight.FlightData{DataHeader: m.header, DataBody: m.body, AppMetadata: meta}
			if w.err = checkSize(fd); w.err != nil {
				return
			}
			pm := &grpc.PreparedMsg{}
			if w.err = pm.Encode(ss, fd); w.err != nil {
				w.err = fmt.Errorf("marshal batch: %w", w.err)
				return
			}
			n := int64(proto.Size(fd))
			w.msgs = append(w.msgs, outMsg{prepared: pm, size: n})
			size += n
		}
		if w.charge != nil {
			w.charge(size)
		}
	})
	return w.msgs, w.kind == kind, w.err
}

// decodeCache shares the reads of windows and full states among the
// streams that read the same one at about the same time: the first reader
// of a key starts a fill, which reads and encodes the batches once; every
// reader of the key (the first included) streams the encoded batches from
// the entry, at its own pace, while the fill goes on. A fill decodes at
// most cacheLead batches ahead of its fastest reader, so that reads stay
// driven by their clients. New readers join an entry while it fills and
// for the TTL after its fill ended; an entry is held while readers read it
// and until then. The entries together hold at most max bytes: past it,
// idle entries go first, oldest first; an entry that still does not fit
// takes no new readers and keeps only the batches its slowest reader has
// not sent yet. A fill that fails fails its readers alone (later readers
// read afresh), and one that every reader left is stopped.
type decodeCache struct {
	max     int64
	ttl     time.Duration
	metrics *Metrics

	// mu guards entries, bytes, and the fields of every entry but key,
	// cancel and stopped.
	mu      sync.Mutex
	entries map[string]*cacheEntry
	bytes   int64

	// hits counts the readers that joined an entry; misses the readers
	// that started a fill.
	hits, misses atomic.Int64
}

// cacheEntry is one read's encoded batches.
type cacheEntry struct {
	key string
	// batches holds the batches from number base on (the ones before it
	// were dropped, see trim); bytes is their size.
	batches []encodedBatch
	base    int
	bytes   int64
	// done is set when the fill ended, with err (nil: every batch is in)
	// and at filledAt.
	done     bool
	err      error
	filledAt time.Time
	// shared is true while new readers may join the entry; dropped once
	// its batches are let go.
	shared, dropped bool
	// large is set when the entry did not fit the cache: it keeps the
	// batches its slowest reader has not sent, and its fill follows that
	// reader.
	large bool
	// readers are the entry's readers, each with the number of the next
	// batch it sends.
	readers map[*cacheReader]struct{}
	// changed is closed (and replaced) when a batch is added or the fill
	// ends; moved when a reader moves on or leaves.
	changed, moved chan struct{}
	// expiry drops the entry once its TTL has passed and nobody reads it.
	expiry *time.Timer

	cancel  context.CancelFunc
	stopped chan struct{}
}

// cacheReader is a reader of an entry.
type cacheReader struct{ pos int }

func newDecodeCache(maxBytes int64, ttl time.Duration, metrics *Metrics) *decodeCache {
	if ttl <= 0 {
		ttl = DefaultDecodeCacheTTL
	}
	return &decodeCache{max: maxBytes, ttl: ttl, metrics: metrics, entries: map[string]*cacheEntry{}}
}

// broadcast wakes whoever waits on *ch.
func broadcast(ch *chan struct{}) {
	close(*ch)
	*ch = make(chan struct{})
}

// read streams the batches of the read named key to send, from the
// cache's entry of key, which read (given a context that ends when every
// reader of the entry has left) and encode (IPC options opts) fill when
// the entry is new. It returns send's error, the fill's, or ctx's.
func (c *decodeCache) read(ctx context.Context, key string, read func(context.Context) iter.Seq2[feed.Batch, error],
	opts []ipc.Option, send func(encodedBatch) error) error {
	e, r := c.join(key, read, opts)
	defer c.leave(e, r)
	for {
		b, ok, err := c.next(ctx, e, r)
		if !ok {
			return err
		}
		if err := send(b); err != nil {
			return err
		}
		c.mu.Lock()
		r.pos++
		broadcast(&e.moved)
		if e.large {
			c.trim(e)
		}
		c.mu.Unlock()
	}
}

// join makes a reader of the entry of key: the shared one, while it fills
// or its TTL has not passed, else a new one whose fill it starts.
func (c *decodeCache) join(key string, read func(context.Context) iter.Seq2[feed.Batch, error],
	opts []ipc.Option) (*cacheEntry, *cacheReader) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := &cacheReader{}
	if e := c.entries[key]; e != nil {
		if !e.done || time.Since(e.filledAt) < c.ttl {
			e.readers[r] = struct{}{}
			c.hits.Add(1)
			c.metrics.decodeCacheHit()
			return e, r
		}
		c.unshare(e)
		if len(e.readers) == 0 {
			c.drop(e)
		}
	}
	c.misses.Add(1)
	c.metrics.decodeCacheMiss()
	ctx, cancel := context.WithCancel(context.Background())
	e := &cacheEntry{key: key, shared: true, readers: map[*cacheReader]struct{}{r: {}},
		changed: make(chan struct{}), moved: make(chan struct{}), cancel: cancel, stopped: make(chan struct{})}
	c.entries[key] = e
	go c.fill(ctx, e, read, opts)
	return e, r
}

// next returns the reader's next batch, waiting for the fill to add it;
// ok false when there is none: the fill ended (err is its error), or ctx
// did (err is ctx's).
func (c *decodeCache) next(ctx context.Context, e *cacheEntry, r *cacheReader) (b encodedBatch, ok bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if i := r.pos - e.base; i < len(e.batches) {
			return e.batches[i], true, nil
		}
		if e.done {
			return encodedBatch{}, false, e.err
		}
		changed := e.changed
		c.mu.Unlock()
		select {
		case <-ctx.Done():
			c.mu.Lock()
			return encodedBatch{}, false, ctx.Err()
		case <-changed:
		}
		c.mu.Lock()
	}
}

// leave ends a reader. The last reader of an entry stops its fill when it
// has not ended (and waits for it), else leaves the entry to its TTL.
func (c *decodeCache) leave(e *cacheEntry, r *cacheReader) {
	c.mu.Lock()
	delete(e.readers, r)
	broadcast(&e.moved)
	stop := false
	switch {
	case len(e.readers) > 0:
		if e.large {
			c.trim(e)
		}
	case !e.done:
		c.unshare(e)
		c.drop(e)
		stop = true
	case !e.shared || e.err != nil:
		c.drop(e)
	default:
		left := c.ttl - time.Since(e.filledAt)
		if left <= 0 {
			c.unshare(e)
			c.drop(e)
		} else if e.expiry == nil {
			e.expiry = time.AfterFunc(left, func() { c.expire(e) })
		}
	}
	c.mu.Unlock()
	if stop {
		e.cancel()
		<-e.stopped
	}
}

// expire drops an entry whose TTL has passed, unless it has readers (the
// last of them drops it).
func (c *decodeCache) expire(e *cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.expiry = nil
	if len(e.readers) > 0 || !e.done {
		return
	}
	if left := c.ttl - time.Since(e.filledAt); left > 0 {
		e.expiry = time.AfterFunc(left, func() { c.expire(e) })
		return
	}
	c.unshare(e)
	c.drop(e)
}

// unshare takes new readers off the entry.
func (c *decodeCache) unshare(e *cacheEntry) {
	if c.entries[e.key] == e {
		delete(c.entries, e.key)
	}
	e.shared = false
}

// drop lets go of the entry's batches.
func (c *decodeCache) drop(e *cacheEntry) {
	if e.expiry != nil {
		e.expiry.Stop()
		e.expiry = nil
	}
	c.bytes -= e.bytes
	e.batches, e.bytes, e.dropped = nil, 0, true
	c.metrics.decodeCacheBytes(c.bytes)
}

// trim lets go of the batches of a large entry that every reader has sent.
func (c *decodeCache) trim(e *cacheEntry) {
	low := e.base + len(e.batches)
	for r := range e.readers {
		low = min(low, r.pos)
	}
	n := low - e.base
	if n <= 0 {
		return
	}
	for i := range n {
		size := e.batches[i].size
		if w := e.batches[i].wire; w != nil {
			size += w.extra
		}
		e.bytes -= size
		c.bytes -= size
		e.batches[i] = encodedBatch{}
	}
	e.batches, e.base = e.batches[n:], low
	c.metrics.decodeCacheBytes(c.bytes)
}

// fill reads and encodes the entry's batches.
func (c *decodeCache) fill(ctx context.Context, e *cacheEntry, read func(context.Context) iter.Seq2[feed.Batch, error],
	opts []ipc.Option) {
	defer close(e.stopped)
	err := func() (err error) {
		defer func() {
			if v := recover(); v != nil {
				err = &feed.PanicError{Value: v, Stack: debug.Stack()}
			}
		}()
		for b, err := range read(ctx) {
			if err != nil {
				return err
			}
			eb, err := encodeBatch(b, opts)
			b.Record.Release()
			if err != nil {
				return err
			}
			if err := c.add(ctx, e, eb); err != nil {
				return err
			}
		}
		return nil
	}()
	c.mu.Lock()
	defer c.mu.Unlock()
	e.done, e.err, e.filledAt = true, err, time.Now()
	if err != nil {
		c.unshare(e)
		if len(e.readers) == 0 {
			c.drop(e)
		}
	}
	broadcast(&e.changed)
}

// add adds a batch to the entry once the reader its fill follows is
// fewer than cacheLead batches behind, and keeps the cache within its
// bound.
func (c *decodeCache) add(ctx context.Context, e *cacheEntry, b encodedBatch) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if e.dropped {
			return errEntryDropped
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		end := e.base + len(e.batches)
		follow := -1
		for r := range e.readers {
			if follow < 0 || (e.large && r.pos < follow) || (!e.large && r.pos > follow) {
				follow = r.pos
			}
		}
		if follow >= 0 && end-follow < cacheLead {
			break
		}
		moved := e.moved
		c.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-moved:
		}
		c.mu.Lock()
	}
	if b.wire != nil {
		w := b.wire
		w.charge = func(n int64) {
			c.mu.Lock()
			defer c.mu.Unlock()
			if e.dropped {
				return
			}
			w.extra = n
			e.bytes += n
			c.bytes += n
			c.metrics.decodeCacheBytes(c.bytes)
		}
	}
	e.batches = append(e.batches, b)
	e.bytes += b.size
	c.bytes += b.size
	c.bound(e)
	c.metrics.decodeCacheBytes(c.bytes)
	broadcast(&e.changed)
	return nil
}

// bound keeps the cache within its bound after e grew: it drops idle
// entries, oldest first, and when that is not enough makes e large.
func (c *decodeCache) bound(e *cacheEntry) {
	for c.bytes > c.max {
		var oldest *cacheEntry
		for _, x := range c.entries {
			if x != e && x.done && len(x.readers) == 0 && (oldest == nil || x.filledAt.Before(oldest.filledAt)) {
				oldest = x
			}
		}
		if oldest == nil {
			break
		}
		c.unshare(oldest)
		c.drop(oldest)
	}
	if c.bytes > c.max && !e.large {
		c.unshare(e)
		e.large = true
		c.trim(e)
	}
}

// encodeBatch encodes a batch as one IPC record batch message.
func encodeBatch(b feed.Batch, opts []ipc.Option) (encodedBatch, error) {
	p, err := ipc.GetRecordBatchPayload(b.Record, opts...)
	if err != nil {
		return encodedBatch{}, fmt.Errorf("encode batch: %w", err)
	}
	defer p.Release()
	meta := p.Meta()
	defer meta.Release()
	// A buffer of the body's size: a growing one, cleared and copied at
	// each doubling, cost a large read more CPU than the rest of the
	// encoding (BenchmarkDoGetWindow).
	body, err := encodeBody(&p, func(n int) []byte { return make([]byte, 0, n) })
	if err != nil {
		return encodedBatch{}, err
	}
	m := encodedMessage{header: bytes.Clone(meta.Bytes()), body: body}
	return encodedBatch{msgs: []encodedMessage{m}, rows: b.Record.NumRows(), snapshot: b.Snapshot,
		complete: b.SnapshotComplete, size: int64(len(m.header) + len(m.body)), wire: &sharedWire{}}, nil
}

// hasDictionary reports whether a schema has a dictionary-encoded field
// (at any depth): its batches' IPC messages depend on the dictionaries a
// stream sent before, so they are not shared.
func hasDictionary(schema *arrow.Schema) bool {
	var has func(t arrow.DataType) bool
	has = func(t arrow.DataType) bool {
		switch t := t.(type) {
		case *arrow.DictionaryType:
			return true
		case arrow.NestedType:
			for _, f := range t.Fields() {
				if has(f.Type) {
					return true
				}
			}
		}
		return false
	}
	for _, f := range schema.Fields() {
		if has(f.Type) {
			return true
		}
	}
	return false
}

// sharedRead is a planned read (a window or a full state) a stream writes.
type sharedRead struct {
	// key names the read's batches (see feed.Plan.ReadKey); "" for a read
	// not to be shared.
	key    string
	schema *arrow.Schema
	kind   int
	read   func(context.Context) iter.Seq2[feed.Batch, error]
}

// windowRead is the read of a planned window.
func (s *Server) windowRead(p *feed.Plan) sharedRead {
	return sharedRead{key: p.ReadKey(), schema: p.Schema(), kind: kindChanges,
		read: func(ctx context.Context) iter.Seq2[feed.Batch, error] { return s.engine.Read(ctx, p) }}
}

// stateRead is the read of a planned full state.
func (s *Server) stateRead(sp *feed.StatePlan) sharedRead {
	return sharedRead{key: sp.ReadKey(), schema: sp.Schema(), kind: kindState,
		read: func(ctx context.Context) iter.Seq2[feed.Batch, error] { return s.engine.ReadState(ctx, sp) }}
}

// writeRead writes a planned read's batches to w: through the decode cache
// when the server has one and the read may be shared (the key names the
// compression too: the cache holds encoded bytes), else read by itself.
// complete, when set, is called for each batch that completes a snapshot.
func (s *Server) writeRead(ctx context.Context, w *batchWriter, rd sharedRead, compression string,
	complete func()) error {
	if s.cache == nil || rd.key == "" || hasDictionary(rd.schema) {
		for b, err := range rd.read(ctx) {
			if err != nil {
				return err
			}
			if b.SnapshotComplete && complete != nil {
				complete()
			}
			err := w.write(b, rd.kind)
			b.Record.Release()
			if err != nil {
				return err
			}
		}
		return nil
	}
	key := rd.key + "/" + compression + "/" + strconv.Itoa(rd.kind)
	return s.cache.read(ctx, key, rd.read, encodeOptions(compression, s.mem), func(b encodedBatch) error {
		if b.complete && complete != nil {
			complete()
		}
		return w.writeEncoded(b, rd.kind)
	})
}
