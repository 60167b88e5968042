// Package filter is Sluice's row filter language: a SQL boolean expression
// over a table's columns (SPEC §3), parsed and type-checked against a
// lake.Schema (Parse), evaluated on the rows of Arrow record batches with
// SQL's three-valued logic (RowEvaluator), and on column statistics to
// decide whether a file or row group may hold a matching row (MayMatch).
//
// Expressions (Expr) are Sluice's own, over bound columns (field id, full
// name and type) and typed literal values (lake.Value), so that each table
// format translates them for its own pruning without a shared engine.
// The lexer (Lexer) is exported for the Flight SQL parser, which lexes a
// whole statement with the same tokens.
package filter
