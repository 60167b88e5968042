package feed_test

// Refs on the formats other than Iceberg: Paimon tags (written by Paimon's
// Java core in testdata/paimon) and Delta, which has no refs.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
	"github.com/sluicefeed/sluice/internal/testkit/paimonfx"
)

// TestPaimonTags runs windows on the tags Paimon's Java writer made: the
// lineage of a tag ends at its snapshot, a window ending at the tag (ref,
// or to_ref) and one starting there (from_ref) give the writer's states,
// and a tag whose snapshot has expired, an unknown ref and following a tag
// are refused.
func TestPaimonTags(t *testing.T) {
	fxs, err := paimonfx.Fixtures(paimonFixtureRoot)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tested := 0
	for _, f := range fxs {
		if len(f.Meta.Tags) == 0 {
			continue
		}
		t.Run(f.DB+"."+f.Name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(arrowpool.Shared())
			defer mem.AssertSize(t, 0)
			eng, src, name := paimonEngine(t, f, mem, 5)
			defer eng.Close()
			tag := f.Meta.Tags[0]
			snap, err := src.Table().Tag(ctx, tag)
			if err != nil {
				t.Fatal(err)
			}
			expired := slices.ContainsFunc(f.Meta.Snapshots, func(s paimonfx.Snapshot) bool {
				return s.ID == snap.ID && s.Expired
			})
			hist, ref, err := eng.HistoryOn(ctx, name, tag)
			if expired {
				if !errors.Is(err, feed.ErrResyncRequired) {
					t.Fatalf("history on tag %s of expired snapshot %d: %v, want ErrResyncRequired", tag, snap.ID, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ref.Kind != feed.RefTag || *ref.Head != snap.ID || hist.Snapshots[len(hist.Snapshots)-1].ID != snap.ID {
				t.Fatalf("on tag %s: ref %+v, lineage ending at %d; want tag at %d", tag, ref,
					hist.Snapshots[len(hist.Snapshots)-1].ID, snap.ID)
			}
			first := hist.Snapshots[0].ID
			present := f.Meta.Snapshots[len(f.Meta.Snapshots)-1].ID
			for _, c := range []struct {
				name     string
				req      feed.Request
				from, to int64
			}{
				{"window on the tag", feed.Request{Ref: tag, FromSnapshot: &first}, first, snap.ID},
				{"to the tag", feed.Request{FromSnapshot: &first, ToRef: tag}, first, snap.ID},
				{"from the tag", feed.Request{FromRef: tag}, snap.ID, present},
				{"from the tag on main", feed.Request{FromRef: tag, Ref: feed.MainBranch}, snap.ID, present},
			} {
				if c.from == c.to {
					continue
				}
				c.req.Table = name
				st := paimonLoadState(t, f, c.from, paimonColumns(t, src, c.to))
				if err := paimonApply(ctx, eng, c.req, st); err != nil {
					t.Errorf("%s: %v", c.name, err)
					continue
				}
				if d := st.Diff(paimonLoadState(t, f, c.to, nil)); d != "" {
					t.Errorf("%s: the feed applied to the state at %d is not the writer's at %d:\n%s", c.name, c.from,
						c.to, d)
				}
			}
			past := present
			if _, err := eng.Plan(ctx, feed.Request{Table: name, Ref: tag, ToSnapshot: &past}); !errors.Is(err,
				feed.ErrNotAncestor) {
				t.Errorf("a to_snapshot after the tag: %v, want ErrNotAncestor", err)
			}
			if _, err := eng.Plan(ctx, feed.Request{Table: name, Ref: "nope"}); !errors.Is(err, feed.ErrRefNotFound) {
				t.Errorf("an unknown ref: %v, want ErrRefNotFound", err)
			}
			for _, err := range eng.Stream(ctx, feed.StreamRequest{Request: feed.Request{Table: name, Ref: tag},
				Follow: true}) {
				if !errors.Is(err, feed.ErrInvalidRequest) {
					t.Errorf("follow on a tag: %v, want ErrInvalidRequest", err)
				}
				break
			}
			tested++
		})
	}
	if tested == 0 {
		t.Fatal("no Paimon fixture has a tag whose snapshot is present")
	}
}

// TestDeltaHasNoRefs: a Delta table has no branches or tags; any ref is
// ErrNoRefs (InvalidArgument), with a message naming what to use instead.
func TestDeltaHasNoRefs(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(deltaFixtureDir, "*", "EXPECTED.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no Delta fixtures under %s: %v", deltaFixtureDir, err)
	}
	dir := filepath.Dir(paths[0])
	name := "delta." + filepath.Base(dir)
	eng := feed.New(deltaTables{name: openDelta(t, dir, name)}, feed.Options{})
	ctx := context.Background()
	for _, req := range []feed.Request{{Ref: "main"}, {FromRef: "v1"}, {ToRef: "v2"}} {
		req.Table = name
		if _, err := eng.Plan(ctx, req); !errors.Is(err, feed.ErrNoRefs) {
			t.Errorf("%+v: %v, want ErrNoRefs", req, err)
		}
	}
	if _, err := eng.StatusOn(ctx, name, "audit"); !errors.Is(err, feed.ErrNoRefs) {
		t.Errorf("status on a ref: %v, want ErrNoRefs", err)
	}
}

// TestPaimonBranch reads the branch b1 pypaimon made of refs.branched
// (testdata/paimon/gen/pypaimon_refs.py): its lineage is the branch's own
// snapshots (from the tagged one it was created from), every window on it
// gives pypaimon's read of the branch, a stream follows it, and main is
// not the branch.
func TestPaimonBranch(t *testing.T) {
	fxs, err := paimonfx.Fixtures(paimonFixtureRoot)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(fxs, func(f paimonfx.Fixture) bool { return f.DB == "refs" && f.Name == "branched" })
	if i < 0 {
		t.Fatal("no fixture refs.branched")
	}
	main := fxs[i]
	branch := main
	branch.Expected = filepath.Join(main.Expected, "branch-b1")
	var want []int64
	for _, s := range []int64{2, 3, 4} {
		if _, err := os.Stat(branch.StatePath(s)); err != nil {
			t.Fatalf("the branch's expected state at %d: %v", s, err)
		}
		want = append(want, s)
	}
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	defer mem.AssertSize(t, 0)
	eng, src, name := paimonEngine(t, main, mem, 3)
	defer eng.Close()

	hist, ref, err := eng.HistoryOn(ctx, name, "b1")
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, s := range hist.Snapshots {
		got = append(got, s.ID)
	}
	if !slices.Equal(got, want) || ref.Kind != feed.RefBranch || *ref.Head != 4 {
		t.Fatalf("history on b1: %v, ref %+v; want %v, head 4", got, ref, want)
	}
	check := func(what string, req feed.Request, from, to int64, fx paimonfx.Fixture) {
		t.Helper()
		req.Table = name
		// One schema throughout (read from main's first snapshot: the
		// branch's are not main's).
		st := paimonLoadState(t, fx, from, paimonColumns(t, src, 1))
		if err := paimonApply(ctx, eng, req, st); err != nil {
			t.Errorf("%s: %v", what, err)
			return
		}
		if d := st.Diff(paimonLoadState(t, fx, to, nil)); d != "" {
			t.Errorf("%s: the feed applied to the branch's state at %d is not pypaimon's at %d:\n%s", what, from, to, d)
		}
	}
	two, three := int64(2), int64(3)
	check("(2, 3] on b1", feed.Request{Ref: "b1", FromSnapshot: &two, ToSnapshot: &three}, 2, 3, branch)
	check("(3, head] on b1", feed.Request{Ref: "b1", FromSnapshot: &three}, 3, 4, branch)
	check("from the branch's tag v2 on b1", feed.Request{Ref: "b1", FromRef: "v2"}, 2, 4, branch)
	check("from tag v2 on main", feed.Request{FromRef: "v2"}, 2, 3, main)

	// Main's snapshot 3 is not the branch's: a window on main stays main's.
	p, err := eng.Plan(ctx, feed.Request{Table: name, FromSnapshot: &two})
	if err != nil || len(p.Snapshots) != 1 || p.Snapshots[0].RecordsRead == 0 {
		t.Fatalf("main after 2: %+v, %v", p, err)
	}
	// The branch's history starts at its first snapshot.
	if _, err := eng.Plan(ctx, feed.Request{Table: name, Ref: "b1"}); !errors.Is(err, feed.ErrResyncRequired) {
		t.Errorf("b1 from the start of history: %v, want ErrResyncRequired (the branch starts at 2)", err)
	}
	// A bounded stream on the branch from its first snapshot's full state
	// builds the branch's head.
	st := paimonfx.State{}
	req := feed.StreamRequest{Request: feed.Request{Table: name, Ref: "b1", FromSnapshot: &two},
		Start: feed.StartFromSnapshotFull}
	for ev, err := range eng.Stream(ctx, req) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Batch.Record == nil {
			continue
		}
		err := st.Apply(ev.Batch.Record)
		ev.Batch.Record.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	if d := st.Diff(paimonLoadState(t, branch, 4, nil)); d != "" {
		t.Errorf("the stream on b1 does not build the branch's head:\n%s", d)
	}
}
