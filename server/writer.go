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
}

func newBatchWriter(stream flight.DataStreamWriter, schema *arrow.Schema, compression string,
	mem memory.Allocator) *batchWriter {
	opts := []ipc.Option{ipc.WithSchema(schema), ipc.WithAllocator(mem)}
	switch compression {
	case "lz4":
		opts = append(opts, ipc.WithLZ4())
	case "zstd":
		opts = append(opts, ipc.WithZstd())
	}
	pw := &payloadWriter{send: func(fd *flight.FlightData, release func()) error {
		defer release()
		return stream.Send(fd)
	}}
	return &batchWriter{pw: pw, w: ipc.NewWriterWithPayloadWriter(pw, opts...), schema: schema}
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
	buf := make([]byte, 0, 128)
	buf = append(buf, `{"snapshot":`...)
	buf = strconv.AppendInt(buf, b.Snapshot.ID, 10)
	buf = append(buf, `,"commit_seq":`...)
	buf = strconv.AppendInt(buf, b.Snapshot.CommitSeq, 10)
	buf = append(buf, `,"snapshot_complete":`...)
	buf = strconv.AppendBool(buf, b.SnapshotComplete)
	buf = append(buf, `,"timestamp_ms":`...)
	buf = strconv.AppendInt(buf, b.Snapshot.TimestampMs, 10)
	buf = append(buf, `,"rows":`...)
	buf = strconv.AppendInt(buf, b.Record.NumRows(), 10)
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
}

func (p *payloadWriter) Start() error { return nil }

func (p *payloadWriter) WritePayload(payload ipc.Payload) error {
	if p.err != nil {
		return p.err
	}
	meta := payload.Meta()
	p.body.Reset()
	if err := payload.SerializeBody(&p.body); err != nil {
		meta.Release()
		return fmt.Errorf("encode batch: %w", err)
	}
	fd := flight.FlightData{DataHeader: meta.Bytes(), DataBody: p.body.Bytes()}
	if p.messages > 0 {
		fd.AppMetadata = p.appMeta
	}
	if size := len(fd.DataHeader) + len(fd.DataBody) + len(fd.AppMetadata); size > MaxMessageBytes-1024 {
		meta.Release()
		return fmt.Errorf("%w: a batch encodes to %d bytes, more than the %d a client accepts",
			ErrMessageTooLarge, size, MaxMessageBytes)
	}
	if err := p.send(&fd, meta.Release); err != nil {
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
