// Package lake is the vocabulary of lakehouse tables every layer of Sluice
// shares: the types of columns (Type and its implementations), fields with
// their ids (Field), schemas (Schema) and typed values (Value), as the
// engine, the filter language and every table format speak them.
//
// Formats convert their own schemas into these types (format/iceberg,
// format/delta); nothing in this package knows a format. The types follow
// the Iceberg specification, whose type system is a superset of what the
// engine serves, and print in its spelling ("long", "decimal(9, 2)",
// "list<string>"). Schema.ToArrow gives the Arrow schema the engine serves
// for a schema.
//
// The package also declares the format seam: what the change engine
// (package feed) needs of a table format, and nothing more. A Table gives
// its commits in lineage order (Commit, History), a Planner per window
// gives each commit's file-level change (Change: data files added and
// removed as FileDiff with their deletion Masks before and after, change
// files as ChangeFile, appended files as LiveFiles, whether data changed
// at all), and those values read their files into Arrow batches, by
// column identity, for one Read. Packages format/iceberg, format/delta and
// format/paimon implement it; the engine imports none of them. The sentinel errors formats
// report (ErrResyncRequired, ErrUnreadable, ...) are declared here too,
// and re-exported by feed.
package lake
