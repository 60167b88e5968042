// Package iceberg is Sluice's Iceberg table format: it translates between
// iceberg-go's model and Sluice's own vocabulary (package lake), so that
// nothing above the format seam speaks iceberg-go, and implements the
// seam (lake.Table) for an iceberg-go table (NewTable).
//
// Planning uses iceberg-go: a snapshot's own manifest entries (the files it
// added and removed, cross-checked against its summary), and the scan plan
// of a snapshot (every live data file with the delete files that apply to
// it), cached across loads in a Cache. Data files are decoded with Sluice's
// own Parquet reader (internal/lib/pqread), columns matched by field id or
// the table's name mapping; position deletes, deletion vectors and
// equality deletes are read into the engine's masks (lake.Mask). Files the
// reader cannot match columns in, and files that are not Parquet, are left
// to iceberg-go's scan. Filters are pushed down to manifest and row-group
// statistics (lake.Stats).
package iceberg
