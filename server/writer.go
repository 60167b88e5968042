package server

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/sluicefeed/sluice/feed"
)

// MaxMessageBytes is the largest FlightData message the server sends: the
// default receive limit of gRPC clients (4 MiB), so that every client can
// read every batch without raising its limits.
const MaxMessageBytes = 4 << 20

// batchWriter writes change batches to a DoGet stream as Arrow IPC
// messages, each record batch with its JSON app_metadata.
type batchWriter struct {
	pw     *payloadWriter
	w      *ipc.Writer
	schema *arrow.Schema
	// metrics and table, when set, count what is streamed.
	metrics *Metrics
	table   string
	// guard, when set, sends the messages; release stops it.
	guard *stallGuard
	mem   memory.Allocator
	// shared, when set, is the stream as gRPC's: it sends the batches
	// of the decode cache as marshaled once for every stream (see
	// sharedStream).
	shared grpc.ServerStream
}

// outMsg is a message for gRPC: a FlightData that the stream's codec
// marshals, or one marshaled once for many streams (prepared); size is
// its marshaled size.
type outMsg struct {
	fd       *flight.FlightData
	prepared *grpc.PreparedMsg
	size     int64
	// owned is set when fd's body belongs to the message alone (see
	// ownedData); pooled, when set, is that body's buffer from
	// bodyPool.
	owned  bool
	pooled *[]byte
}

// bodyPool holds the buffers of the IPC bodies a stream sends without
// copying (see ownedData).
var bodyPool = mem.DefaultBufferPool()

// sender returns the function that hands a stream's messages to gRPC: a
// message whose body it owns goes as an ownedData (which flightCodec
// sends without copying the body) when the stream is gRPC's.
func sender(stream flight.DataStreamWriter) func(outMsg) error {
	ss, _ := stream.(grpc.ServerStream)
	return func(m outMsg) error {
		switch {
		case m.prepared != nil:
			return ss.SendMsg(m.prepared)
		case m.owned && ss != nil:
			var pooled *pooledBody
			if m.pooled != nil {
				pooled = &pooledBody{buf: m.pooled}
			}
			return ss.SendMsg(ownedData{FlightData: m.fd, pooled: pooled})
		}
		return stream.Send(m.fd)
	}
}

// sharedStream returns the stream as gRPC's when it may send a message
// that another stream marshaled (a grpc.PreparedMsg, whose bytes are the
// message's wire form as the codec and compressor of the stream that
// prepared it made them): when it marshals with gRPC's proto codec (its
// content-subtype is that of every gRPC client, "" or "proto"; both of
// flightd's gRPC servers take the default codecs) and compresses nothing
// (the client asked for no gRPC compression). Else nil: it sends its own.
func sharedStream(stream flight.DataStreamWriter) grpc.ServerStream {
	ss, ok := stream.(grpc.ServerStream)
	if !ok {
		return nil
	}
	ts, ok := grpc.ServerTransportStreamFromContext(ss.Context()).(interface {
		SendCompress() string
		ContentSubtype() string
	})
	if !ok || ts.SendCompress() != "" || (ts.ContentSubtype() != "" && ts.ContentSubtype() != "proto") {
		return nil
	}
	return ss
}

func newBatchWriter(stream flight.DataStreamWriter, schema *arrow.Schema, compression string,
	mem memory.Allocator) *batchWriter {
	opts := append([]ipc.Option{ipc.WithSchema(schema)}, encodeOptions(compression, mem)...)
	send := sender(stream)
	pw := &payloadWriter{send: func(m outMsg, release func()) error {
		defer release()
		return send(m)
	}}
	_, pw.own = stream.(grpc.ServerStream)
	return &batchWriter{pw: pw, w: ipc.NewWriterWithPayloadWriter(pw, opts...), schema: schema, mem: mem,
		shared: sharedStream(stream)}
}

