// Package delta reads Delta Lake tables for Sluice's change engine: it
// replays a table's log (JSON commits, classic, multi-part and V2
// checkpoints) per the Delta protocol (PROTOCOL.md in delta-io/delta),
// checks the protocol's reader features, decodes deletion vectors, and
// converts Delta schemas (with column mapping) for the engine.
//
// A Source serves one Delta table through the engine's format seam
// (lake.Table): its versions as commits, each version planned from its
// actions (change data files, added files, deletion vector changes,
// add/remove rewrites, no data change), and its data files decoded by
// physical name or field id with partition values as constants and
// deletion vectors applied.
package delta
