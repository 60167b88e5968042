package feed

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/sluicefeed/sluice/lake"
)

// Pairings of a snapshot's deleted and inserted rows into updates
// (Plan.Pairing, SnapshotPlan.Pairing).
const (
	// PairingRowLineage pairs rows by the row ids of a table that keeps
	// row lineage (Iceberg v3, Delta row tracking).
	PairingRowLineage = lake.PairingRowLineage
	// PairingIdentity pairs rows by identity columns.
	PairingIdentity = lake.PairingIdentity
	// PairingNone pairs no rows: a changed row is a delete and an insert.
	PairingNone = lake.PairingNone
)

// RowIDColumn is the image column that "lineage": true adds: a row's id
// (int64, null for a row without one), after the projected columns.
const RowIDColumn = lake.RowIDColumn

// This file pairs a snapshot's deleted and inserted rows by row lineage.
// A format that keeps it reads, for a snapshot it trusts it for
// (lake.Change.Lineage), each row's id and the sequence number (Delta:
// commit version) that last changed it, inheritance applied. Then, within
// the snapshot:
//
//   - a deleted and an inserted row of one id, with the same last-updated
//     sequence, are a carry-over (a copy-on-write rewrite kept the row):
//     they cancel without their values being compared;
//   - a deleted and an inserted row of one id are otherwise an update pair,
//     unless every value is unchanged (a merge-on-read `SET c = c`): then
//     they cancel, as every write mode's no-op does;
//   - rows lineage leaves unmatched (ids that do not meet, a row without an
//     id: a file written before the table kept lineage, a writer that gave
//     a kept row a new id) fall back: rows equal in every data column
//     cancel, and the rest pair by identity columns, or not at all.

// refPair is a deleted and an inserted row that row lineage paired.
type refPair struct{ del, ins rowRef }

// lineageColumns finds the lineage columns in the changed rows' schema;
// ok is false when the reader added none.
func lineageColumns(s *arrow.Schema) (id, seq int, ok bool) {
	ids, seqs := s.FieldIndices(lake.RowIDColumn), s.FieldIndices(lake.RowSeqColumn)
	if len(ids) != 1 || len(seqs) != 1 {
		return 0, 0, false
	}
	return ids[0], seqs[0], true
}

// dataColumns are the columns of s that hold row data: every one but the
// lineage columns (which differ between a kept row's copies when a writer
// gives it a new id, and are never compared as values).
func dataColumns(s *arrow.Schema) []int {
	cols := make([]int, 0, s.NumFields())
	for i, f := range s.Fields() {
		if !lake.IsLineageColumn(f.Name) {
			cols = append(cols, i)
		}
	}
	return cols
}

// pairLineage matches deleted and inserted rows by row id (columns id and
// seq of the changed rows): it cancels carry-overs and unchanged rows,
// returns the update pairs, and the rows it did not match, in order.
func pairLineage(cs *changeSet, dels, ins []rowRef, id, seq int) (restDels, restIns []rowRef, pairs []refPair) {
	if len(dels) == 0 || len(ins) == 0 {
		return dels, ins, nil
	}
	idOf := func(batches []arrow.RecordBatch, ref rowRef, col int) (int64, bool) {
		a := batches[ref.b].Column(col).(*array.Int64)
		if a.IsNull(int(ref.r)) {
			return 0, false
		}
		return a.Value(int(ref.r)), true
	}
	byID := make(map[int64][]int, len(dels))
	for i, ref := range dels {
		if v, ok := idOf(cs.dels, ref, id); ok {
			byID[v] = append(byID[v], i)
		}
	}
	same := newRowComparer(cs.dels, cs.ins, dataColumns(cs.dels[0].Schema()))
	matched := make([]bool, len(dels))
	for _, ref := range ins {
		v, ok := idOf(cs.ins, ref, id)
		q := byID[v]
		if !ok || len(q) == 0 {
			restIns = append(restIns, ref)
			continue
		}
		d := q[0]
		byID[v] = q[1:]
		matched[d] = true
		ds, dok := idOf(cs.dels, dels[d], seq)
		is, iok := idOf(cs.ins, ref, seq)
		switch {
		case dok && iok && ds == is:
			// A carry-over: the row was not updated.
		case same.equal(int(dels[d].b), int(dels[d].r), int(ref.b), int(ref.r)):
			// Re-written with every value unchanged: no change.
		default:
			pairs = append(pairs, refPair{del: dels[d], ins: ref})
		}
	}
	for i, ref := range dels {
		if !matched[i] {
			restDels = append(restDels, ref)
		}
	}
	return restDels, restIns, pairs
}

