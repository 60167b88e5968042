package feed_test

// Branches and tags on tables written with a write-audit-publish flow
// (testdata/fixtures/pyiceberg_refs by pyiceberg, spark_wap_v2 by Spark's
// own WAP; see gen/README.md): windows, snapshots, commit positions and
// streams on a ref must follow that ref's lineage, checked against the
// writer's own read of every snapshot.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
)

// fxLineage is the lineage of snapshot head by the writer's parent links,
// oldest first, as indexes into exp.Snapshots.
func (fx *fxFixture) fxLineage(t *testing.T, head int64) []int {
	t.Helper()
	byID := map[int64]int{}
	for i, s := range fx.exp.Snapshots {
		byID[s.SnapshotID] = i
	}
	var out []int
	for id := &head; id != nil; {
		i, ok := byID[*id]
		if !ok {
			t.Fatalf("snapshot %d is not in EXPECTED.json", *id)
		}
		out = append(out, i)
		id = fx.exp.Snapshots[i].ParentID
	}
	slices.Reverse(out)
	return out
}

// fxRefFixtures are the fixtures with branches and tags, each with the tag
// at main's head when the branch audit was created.
var fxRefFixtures = []struct{ name, base string }{{"pyiceberg_refs", "v2"}, {"spark_wap_v2", "v1"}}

func TestFixtureRefs(t *testing.T) {
	for _, f := range fxRefFixtures {
		t.Run(f.name, func(t *testing.T) { checkFixtureRefs(t, f.name, f.base) })
	}
}