// encodeOptions are the IPC options that encode a stream's batches with
// the request's compression.
func encodeOptions(compression string, mem memory.Allocator) []ipc.Option {
	opts := []ipc.Option{ipc.WithAllocator(mem)}
	switch compression {
	case "lz4":
		opts = append(opts, ipc.WithLZ4())
	case "zstd":
		opts = append(opts, ipc.WithZstd())
	}
	return opts
}

// Kinds of batches, marked in their app_metadata.
const (
	// kindChanges: the changes of a window.
	kindChanges = iota
	// kindState: rows of a full state, as inserts ("full_state": true).
	kindState
	// kindHeartbeat: a 0-row batch that says a follow stream is alive and
	// where it is ("heartbeat": true, snapshot_complete false).
	kindHeartbeat
	// kindGap: the 0-row batch of a stream that lost its place
	// ("resync": true, with the earliest and current snapshots; see
	// gapMetadata).
	kindGap
	// kindCoalesced: the changes of a coalesced window, whose commits
	// between its start and its snapshot are gone ("coalesced_from"; see
	// coalescedMetadata).
	kindCoalesced
)

// write sends one batch of the given kind with its app_metadata. It does
// not release the batch.
func (bw *batchWriter) write(b feed.Batch, kind int) error {
	return bw.writeWith(b, appMetadata(b, kind))
}

// writeCoalesced sends one batch of a coalesced window (see
// feed.StrategyCoalesced): its app_metadata is a change batch's with
// "coalesced_from", the snapshot whose state the changes run from (the
// commits between it and the batch's snapshot are gone). It does not
// release the batch.
func (bw *batchWriter) writeCoalesced(b feed.Batch, c feed.Coalesced) error {
	return bw.writeWith(b, coalescedMetadata(b, c))
}

// coalescedMetadata renders the app_metadata of a coalesced window's batch.
func coalescedMetadata(b feed.Batch, c feed.Coalesced) []byte {
	meta := appMetadata(b, kindCoalesced)
	meta = append(meta[:len(meta)-1], `,"coalesced_from":`...)
	meta = strconv.AppendInt(meta, c.From, 10)
	return append(meta, '}')
}

// writeWith sends one batch with the app_metadata meta.
func (bw *batchWriter) writeWith(b feed.Batch, meta []byte) error {
	bw.pw.appMeta = meta
	defer func() { bw.pw.appMeta = nil }()
	before := bw.pw.bytes
	err := bw.w.Write(b.Record)
	if err == nil {
		bw.metrics.streamed(bw.table, b.Record.NumRows(), bw.pw.bytes-before)
	}
	return err
}

// writeGap sends the 0-row batch of a stream's gap (feed.StreamGap) with
// its app_metadata: "resync": true, the lost snapshot as "snapshot",
// "earliest_snapshot" and "current_snapshot". It does not release the
// batch.
func (bw *batchWriter) writeGap(b feed.Batch, g feed.Gap) error {
	bw.pw.appMeta = gapMetadata(b, g)
	defer func() { bw.pw.appMeta = nil }()
	return bw.w.Write(b.Record)
}

// gapMetadata renders the app_metadata of a gap's batch.
func gapMetadata(b feed.Batch, g feed.Gap) []byte {
	meta := appMetadataOf(b.Snapshot, false, b.Record.NumRows(), kindGap)
	meta = meta[:len(meta)-1]
	meta = append(meta, `,"earliest_snapshot":`...)
	meta = strconv.AppendInt(meta, g.Earliest, 10)
	meta = append(meta, `,"current_snapshot":`...)
	meta = strconv.AppendInt(meta, g.Current, 10)
	return append(meta, '}')
}

