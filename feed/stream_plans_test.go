package feed_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
)

// A stream with YieldPlans yields its full state and windows as plans,
// whose reads are the rows the stream yields without it, with the cursor
// at each plan's end.
func TestStreamYieldPlans(t *testing.T) {
	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	defer mem.AssertSize(t, 0)
	h := newHistory(t, 3, 2) // ids 1-2, 3-4, 5-6
	eng := feed.New(h.cat, feed.Options{Allocator: mem})
	s := h.snapshots
	req := feed.StreamRequest{Start: feed.StartFromSnapshotFull, Request: feed.Request{Table: tableName, FromSnapshot: &s[0]},
		Options: feed.FollowOptions{MaxWindowSnapshots: 1}}
	want := collect(t, eng, req, nil)
	if want.err != nil {
		t.Fatal(want.err)
	}
	req.YieldPlans = true
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var kinds []string
	var rows, cursors []int64
	for ev, err := range eng.Stream(ctx, req) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind != feed.StreamWindow {
			kinds = append(kinds, ev.Kind.String())
			continue
		}
		read := func(yield func(feed.Batch, error) bool) { eng.ReadState(ctx, ev.StatePlan)(yield) }
		kind, key := "state-plan", ""
		var end int64
		switch {
		case ev.Plan != nil && ev.StatePlan == nil:
			read, kind, key, end = eng.Read(ctx, ev.Plan), "window-plan", ev.Plan.ReadKey(), *ev.Plan.To
		case ev.StatePlan != nil && ev.Plan == nil:
			key, end = ev.StatePlan.ReadKey(), ev.StatePlan.Snapshot.ID
		default:
			t.Fatalf("a window event with plan %v and state plan %v", ev.Plan, ev.StatePlan)
		}
		if key == "" || ev.Batch.Record != nil || ev.Cursor.ID != end {
			t.Fatalf("%s: key %q, batch %v, cursor %d (want the plan's end %d)", kind, key, ev.Batch.Record,
				ev.Cursor.ID, end)
		}
		kinds = append(kinds, kind)
		cursors = append(cursors, ev.Cursor.ID)
		for b, err := range read {
			if err != nil {
				t.Fatal(err)
			}
			after := b.Record.Column(2).(*array.Struct).Field(0).(*array.Int64)
			for i := range after.Len() {
				rows = append(rows, after.Value(i))
			}
			b.Record.Release()
		}
	}
	if got := fmt.Sprint(kinds); got != "[started state-plan window-plan window-plan]" {
		t.Fatalf("events %s", got)
	}
	if fmt.Sprint(cursors) != fmt.Sprint([]int64{s[0], s[1], s[2]}) {
		t.Fatalf("cursors %v, want %v", cursors, s)
	}
	slices.Sort(rows)
	slices.Sort(want.ids)
	if fmt.Sprint(rows) != fmt.Sprint(want.ids) {
		t.Fatalf("the plans read %v; the stream yields %v", rows, want.ids)
	}
}

// ReadKey names what a read yields: the same for the same window and
// shape, another for another window, projection, filter or layout, none
// for a part.
func TestReadKey(t *testing.T) {
	h := newHistory(t, 3, 2)
	eng := feed.New(h.cat, feed.Options{})
	s := h.snapshots
	key := func(r feed.Request) string {
		t.Helper()
		r.Table = tableName
		p, err := eng.Plan(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		return p.ReadKey()
	}
	base := feed.Request{FromSnapshot: &s[0], ToSnapshot: &s[2]}
	k := key(base)
	if k == "" || key(base) != k {
		t.Fatal("one window, two keys")
	}
	other := map[string]feed.Request{
		"another window":  {FromSnapshot: &s[1], ToSnapshot: &s[2]},
		"a projection":    {FromSnapshot: &s[0], ToSnapshot: &s[2], Columns: []string{"id"}},
		"a filter":        {FromSnapshot: &s[0], ToSnapshot: &s[2], Filter: "id > 3"},
		"net changes":     {FromSnapshot: &s[0], ToSnapshot: &s[2], NetChanges: true},
		"fold updates":    {FromSnapshot: &s[0], ToSnapshot: &s[2], FoldUpdates: true},
		"the flat layout": {FromSnapshot: &s[0], ToSnapshot: &s[2], Layout: feed.LayoutFlat},
	}
	for name, r := range other {
		if key(r) == k {
			t.Errorf("%s: the same key as the window's", name)
		}
	}
	p, err := eng.Plan(context.Background(), feed.Request{Table: tableName, FromSnapshot: &s[0], ToSnapshot: &s[2]})
	if err != nil {
		t.Fatal(err)
	}
	parts := p.Split(2)
	if len(parts) == 0 {
		t.Fatal("the window did not split")
	}
	for _, part := range parts {
		if pk := key(feed.Request{FromSnapshot: &s[0], ToSnapshot: &s[2], Part: &part}); pk != "" {
			t.Errorf("a part's key %q, want none", pk)
		}
	}
}
