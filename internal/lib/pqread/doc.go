// Package pqread reads a Parquet data file into Arrow record batches of a
// target schema, for both table formats Sluice reads (Iceberg and Delta).
//
// The caller says per target column where its values come from (a Column):
// the file's column with a Parquet field id (Iceberg, Delta column mapping
// in id mode) or a name (Delta's physical name, or the logical one without
// column mapping), a constant (a Delta partition value), or nothing (a
// column added after the file was written: nulls). Struct fields match by
// the same rules, recursively. Read decodes only the leaf columns the
// target needs, with arrow-go's pqarrow, and converts each to its target
// type by widening rules that lose no value (int32 to int64, float32 to
// float64, a decimal's precision, date to timestamp, a timestamp's unit
// and zone, INT96 timestamps, the string and binary variants, dictionary
// encoding to plain); a conversion without a rule, or one that would
// change a value, fails with ErrCast naming the column and both types.
//
// Each batch comes with the file position of its first row (its row index
// in the whole file, whatever row groups were skipped), which is what
// Iceberg position deletes and Delta deletion vectors address. A batch
// never spans a row group that is not read.
//
// The file is untrusted input. Read runs the decoder in the calling
// goroutine (or, with Options.Parallelism, in goroutines it owns and waits
// for) and turns a panic of the decoder into ErrCorrupt naming the file
// and the column; it checks the byte ranges the footer gives before
// reading them, and the structure of what the decoder returns, so that a
// corrupt file fails with ErrCorrupt instead of yielding a batch that
// panics downstream. The callback takes over each batch and releases it.
package pqread
