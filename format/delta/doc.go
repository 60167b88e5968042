// Package delta reads Delta Lake tables for Sluice's change engine: it
// replays a table's log (JSON commits, classic, multi-part and V2
// checkpoints) per the Delta protocol (PROTOCOL.md in delta-io/delta),
// checks the protocol's reader features, decodes deletion vectors, and
// converts Delta schemas (with column mapping) for the engine.
package delta
