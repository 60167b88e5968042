package bench

// UpsertParams are the statements of the Delta and Paimon workloads: Files
// appends of Rows rows in all (ids 1 to Rows, in order), then one commit
// that updates Updates rows from UpdateFirst on (amount + 1, priority + 1)
// and deletes the Deletes rows after them, all in the first append's
// rows. Buckets is the Paimon primary-key table's fixed bucket count (0
// for Delta, which has none).
//
// Delta: the commit is one MERGE, which rewrites the first append's file.
// Paimon: two tables of the reference schema's 11 columns; the append
// table (no primary key, bucket -1) gets the appends only, the
// primary-key table (primary key id, deduplicate, deletes through
// rowkind.field, so it has a twelfth column op) the commit too, as an
// upsert.
type UpsertParams struct {
	Rows        int `json:"rows"`
	Files       int `json:"files"`
	Buckets     int `json:"buckets,omitempty"`
	UpdateFirst int `json:"update_first"`
	Updates     int `json:"updates"`
	Deletes     int `json:"deletes"`
}

// newUpsertParams returns the statements of a workload of rows rows in
// files appends: 1% of them updated and 0.1% deleted, in the first
// append's rows.
func newUpsertParams(rows, files, buckets int) UpsertParams {
	return UpsertParams{Rows: rows, Files: files, Buckets: buckets, UpdateFirst: rows/10 + 1,
		Updates: max(rows/100, 1), Deletes: max(rows/1000, 1)}
}
