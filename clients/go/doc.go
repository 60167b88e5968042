// Package sluice is the Go client of Sluice, a change-feed server for
// lakehouse tables served over Arrow Flight.
//
// Dial a server, then read the row changes of a table over a snapshot
// window as Arrow record batches:
//
//	c, err := sluice.Dial(ctx, "grpc://127.0.0.1:8815", sluice.WithToken(token))
//	if err != nil { ... }
//	defer c.Close()
//
//	r, err := c.Changes(ctx, sluice.ChangeRequest{Table: "demo.orders", FromSnapshot: &from})
//	if err != nil { ... }
//	defer r.Release()
//	for b, err := range r.All() {
//		if err != nil { ... } // the feed is incomplete: do not checkpoint past it
//		// b.Record holds op, before, after, snapshot, ts; b.Meta says which
//		// snapshot made the rows and whether it is complete.
//	}
//
// # Requests and windows
//
// A [ChangeRequest] names the table and the window (from, to]: an absent
// start is the start of the table's history, an absent end the current
// snapshot when the server plans the read. The server pins the planned
// window, so commits that land during a read never leak into it. The
// request also carries the projection, a SQL filter, the identity columns
// and the folding options; see the wire protocol (docs/PROTOCOL.md,
// sections 2, 3, 5 and 8).
//
// # Batches and memory
//
// [Client.Changes] returns a [ChangeReader]. Each [ChangeBatch] holds an
// Arrow record and its [BatchMeta], parsed from the batch's app_metadata.
// The reader owns the record: it is valid until the next call to
// [ChangeReader.Next] (or the next iteration of [ChangeReader.All]) or to
// [ChangeReader.Release]. Call Retain on a record to keep it longer, and
// Release it when done. Always Release the reader, even after an error;
// releasing it early cancels the stream. Memory for decoded batches comes
// from the allocator given with [WithAllocator].
//
// A consumer that checkpoints should do so only at a batch whose
// Meta.SnapshotComplete is true: every change of that snapshot has then
// been seen.
//
// # Following a table
//
// [Client.Subscribe] opens a stream that follows a table: it starts by a
// start mode ([StartLatestFull], the full state as inserts, by default), or
// after the last checkpoint a durable consumer acknowledged with
// [Subscription.Ack] or [Client.Ack], and then sends each new commit's
// changes as it lands. It never ends by itself; when the server restarts it
// ends with codes.Unavailable, and a new Subscribe with the same consumer
// resumes after the last ack (at-least-once: apply changes idempotently).
// With [SubscribeRequest.Reconnect] the Subscription does that itself,
// waiting from 200ms doubling up to MaxBackoff ([DefaultMaxBackoff], 30s,
// as in the Python client) between attempts. [Client.WatchCommits] yields
// only the commit positions.
//
// # Control calls
//
// [Client.CommitSeq] is cheap to poll: it grows with every commit to the
// table's main branch. [Client.ListTables], [Client.Snapshots] and
// [Client.Explain] describe tables, their lineage and how a window would be
// read, over the typed gRPC ControlService.
//
// # Errors
//
// Every failed call of a Client returns an [*Error] (Dial returns plain
// errors for bad addresses and options). An *Error keeps the gRPC status of
// the failure,
// so both [Code] and status.Code from google.golang.org/grpc/status report
// the contract's codes: InvalidArgument for malformed requests, unknown
// columns, bad filters and bad windows; NotFound for unknown tables and
// snapshots; FailedPrecondition when the history is gone and the consumer
// must resync; Unauthenticated and PermissionDenied for credentials;
// Unavailable when the server, its catalog or its storage cannot be reached.
// A stream that fails midway reports its error from [ChangeReader.Err] and
// [ChangeReader.All]; a truncated feed never looks complete. Errors from a
// cancelled or expired context also match context.Canceled or
// context.DeadlineExceeded with errors.Is, and responses the client cannot
// decode match [ErrProtocol].
//
// The client is safe for concurrent use by multiple goroutines; a
// ChangeReader is not.
package sluice
