// Package server serves Sluice's change feeds over Arrow Flight, and its
// control actions both as Flight actions (JSON bodies, for pyarrow) and as
// the typed gRPC ControlService (for Go).
//
// A ChangeRequest, in binary protobuf or its JSON form, is the command of a
// FlightDescriptor (GetFlightInfo, GetSchema) or a DoGet ticket. The tickets
// that GetFlightInfo returns pin the planned window, so later commits never
// leak into a read. Every streamed batch carries a JSON app_metadata object
// with at least {"snapshot", "commit_seq", "snapshot_complete"}.
//
// A request with follow, start or consumer is a stream, whose semantics
// (start modes, cursors, expiry, polling, heartbeats) are the engine's
// (feed.Engine.Stream): the server resumes a durable consumer from the
// progress kept in a ProgressStore, and writes the stream's events.
// Server.Shutdown ends follow streams and WatchCommits with Unavailable.
//
// The same Flight service answers Flight SQL (flightsql.go): descriptors,
// tickets and actions holding Flight SQL messages go to arrow-go's
// flightsql router, which serves one query, SELECT ... FROM
// table_changes('ns.table', from, to, options) [WHERE filter] [LIMIT n]
// (sql_parse.go), as a ChangeRequest in the flat layout, prepared
// statements without parameters, and the catalog metadata calls, under the
// same interceptors, grants and limits.
//
// Every call runs one pipeline: its request is decoded once, validated
// once (its filter parsed once), authorized once, then dispatched. Each
// control call has one typed handler; the Flight action (JSON) and the
// ControlService method (protobuf) are thin adapters over it.
//
// Server.ServerOptions returns the interceptors every server of this
// service needs: panic recovery (Internal; the process lives on), metrics
// (Options.Metrics, Prometheus), a log line per refused or failed call,
// authentication (Options.Authenticator; every call but the Flight
// Handshake and health checks), and the Limits on streams, call rates and
// stalled clients. Every call that names a table checks the caller's grant
// (Options.Authorizer), narrows a column-restricted caller's projection,
// and DoGet checks client-held tickets again; listings show only the
// tables the caller may read.
//
// Errors carry the gRPC codes of the contract: InvalidArgument for malformed
// requests, unknown columns, bad filters and windows whose start is not an
// ancestor of their end; NotFound for unknown tables and snapshots;
// FailedPrecondition for expired history ("resync required") and table
// features the engine cannot read; Unavailable when the catalog or storage
// cannot be reached; Unauthenticated, PermissionDenied and
// ResourceExhausted for missing or bad credentials, tables and columns not
// granted, and limits reached. A failure mid-stream ends the stream with an
// error status, never with a clean end.
package server
