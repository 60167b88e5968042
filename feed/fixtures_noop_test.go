package feed_test

// "Unchanged rows are no change" (docs/PROTOCOL.md): within one snapshot,
// a row deleted and inserted again with every value unchanged is no
// change, whatever the write mode. Spark's merge-on-read UPDATE and MERGE
// write a position delete (v2) or deletion vector (v3) and a new copy for
// every row they match, changed or not (spark_mor_noop_v2,
// spark_mor_noop_v3); copy-on-write writers carry the unchanged rows of a
// rewritten file over. Neither may show in the feed.

import (
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
)

// TestFixturesUnchangedRowsAreNoChange reads every fixture snapshot by
// snapshot, and its whole (retained) history, with identity columns and
// without (the table's identifier fields taken out), plain, folded and as
// net changes, and checks that
//   - no snapshot's feed holds an update pair (or folded update) whose two
//     images are equal, nor a delete and an insert of the same row;
//   - a snapshot the writer reads as unchanged from its parent (a
//     statement rewriting rows to their own values, UPDATE t SET c = c, or
//     a compaction) emits no row at all.
func TestFixturesUnchangedRowsAreNoChange(t *testing.T) {
	variants := []struct {
		name string
		// noIdentity loads the table without its identifier fields, so
		// that a request without identity columns has none.
		noIdentity bool
		req        feed.Request
	}{
		{"identity", false, feed.Request{Identity: []string{"id"}}},
		{"identity_folded", false, feed.Request{Identity: []string{"id"}, FoldUpdates: true}},
		{"identity_net", false, feed.Request{Identity: []string{"id"}, NetChanges: true}},
		{"no_identity", true, feed.Request{}},
		{"no_identity_net", true, feed.Request{NetChanges: true}},
	}
	noops := 0
	for _, name := range fxNames {
		t.Run(name, func(t *testing.T) {
			noops += fxCheckNoopStatements(t, fxLoad(t, name))
			for _, v := range variants {
				t.Run(v.name, func(t *testing.T) {
					fx := fxLoad(t, name)
					if v.noIdentity {
						fx = fxLoadWithoutIdentifierFields(t, name)
					}
					mem := memory.NewCheckedAllocator(arrowpool.Shared())
					defer mem.AssertSize(t, 0)
					eng := feed.New(fxTables{fx.name: fx.tbl}, feed.Options{Allocator: mem, MaxBatchRows: 5})
					snaps := fx.exp.Snapshots
					read := func(t *testing.T, from, to int) []fxChange {
						t.Helper()
						req := v.req
						if from >= 0 {
							req.FromSnapshot = &snaps[from].SnapshotID
						}
						req.ToSnapshot = &snaps[to].SnapshotID
						p, changes := fx.readFeed(t, eng, req, fx.schema(t, snaps[to]))
						if !v.noIdentity && len(p.Identity) == 0 {
							t.Fatalf("plan without identity for a request with identity %v", v.req.Identity)
						}
						if v.noIdentity && len(p.Identity) > 0 {
							t.Fatalf("plan with identity %v for a table without identifier fields", p.Identity)
						}
						return changes
					}
					start := fx.start()
					for i := start + 1; i < len(snaps); i++ {
						s := snaps[i]
						t.Run(fmt.Sprintf("%02d_%s", i+1, s.Operation), func(t *testing.T) {
							changes := read(t, i-1, i)
							for _, msg := range fxUnchangedRows(changes, false) {
								t.Errorf("snapshot %d (%s): %s", s.SnapshotID, s.Statement, msg)
							}
							end := fx.schema(t, s)
							if fxDiff(fx.state(t, i, end), fx.state(t, i-1, end)) == "" && len(changes) > 0 {
								t.Errorf("snapshot %d (%s) leaves the table as it was (the writer reads the same rows "+
									"at it and its parent) but emits %d changes, want none:%s",
									s.SnapshotID, s.Statement, len(changes), fxOps(changes))
							}
						})
					}
					t.Run("whole_history", func(t *testing.T) {
						changes := read(t, start, len(snaps)-1)
						for _, msg := range fxUnchangedRows(changes, v.req.NetChanges) {
							t.Error(msg)
						}
					})
				})
			}
		})
	}
	if noops == 0 {
		t.Error("no fixture has a statement that rewrites rows unchanged; the rule is not exercised")
	}
}

// fxCheckNoopStatements checks that every snapshot of a statement the
// generator marked as rewriting rows unchanged is on the retained lineage
// and that the writer reads the same rows at it as at its parent. It
// returns how many such snapshots there are.
func fxCheckNoopStatements(t *testing.T, fx *fxFixture) int {
	t.Helper()
	index := map[int64]int{}
	for i, s := range fx.exp.Snapshots {
		index[s.SnapshotID] = i
	}
	n := 0
	for _, st := range fx.exp.Statements {
		if !st.Noop {
			continue
		}
		if len(st.Snapshots) == 0 {
			t.Fatalf("statement %q rewrites rows unchanged but committed no snapshot", st.Label)
		}
		for _, id := range st.Snapshots {
			i, ok := index[id]
			if !ok || i == 0 {
				t.Fatalf("statement %q: snapshot %d has no parent on the retained lineage", st.Label, id)
			}
			end := fx.schema(t, fx.exp.Snapshots[i])
			if d := fxDiff(fx.state(t, i, end), fx.state(t, i-1, end)); d != "" {
				t.Fatalf("statement %q: the writer reads different rows at snapshot %d than at its parent:\n%s",
					st.Label, id, d)
			}
			n++
		}
	}
	return n
}

// fxUnchangedRows lists the changes that are no change: update pairs and
// folded updates with equal images, and rows both deleted and inserted.
// Without net, rows are matched within one snapshot; a net feed is one
// change per key or row for the whole window, so they are matched across
// it.
func fxUnchangedRows(changes []fxChange, net bool) []string {
	var out []string
	type key struct {
		snapshot int64
		row      string
	}
	dels, ins := map[key]int{}, map[key]int{}
	for i := 0; i < len(changes); i++ {
		c := changes[i]
		snap := c.snapshot
		if net {
			snap = 0
		}
		switch {
		case c.op == feed.OpUpdateBefore && i+1 < len(changes) && changes[i+1].op == feed.OpUpdateAfter:
			after := changes[i+1]
			i++
			if c.before == after.after {
				out = append(out, fmt.Sprintf("update pair @%d with identical images %s", c.snapshot, c.before))
				continue
			}
			dels[key{snap, c.before}]++
			ins[key{snap, after.after}]++
		case c.op == feed.OpUpdate:
			if c.before == c.after {
				out = append(out, fmt.Sprintf("folded update @%d with identical images %s", c.snapshot, c.before))
				continue
			}
			dels[key{snap, c.before}]++
			ins[key{snap, c.after}]++
		case c.op == feed.OpDelete:
			dels[key{snap, c.before}]++
		case c.op == feed.OpInsert:
			ins[key{snap, c.after}]++
		}
	}
	var pairs []string
	for k, n := range dels {
		if m := min(n, ins[k]); m > 0 {
			pairs = append(pairs, fmt.Sprintf("%d× deleted and re-inserted unchanged @%d: %s", m, k.snapshot, k.row))
		}
	}
	slices.Sort(pairs)
	return append(out, pairs...)
}
