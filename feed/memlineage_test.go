package feed_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
	"github.com/sluicefeed/sluice/lake"
)

// TestEngineRowLineageFallbacks pairs by row lineage on the in-memory
// format, where the commits say what writers do: a table without
// identifier fields whose rewrite keeps one row (same id and sequence:
// carry-over), updates another (same id, new sequence), re-writes a third
// unchanged under a new id (a writer that reassigns ids: it cancels by
// value), updates the id column of a fourth and inserts a fifth; then a
// commit whose lineage cannot be trusted (equality deletes: the new
// version has a new id) falls back to identity columns, or to a delete and
// an insert without them. Each is read in memory and spilling.
func TestEngineRowLineageFallbacks(t *testing.T) {
	schema, err := lake.NewSchema(0, nil,
		lake.Field{ID: 1, Name: "id", Type: lake.LongType{}, Required: true},
		lake.Field{ID: 2, Name: "name", Type: lake.StringType{}})
	if err != nil {
		t.Fatal(err)
	}
	a := &memFile{path: "a", rows: []memRow{{1, "a"}, {2, "b"}, {3, "c"}, {5, "e"}},
		ids: []int64{10, 11, 12, 13}, seqs: []int64{1, 1, 1, 1}}
	b := &memFile{path: "b", rows: []memRow{{1, "a"}, {2, "B"}, {3, "c"}, {50, "e"}, {4, "d"}},
		ids: []int64{10, 11, 20, 13, 21}, seqs: []int64{1, 2, 2, 2, 2}}
	c := &memFile{path: "c", rows: []memRow{{1, "a"}, {2, "B2"}, {3, "c"}, {50, "e"}, {4, "d"}},
		ids: []int64{10, 30, 20, 13, 21}, seqs: []int64{1, 3, 2, 2, 2}}
	rewrite := func(from, to *memFile) []memDiff {
		return []memDiff{{file: from, before: []uint32{}, absentAfter: true},
			{file: to, absentBefore: true, after: []uint32{}}}
	}
	const eqReason = "the snapshot adds equality deletes"
	tbl := &memTable{schema: schema, lineage: true, commits: []memCommit{
		{commit: linearCommit(1), appended: []*memFile{a}, strategy: lake.StrategyAppend},
		{commit: linearCommit(2), diffs: rewrite(a, b), strategy: lake.StrategyRewrite, lineage: true},
		{commit: linearCommit(3), diffs: rewrite(b, c), strategy: lake.StrategyEqualityDelete, lineageReason: eqReason},
	}}
	row := func(id int64, name string) map[string]any { return map[string]any{"id": id, "name": name} }
	withID := func(r map[string]any, rowID int64) map[string]any { r[feed.RowIDColumn] = rowID; return r }
	snap2 := []change{
		{Op: feed.OpUpdateBefore, Before: row(2, "b"), Snapshot: 2},
		{Op: feed.OpUpdateAfter, After: row(2, "B"), Snapshot: 2},
		{Op: feed.OpUpdateBefore, Before: row(5, "e"), Snapshot: 2},
		{Op: feed.OpUpdateAfter, After: row(50, "e"), Snapshot: 2},
		{Op: feed.OpInsert, After: row(4, "d"), Snapshot: 2},
	}
	snap3 := []change{
		{Op: feed.OpDelete, Before: row(2, "B"), Snapshot: 3},
		{Op: feed.OpInsert, After: row(2, "B2"), Snapshot: 3},
	}
	at := func(v int64) *int64 { return &v }
	tests := []struct {
		name     string
		req      feed.Request
		pairing  string
		pairings []string // per snapshot of the window
		want     []change
	}{
		{"lineage", feed.Request{FromSnapshot: at(1), ToSnapshot: at(2)}, feed.PairingRowLineage,
			[]string{feed.PairingRowLineage}, snap2},
		{"lineage before identity", feed.Request{FromSnapshot: at(1), ToSnapshot: at(2), Identity: []string{"id"}},
			feed.PairingRowLineage, []string{feed.PairingRowLineage}, snap2},
		{"row ids in the images", feed.Request{FromSnapshot: at(1), ToSnapshot: at(2), Lineage: true},
			feed.PairingRowLineage, []string{feed.PairingRowLineage}, []change{
				{Op: feed.OpUpdateBefore, Before: withID(row(2, "b"), 11), Snapshot: 2},
				{Op: feed.OpUpdateAfter, After: withID(row(2, "B"), 11), Snapshot: 2},
				{Op: feed.OpUpdateBefore, Before: withID(row(5, "e"), 13), Snapshot: 2},
				{Op: feed.OpUpdateAfter, After: withID(row(50, "e"), 13), Snapshot: 2},
				{Op: feed.OpInsert, After: withID(row(4, "d"), 21), Snapshot: 2},
			}},
		{"untrusted: delete and insert", feed.Request{FromSnapshot: at(2)}, feed.PairingNone,
			[]string{feed.PairingNone}, snap3},
		{"untrusted: identity", feed.Request{FromSnapshot: at(2), Identity: []string{"id"}},
			feed.PairingIdentity, []string{feed.PairingIdentity}, []change{
				{Op: feed.OpUpdateBefore, Before: row(2, "B"), Snapshot: 3},
				{Op: feed.OpUpdateAfter, After: row(2, "B2"), Snapshot: 3},
			}},
		{"window with a fallback", feed.Request{FromSnapshot: at(1)}, feed.PairingNone,
			[]string{feed.PairingRowLineage, feed.PairingNone}, append(slices.Clone(snap2), snap3...)},
	}
	for _, budget := range []int64{0, 1} {
		for _, tc := range tests {
			t.Run(fmt.Sprintf("%s/budget_%d", tc.name, budget), func(t *testing.T) {
				mem := memory.NewCheckedAllocator(arrowpool.Shared())
				defer mem.AssertSize(t, 0)
				eng := feed.New(memTables{tbl}, feed.Options{Allocator: mem, MemoryBudget: budget, SpillDir: t.TempDir()})
				req := tc.req
				req.Table = tableName
				p, got, _ := read(t, eng, req)
				sameChanges(t, got, tc.want)
				if p.Pairing != tc.pairing {
					t.Errorf("plan pairing %q, want %q", p.Pairing, tc.pairing)
				}
				var pairings []string
				for _, sp := range p.Snapshots {
					pairings = append(pairings, sp.Pairing)
					if sp.ID == 3 && sp.LineageReason != eqReason {
						t.Errorf("snapshot 3: lineage reason %q, want %q", sp.LineageReason, eqReason)
					}
				}
				if !slices.Equal(pairings, tc.pairings) {
					t.Errorf("snapshot pairings %q, want %q", pairings, tc.pairings)
				}
			})
		}
	}
}