func checkFixtureRefs(t *testing.T, name, base string) {
	fx := fxLoad(t, name)
	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	defer mem.AssertSize(t, 0)
	eng := feed.New(fxTables{fx.name: fx.tbl}, feed.Options{Allocator: mem, MaxBatchRows: 5})
	ctx := context.Background()
	snaps := fx.exp.Snapshots
	if len(fx.exp.Refs) < 4 {
		t.Fatalf("the fixture has refs %v; want main, audit and two tags", fx.exp.Refs)
	}
	index := func(id int64) int {
		return slices.IndexFunc(snaps, func(s fxSnapshot) bool { return s.SnapshotID == id })
	}
	// check reads the window req (on its ref) and applies it to the state
	// at snapshot index from (-1: the empty table): it must give the state
	// at index to.
	check := func(t *testing.T, from, to int, req feed.Request) *feed.Plan {
		t.Helper()
		end := fx.schema(t, snaps[to])
		p, changes := fx.readFeed(t, eng, req, end)
		got := fxApply(t, fx.state(t, from, end), changes)
		if d := fxDiff(got, fx.state(t, to, end)); d != "" {
			t.Errorf("the feed of %s applied to the state at %s is not pyiceberg's state at %d:\n%s",
				fmt.Sprint(req.Ref), fx.label(from), snaps[to].SnapshotID, d)
		}
		return p
	}

	for name, ref := range fx.exp.Refs {
		t.Run(ref.Type+"_"+name, func(t *testing.T) {
			lineage := fx.fxLineage(t, ref.SnapshotID)
			var want []int64
			for _, i := range lineage {
				want = append(want, snaps[i].SnapshotID)
			}
			hist, r, err := eng.HistoryOn(ctx, fx.name, name)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, s := range hist.Snapshots {
				got = append(got, s.ID)
			}
			if !slices.Equal(got, want) || r == nil || r.Name != name || r.Kind != ref.Type || *r.Head != ref.SnapshotID {
				t.Fatalf("history on %s: %v (ref %+v); the writer's lineage %v, ref %+v", name, got, r, want, ref)
			}
			st, err := eng.StatusOn(ctx, fx.name, name)
			if err != nil || st.Snapshot == nil || *st.Snapshot != ref.SnapshotID || st.Ref == nil || st.Ref.Name != name {
				t.Fatalf("status on %s: %+v, %v; want snapshot %d", name, st, err, ref.SnapshotID)
			}
			// A watch of the ref starts at its head.
			for st, err := range eng.WatchCommitsOn(ctx, fx.name, name, feed.FollowOptions{}, nil, nil) {
				if err != nil || st.Snapshot == nil || *st.Snapshot != ref.SnapshotID || st.Ref == nil ||
					st.Ref.Name != name || *st.Ref.Head != ref.SnapshotID {
					t.Fatalf("watch of %s: %+v, %v; want its head %d", name, st, err, ref.SnapshotID)
				}
				break
			}
			// Every snapshot of the ref's lineage from its parent, and
			// the whole lineage, as windows naming the ref.
			for k, to := range lineage {
				from := -1
				req := feed.Request{Table: fx.name, Ref: name, ToSnapshot: &snaps[to].SnapshotID}
				if k > 0 {
					from = lineage[k-1]
					req.FromSnapshot = &snaps[from].SnapshotID
				}
				t.Run(fmt.Sprintf("%02d", k+1), func(t *testing.T) { check(t, from, to, req) })
			}
			t.Run("whole", func(t *testing.T) {
				p := check(t, -1, lineage[len(lineage)-1], feed.Request{Table: fx.name, Ref: name})
				if p.Ref == nil || p.Ref.Name != name || *p.To != ref.SnapshotID {
					t.Errorf("plan on %s: ref %+v, to %v; want the ref's head %d", name, p.Ref, p.To, ref.SnapshotID)
				}
			})
		})
	}

	for _, err := range eng.WatchCommitsOn(ctx, fx.name, "nope", feed.FollowOptions{}, nil, nil) {
		if !errors.Is(err, feed.ErrRefNotFound) {
			t.Fatalf("watch of an unknown ref: %v, want ErrRefNotFound", err)
		}
		break
	}

	audit, v2, audited := fx.exp.Refs["audit"], fx.exp.Refs[base], fx.exp.Refs["audited"]
	t.Run("from_tag_to_branch_head", func(t *testing.T) {
		p := check(t, index(v2.SnapshotID), index(audit.SnapshotID),
			feed.Request{Table: fx.name, Ref: "audit", FromRef: base})
		if *p.From != v2.SnapshotID {
			t.Errorf("from %d, want tag %s's %d", *p.From, base, v2.SnapshotID)
		}
	})
	t.Run("main_to_tag_across_the_fast_forward", func(t *testing.T) {
		// main was fast-forwarded onto the head audit had then, which the
		// tag "audited" names: the window on main reads audit's commits.
		lineage := fx.fxLineage(t, audited.SnapshotID)
		want := len(lineage) - 1 - slices.Index(lineage, index(v2.SnapshotID))
		p := check(t, index(v2.SnapshotID), index(audited.SnapshotID),
			feed.Request{Table: fx.name, FromRef: base, ToRef: "audited"})
		if len(p.Snapshots) != want {
			t.Errorf("window %s..audited has %d snapshots, want audit's %d", base, len(p.Snapshots), want)
		}
		main := fx.fxLineage(t, fx.exp.Refs["main"].SnapshotID)
		if !slices.Contains(main, index(audited.SnapshotID)) {
			t.Errorf("main's lineage %v does not hold audited (main was not fast-forwarded)", main)
		}
	})
	t.Run("errors", func(t *testing.T) {
		// off is a snapshot off audit's lineage (main's or dev's).
		onAudit := fx.fxLineage(t, audit.SnapshotID)
		k := slices.IndexFunc(snaps, func(s fxSnapshot) bool { return !slices.Contains(onAudit, index(s.SnapshotID)) })
		if k < 0 {
			t.Fatal("every snapshot is on audit's lineage")
		}
		off := snaps[k].SnapshotID
		for _, c := range []struct {
			name string
			req  feed.Request
			want error
		}{
			{"unknown ref", feed.Request{Ref: "nope"}, feed.ErrRefNotFound},
			{"unknown from_ref", feed.Request{Ref: "audit", FromRef: "nope"}, feed.ErrRefNotFound},
			{"to_snapshot off the branch", feed.Request{Ref: "audit", ToSnapshot: &off}, feed.ErrNotAncestor},
			{"from a tag after the ref's head", feed.Request{Ref: base, FromRef: "audited"}, feed.ErrNotAncestor},
			{"from_ref with from_snapshot", feed.Request{FromRef: base, FromSnapshot: &off}, feed.ErrInvalidRequest},
		} {
			c.req.Table = fx.name
			if _, err := eng.Plan(ctx, c.req); !errors.Is(err, c.want) {
				t.Errorf("%s: err %v, want %v", c.name, err, c.want)
			}
		}
		if _, err := eng.StatusOn(ctx, fx.name, "nope"); !errors.Is(err, feed.ErrRefNotFound) {
			t.Errorf("status on an unknown ref: %v", err)
		}
		req := feed.StreamRequest{Request: feed.Request{Table: fx.name, Ref: base}, Follow: true}
		for _, err := range eng.Stream(ctx, req) {
			if !errors.Is(err, feed.ErrInvalidRequest) {
				t.Errorf("follow on a tag: err %v, want ErrInvalidRequest", err)
			}
			break
		}
	})
	t.Run("stream_on_branch", func(t *testing.T) {
		// A bounded stream on audit from the base tag: its changes,
		// applied to the state at the tag, give audit's head.
		req := feed.StreamRequest{Request: feed.Request{Table: fx.name, Ref: "audit", FromRef: base},
			Start: feed.StartFromSnapshot}
		end := fx.schema(t, snaps[index(audit.SnapshotID)])
		var changes []fxChange
		var cursor int64
		for ev, err := range eng.Stream(ctx, req) {
			if err != nil {
				t.Fatal(err)
			}
			cursor = ev.Cursor.ID
			if ev.Kind != feed.StreamChanges {
				continue
			}
			rec := ev.Batch.Record
			ops := rec.Column(0).(*array.String)
			before, after := rec.Column(1).(*array.Struct), rec.Column(2).(*array.Struct)
			for i := range int(rec.NumRows()) {
				c := fxChange{op: strings.Clone(ops.Value(i)), snapshot: ev.Batch.Snapshot.ID}
				if !before.IsNull(i) {
					c.before = fxImage(before, i)
				}
				if !after.IsNull(i) {
					c.after = fxImage(after, i)
				}
				changes = append(changes, c)
			}
			rec.Release()
		}
		if cursor != audit.SnapshotID {
			t.Errorf("the stream ended at %d, want audit's head %d", cursor, audit.SnapshotID)
		}
		got := fxApply(t, fx.state(t, index(v2.SnapshotID), end), changes)
		if d := fxDiff(got, fx.state(t, index(audit.SnapshotID), end)); d != "" {
			t.Errorf("the stream on audit from %s does not give audit's head:\n%s", base, d)
		}
	})
}