// writeEncoded sends one batch encoded beforehand (shared with other
// streams, see decodeCache) with this stream's app_metadata for it. The
// schema goes first when the stream has sent nothing yet.
func (bw *batchWriter) writeEncoded(b encodedBatch, kind int) error {
	if bw.pw.messages == 0 {
		schema := ipc.GetSchemaPayload(bw.schema, bw.mem)
		meta := schema.Meta()
		schema.Release()
		if err := bw.pw.sendMessage(meta.Bytes(), nil, nil, nil, meta.Release); err != nil {
			return err
		}
	}
	meta := appMetadataOf(b.snapshot, b.complete, b.rows, kind)
	var sent int64
	if bw.shared != nil && b.wire != nil {
		msgs, ok, err := b.wire.prepare(bw.shared, b, kind, meta)
		if err != nil {
			return err
		}
		if ok {
			for i, m := range msgs {
				if err := bw.pw.sendOut(m, len(b.msgs[i].body), func() {}); err != nil {
					return err
				}
				sent += int64(len(b.msgs[i].body))
			}
			bw.metrics.streamed(bw.table, b.rows, sent)
			return nil
		}
	}
	for _, m := range b.msgs {
		if err := bw.pw.sendMessage(m.header, m.body, meta, nil, nil); err != nil {
			return err
		}
		sent += int64(len(m.body))
	}
	bw.metrics.streamed(bw.table, b.rows, sent)
	return nil
}

// close ends the stream of IPC messages; the schema is sent even when no
// batch was.
func (bw *batchWriter) close() error { return bw.w.Close() }

// release frees what the writer holds beyond the stream: it joins the stall
// guard's sender goroutine (see stallGuard.stop). Call it when the stream
// ends, also after an error.
func (bw *batchWriter) release() {
	if bw.guard != nil {
		bw.guard.stop()
	}
}

// sent returns the number of messages and body bytes sent.
func (bw *batchWriter) sent() (messages int, bytes int64) { return bw.pw.messages, bw.pw.bytes }

// appMetadata renders a batch's app_metadata JSON object.
func appMetadata(b feed.Batch, kind int) []byte {
	return appMetadataOf(b.Snapshot, b.SnapshotComplete, b.Record.NumRows(), kind)
}

// appMetadataOf renders the app_metadata of a batch of rows rows of
// snapshot snap.
func appMetadataOf(snap feed.Snapshot, complete bool, rows int64, kind int) []byte {
	buf := make([]byte, 0, 128)
	buf = append(buf, `{"snapshot":`...)
	buf = strconv.AppendInt(buf, snap.ID, 10)
	buf = append(buf, `,"commit_seq":`...)
	buf = strconv.AppendInt(buf, snap.CommitSeq, 10)
	buf = append(buf, `,"snapshot_complete":`...)
	buf = strconv.AppendBool(buf, complete)
	buf = append(buf, `,"timestamp_ms":`...)
	buf = strconv.AppendInt(buf, snap.TimestampMs, 10)
	buf = append(buf, `,"rows":`...)
	buf = strconv.AppendInt(buf, rows, 10)
	switch kind {
	case kindState:
		buf = append(buf, `,"full_state":true`...)
	case kindHeartbeat:
		buf = append(buf, `,"heartbeat":true`...)
	case kindGap:
		buf = append(buf, `,"resync":true`...)
	}
	return append(buf, '}')
}

// payloadWriter sends IPC payloads as FlightData messages. It attaches the
// current app_metadata to every message but the first, which is the schema,
// so that no metadata travels without its batch; and it refuses any message
// larger than MaxMessageBytes rather than send one a client cannot read.
type payloadWriter struct {
	// send sends a message and then calls release, which frees the
	// message's header; it may return before the message has left (see
	// stallGuard), and then calls release once it has.
	send    func(m outMsg, release func()) error
	appMeta []byte
	// own is set when the stream sends bodies without copying them (see
	// sender): each body is then a buffer of its own from bodyPool, else
	// the reused body.
	own  bool
	body bytes.Buffer
	// err is the error of a failed send: every later payload fails with
	// it, and leaves the body alone, which a send that was given up may
	// still be reading.
	err      error
	messages int
	bytes    int64
	// payloads counts the payloads of the IPC writer: its first is the
	// schema, which is dropped when the stream sent it already (see
	// batchWriter.writeEncoded).
	payloads int
}

func (p *payloadWriter) Start() error { return nil }

