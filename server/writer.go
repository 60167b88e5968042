package server

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

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
}

func newBatchWriter(stream flight.DataStreamWriter, schema *arrow.Schema, compression string,
	mem memory.Allocator) *batchWriter {
	opts := append([]ipc.Option{ipc.WithSchema(schema)}, encodeOptions(compression, mem)...)
	pw := &payloadWriter{send: func(fd *flight.FlightData, release func()) error {
		defer release()
		return stream.Send(fd)
	}}
	return &batchWriter{pw: pw, w: ipc.NewWriterWithPayloadWriter(pw, opts...), schema: schema, mem: mem}
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
)

// write sends one batch of the given kind with its app_metadata. It does
// not release the batch.
func (bw *batchWriter) write(b feed.Batch, kind int) error {
	bw.pw.appMeta = appMetadata(b, kind)
	defer func() { bw.pw.appMeta = nil }()
	before := bw.pw.bytes
	err := bw.w.Write(b.Record)
	if err == nil {
		bw.metrics.streamed(bw.table, b.Record.NumRows(), bw.pw.bytes-before)
	}
	return err
}

// writeEncoded sends one batch encoded beforehand (shared with other
// streams, see decodeCache) with this stream's app_metadata for it. The
// schema goes first when the stream has sent nothing yet.
func (bw *batchWriter) writeEncoded(b encodedBatch, kind int) error {
	if bw.pw.messages == 0 {
		schema := ipc.GetSchemaPayload(bw.schema, bw.mem)
		meta := schema.Meta()
		schema.Release()
		if err := bw.pw.sendMessage(meta.Bytes(), nil, nil, meta.Release); err != nil {
			return err
		}
	}
	meta := appMetadataOf(b.snapshot, b.complete, b.rows, kind)
	var sent int64
	for _, m := range b.msgs {
		if err := bw.pw.sendMessage(m.header, m.body, meta, func() {}); err != nil {
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
	send    func(fd *flight.FlightData, release func()) error
	appMeta []byte
	body    bytes.Buffer
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
	p.body.Reset()
	if err := payload.SerializeBody(&p.body); err != nil {
		meta.Release()
		return fmt.Errorf("encode batch: %w", err)
	}
	var appMeta []byte
	if p.messages > 0 {
		appMeta = p.appMeta
	}
	return p.sendMessage(meta.Bytes(), p.body.Bytes(), appMeta, meta.Release)
}

// sendMessage sends one IPC message with its app_metadata, and then calls
// release (see send).
func (p *payloadWriter) sendMessage(header, body, appMeta []byte, release func()) error {
	if p.err != nil {
		release()
		return p.err
	}
	fd := flight.FlightData{DataHeader: header, DataBody: body, AppMetadata: appMeta}
	if size := len(fd.DataHeader) + len(fd.DataBody) + len(fd.AppMetadata); size > MaxMessageBytes-1024 {
		release()
		return fmt.Errorf("%w: a batch encodes to %d bytes, more than the %d a client accepts",
			ErrMessageTooLarge, size, MaxMessageBytes)
	}
	if err := p.send(&fd, release); err != nil {
		p.err = err
		return err
	}
	p.messages++
	p.bytes += int64(len(fd.DataBody))
	return nil
}

func (p *payloadWriter) Close() error { return nil }

// newWriter returns the batch writer of a stream of the table's changes:
// with the stall timeout of the server's limits and its metrics.
func (s *Server) newWriter(stream flight.DataStreamWriter, table string, schema *arrow.Schema,
	compression string) *batchWriter {
	w := newBatchWriter(stream, schema, compression, s.mem)
	if s.limits.l.StallTimeout > 0 {
		w.guard = newStallGuard(stream, s.limits.l.StallTimeout)
		w.pw.send = w.guard.send
	}
	w.metrics, w.table = s.metrics, table
	return w
}
