// Package spark serves a table's changes through a Spark Connect server:
// Spark's own change engines behind the same request as Sluice's native
// engine (issue 22). It answers a whole window — a request in, change
// batches out — so it sits above the file formats, and the engine only
// routes a window to it. No JVM runs in Sluice: a [Session] speaks Spark
// Connect's gRPC protocol (the published protos, compiled into
// internal/connectpb) and reads Spark's Arrow batches.
//
// # Engines and the verdict
//
// Which engine serves a table is a property of the server at the other
// end, found by asking it ([Session.Detect]), never configured:
//
//   - spark_native: Spark 4.2's CHANGES clause, on connectors that
//     implement it (Delta 4.4 on tables with row tracking). The probe plans
//     CHANGES over a real range of the table; a zero-row probe is no
//     capability, since Delta checks row tracking only when planning.
//   - iceberg_changelog_view: Iceberg's create_changelog_view procedure
//     (Spark 4.1 with Iceberg's runtime; there is none for 4.2), probed by
//     reading one row of the whole history: Iceberg refuses a window with
//     a snapshot that adds delete files along with data files (a
//     merge-on-read update), "Delete files are currently not supported in
//     changelog scans".
//   - native: Sluice reads the files itself, when the caller says it can.
//
// Otherwise Detect fails with [ErrNoChangeEngine]. The [Verdict] carries
// the choice, the server's version, whether CHANGES was expected and
// usable, whether it fell back, and why, with Spark's own error text; it
// is logged (info when chosen, warn when it fell back).
//
// # Reading a window
//
// [Session.Read] builds the SQL of the request: the window as versions or
// snapshot ids (timestamps resolved with the table's [Session.History],
// the latest commit pinned when the end is absent, an empty window sent
// nowhere), the projection, and the filter as a structured [Expr] written
// with quoted identifiers and typed literals (no request text reaches
// Spark's parser; [FromFilter] translates Sluice's filter language into
// it, all of it or the conjuncts it can). The filter keeps what SPEC §3
// keeps: an insert whose image matches, a delete whose image does not
// fail to match (a null keeps it), and an update pair whole when either
// image matches — it is evaluated over the pair (a window over the
// commit and the pairing key), never row by row in a WHERE that could
// split it.
// Rows come ordered by commit, deletes first, each update_before right
// before its update_after (Delta pairs by row id, Iceberg by the request's
// identity columns); both dialects of _change_type map onto [Op], an
// unknown one is [ErrUnknownChangeType]; pairs with equal images (no-op
// updates) are cancelled. Batches are the renderable change row
// ([ChangeSchema]) and are forwarded as Spark sends them, with bounded
// memory. Cancelling the read interrupts the Spark operation; a server
// that goes away mid-read ends it with [ErrUnavailable], never with a
// result that looks complete.
//
// # Errors
//
// Errors wrap the package's sentinels ([ErrInvalidRequest],
// [ErrTableNotFound], [ErrVersionNotFound], [ErrHistoryExpired],
// [ErrNoChangeEngine], [ErrQuery], [ErrUnknownChangeType],
// [ErrUnavailable]); a statement Spark refused is an [*Error] with Spark's
// error class and message.
//
// # Differences from the native engine
//
// Spark computes the rows, so the contract holds where Spark's engines
// hold it: Iceberg's changelog view has no commit time (ts comes from the
// snapshots table) and cannot read merge-on-read updates (the verdict
// falls back); without identity columns it pairs nothing. Folding update
// pairs is left to Sluice, and so is netting: Request.NetChanges asks
// Spark's (Delta's netChanges by row id, Iceberg's net_changes by whole
// row), which is not Sluice's per-identity netting, so flightd does not
// set it.
//
// # Tables Spark alone serves
//
// [Session.Describe] gives a table's provider and schema, [Session.History]
// its commits (with their parents) and [Session.ListTables] the tables of
// a namespace: what serving a table Sluice cannot read itself needs.
package spark