// withPairs adds the rows of lineage pairs to the remaining deleted and
// inserted rows, in row order, and returns for each inserted row the index
// of the deleted row it pairs with (-1: none).
func withPairs(dels, ins []rowRef, pairs []refPair) ([]rowRef, []rowRef, []int) {
	if len(pairs) == 0 {
		return dels, ins, nil
	}
	less := func(a, b rowRef) int {
		if a.b != b.b {
			return int(a.b - b.b)
		}
		return int(a.r - b.r)
	}
	for _, p := range pairs {
		dels, ins = append(dels, p.del), append(ins, p.ins)
	}
	slices.SortFunc(dels, less)
	slices.SortFunc(ins, less)
	pre := make([]int, len(ins))
	for i := range pre {
		pre[i] = -1
	}
	for _, p := range pairs {
		d, _ := slices.BinarySearchFunc(dels, p.del, less)
		i, _ := slices.BinarySearchFunc(ins, p.ins, less)
		pre[i] = d
	}
	return dels, ins, pre
}

// setPairing records how each snapshot of the plan that may both delete and
// insert rows pairs them, and the window's pairing: row-lineage when every
// such snapshot pairs by row lineage (for a window without one, when the
// table keeps lineage), else the fallback of those that cannot: identity
// with identity columns, else none. A snapshot some of whose rows have no
// row ids reports the fallback (and why, in LineageReason), though its
// rows that have ids still pair by them. A snapshot read from a writer's change
// files (Delta cdc) pairs as the writer recorded and is not counted.
func (p *Plan) setPairing(keeps bool) {
	fallback := PairingNone
	if len(p.Identity) > 0 {
		fallback = PairingIdentity
	}
	p.Pairing = fallback
	if keeps {
		p.Pairing = PairingRowLineage
	}
	counted := false
	for i := range p.Snapshots {
		sp := &p.Snapshots[i]
		if !sp.rewrites || sp.changes != nil {
			continue
		}
		sp.Pairing = fallback
		if sp.lineage && sp.LineageReason == "" {
			sp.Pairing = PairingRowLineage
		}
		switch {
		case !counted:
			p.Pairing, counted = sp.Pairing, true
		case sp.Pairing != PairingRowLineage:
			p.Pairing = sp.Pairing
		}
	}
}

// readsLineage reports whether the plan's read needs the lineage columns:
// for images that carry the row id, or to pair a snapshot's rows.
func (p *Plan) readsLineage() bool {
	if p.Lineage {
		return true
	}
	for _, sp := range p.Snapshots {
		if sp.lineage && sp.rewrites {
			return true
		}
	}
	return false
}

// keepsLineage reports whether the table keeps row lineage.
func keepsLineage(t Table) bool {
	k, ok := t.(lake.LineageKeeper)
	return ok && k.KeepsLineage()
}

// lineageImages checks a request for images with row ids: the table must
// keep row lineage, be read by the native engine, and have no column of
// the row id's name.
func lineageImages(req Request, t Table, end *lake.Schema, routed bool) (bool, error) {
	if !req.Lineage {
		return false, nil
	}
	switch {
	case routed:
		return false, fmt.Errorf("%w: table %s: \"lineage\" needs the native engine, and this window is served "+
			"through Spark (ask for \"backend\": %q)", ErrUnsupported, req.Table, BackendNative)
	case !keepsLineage(t):
		return false, fmt.Errorf("%w: table %s keeps no row lineage (an Iceberg table of format version 3, a "+
			"Delta table with delta.enableRowTracking), so its rows have no ids to add", ErrUnsupported, req.Table)
	case slices.Contains(end.Names(), RowIDColumn):
		return false, fmt.Errorf("%w: table %s has a column named %s, the name of the row id \"lineage\" adds",
			ErrInvalidRequest, req.Table, RowIDColumn)
	}
	return true, nil
}

// withRowID returns a change schema whose images end with the row id.
func withRowID(s *arrow.Schema) *arrow.Schema {
	img := imageType(s)
	image := arrow.StructOf(append(append([]arrow.Field(nil), img.Fields()...), lake.LineageFields()[0])...)
	fields := slices.Clone(s.Fields())
	fields[1].Type, fields[2].Type = image, image
	meta := s.Metadata()
	return arrow.NewSchema(fields, &meta)
}