func (p *payloadWriter) WritePayload(payload ipc.Payload) error {
	if p.err != nil {
		return p.err
	}
	p.payloads++
	if p.payloads == 1 && p.messages > 0 {
		return nil
	}
	meta := payload.Meta()
	var appMeta []byte
	if p.messages > 0 {
		appMeta = p.appMeta
	}
	if p.own {
		var buf *[]byte
		body, err := encodeBody(&payload, func(n int) []byte {
			buf = bodyPool.Get(n)
			return *buf
		})
		if err != nil {
			meta.Release()
			return err
		}
		*buf = body
		return p.sendMessage(meta.Bytes(), body, appMeta, buf, meta.Release)
	}
	p.body.Reset()
	if err := payload.SerializeBody(&p.body); err != nil {
		meta.Release()
		return fmt.Errorf("encode batch: %w", err)
	}
	return p.sendMessage(meta.Bytes(), p.body.Bytes(), appMeta, nil, meta.Release)
}

// encodeBody writes a payload's body into one buffer of its size, which
// alloc(size) gives (its length is ignored): measured first, so that the
// buffer is neither grown nor copied.
func encodeBody(p *ipc.Payload, alloc func(size int) []byte) ([]byte, error) {
	var size byteCounter
	_ = p.SerializeBody(&size)
	body := byteAppender(alloc(int(size))[:0])
	if err := p.SerializeBody(&body); err != nil {
		return nil, fmt.Errorf("encode batch: %w", err)
	}
	return body, nil
}

// byteCounter counts the bytes written to it.
type byteCounter int

func (c *byteCounter) Write(b []byte) (int, error) {
	*c += byteCounter(len(b))
	return len(b), nil
}

// byteAppender appends what is written to it.
type byteAppender []byte

func (a *byteAppender) Write(b []byte) (int, error) {
	*a = append(*a, b...)
	return len(b), nil
}

// sendMessage sends one IPC message with its app_metadata, and then calls
// release (see send). A body no one writes once it is sent (a pooled one,
// or one of the decode cache's: owned) is sent without a copy when the
// stream can.
func (p *payloadWriter) sendMessage(header, body, appMeta []byte, pooled *[]byte, release func()) error {
	if p.err != nil {
		release()
		return p.err
	}
	fd := &flight.FlightData{DataHeader: header, DataBody: body, AppMetadata: appMeta}
	if err := checkSize(fd); err != nil {
		release()
		return err
	}
	owned := pooled != nil || (p.own && release == nil)
	if release == nil {
		release = func() {}
	}
	return p.sendOut(outMsg{fd: fd, size: int64(proto.Size(fd)), owned: owned, pooled: pooled}, len(body), release)
}

// checkSize refuses a message larger than a client accepts.
func checkSize(fd *flight.FlightData) error {
	if size := len(fd.DataHeader) + len(fd.DataBody) + len(fd.AppMetadata); size > MaxMessageBytes-1024 {
		return fmt.Errorf("%w: a batch encodes to %d bytes, more than the %d a client accepts",
			ErrMessageTooLarge, size, MaxMessageBytes)
	}
	return nil
}

// sendOut sends a message of body bytes of IPC body, and then calls
// release (see send).
func (p *payloadWriter) sendOut(m outMsg, body int, release func()) error {
	if p.err != nil {
		release()
		return p.err
	}
	if err := p.send(m, release); err != nil {
		p.err = err
		return err
	}
	p.messages++
	p.bytes += int64(body)
	return nil
}

func (p *payloadWriter) Close() error { return nil }

// newWriter returns the batch writer of a stream of the table's changes:
// with the stall timeout of the server's limits and its metrics.
func (s *Server) newWriter(stream flight.DataStreamWriter, table string, schema *arrow.Schema,
	compression string) *batchWriter {
	w := newBatchWriter(stream, schema, compression, s.mem)
	if s.limits.l.StallTimeout > 0 {
		w.guard = newStallGuard(sender(stream), s.limits.l.StallTimeout)
		w.pw.send = w.guard.send
	}
	w.metrics, w.table = s.metrics, table
	return w
}
