package feed_test

// Refs on the formats other than Iceberg: Paimon tags (written by Paimon's
// Java core in testdata/paimon) and Delta, which has no refs.

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/feed"
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
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
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
