package feed_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/filter"
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// nativeBackend is a WindowBackend that computes a window with a second
// engine reading the same files, and sends it as one batch: the routed read
// must cut it into commits and batches as the engine would.
type nativeBackend struct {
	eng   *feed.Engine
	mem   memory.Allocator
	reads int
}

func (b *nativeBackend) ReadWindow(ctx context.Context, w feed.Window) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		b.reads++
		to := w.To
		p, err := b.eng.Plan(ctx, feed.Request{Table: w.Table, FromSnapshot: w.From, ToSnapshot: &to,
			Columns: w.Columns, Identity: w.Identity})
		if err != nil {
			yield(nil, err)
			return
		}
		var recs []arrow.RecordBatch
		defer func() {
			for _, r := range recs {
				r.Release()
			}
		}()
		for batch, err := range b.eng.Read(ctx, p) {
			if err != nil {
				yield(nil, err)
				return
			}
			recs = append(recs, batch.Record)
		}
		cols := make([]arrow.Array, w.Schema.NumFields())
		for j := range cols {
			parts := make([]arrow.Array, len(recs))
			for i, r := range recs {
				parts[i] = r.Column(j)
			}
			if cols[j], err = array.Concatenate(parts, b.mem); err != nil {
				yield(nil, err)
				return
			}
			defer cols[j].Release()
		}
		yield(array.NewRecordBatch(w.Schema, cols, int64(cols[0].Len())), nil)
	}
}

// routedCatalog serves its catalog's tables routed to a backend.
type routedCatalog struct {
	*catalog.Catalog
	route feed.Route
}

func (c routedCatalog) Load(ctx context.Context, name string) (feed.Table, error) {
	tbl, err := c.LoadTable(ctx, name)
	if err != nil {
		return nil, err
	}
	return feed.Routed(c.EngineTable(tbl), c.route), nil
}

// TestRoutedWindow: a routed table's windows are answered by its backend,
// cut into commits and MaxBatchRows batches, each snapshot ended by one
// complete batch, equal to the native read; a request may force the
// native engine; a part of a split window runs natively (auto) or is
// refused (forced); the verdict is in the plan and the listing.
func TestRoutedWindow(t *testing.T) {
	h := newHistory(t, 4, 5)
	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	defer mem.AssertSize(t, 0)
	native := feed.New(h.cat, feed.Options{Allocator: mem})
	backend := &nativeBackend{eng: native, mem: mem}
	verdict := feed.Verdict{Backend: feed.BackendSpark, Chosen: "spark_native", ServerVersion: "4.2.0",
		NativeExpected: true, NativeUsable: true, Reason: "CHANGES resolves"}
	routed := feed.New(routedCatalog{Catalog: h.cat, route: feed.Route{Backend: backend, Verdict: verdict,
		Native: true}}, feed.Options{Allocator: mem, MaxBatchRows: 3})

	s := func(i int) *int64 { return &h.snapshots[i] }
	for _, tt := range []struct {
		name   string
		req    feed.Request
		lo, hi int
	}{
		{"whole history", feed.Request{}, 0, 4},
		{"from first", feed.Request{FromSnapshot: s(0)}, 1, 4},
		{"one snapshot", feed.Request{FromSnapshot: s(1), ToSnapshot: s(2)}, 2, 3},
		{"empty window", feed.Request{FromSnapshot: s(3), ToSnapshot: s(3)}, 4, 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.Table = tableName
			before := backend.reads
			p, got, batches := read(t, routed, tt.req)
			sameChanges(t, got, h.wantInserts(tt.lo, tt.hi))
			if p.Backend == nil || p.Backend.Backend != feed.BackendSpark || p.Backend.Chosen != "spark_native" {
				t.Fatalf("plan's verdict %+v", p.Backend)
			}
			for _, sp := range p.Snapshots {
				if sp.Strategy != feed.StrategyBackend || len(sp.Files) != 0 {
					t.Fatalf("snapshot %d: strategy %s with %d files", sp.ID, sp.Strategy, len(sp.Files))
				}
			}
			for _, b := range batches {
				if b.Record != nil {
					t.Fatal("a batch kept its record")
				}
			}
			if want := before + min(1, tt.hi-tt.lo); backend.reads != want {
				t.Fatalf("%d backend reads, want %d", backend.reads-before, want-before)
			}
			_, nat, _ := read(t, native, tt.req)
			sameChanges(t, got, nat)
		})
	}

	t.Run("forced native", func(t *testing.T) {
		before := backend.reads
		p, got, _ := read(t, routed, feed.Request{Table: tableName, Backend: feed.BackendNative})
		sameChanges(t, got, h.wantInserts(0, 4))
		if backend.reads != before || p.Backend == nil || p.Backend.Backend != feed.BackendNative ||
			p.Snapshots[0].Strategy != feed.StrategyAppend {
			t.Fatalf("forced native went to the backend: %d reads, %+v", backend.reads-before, p.Snapshots[0])
		}
	})
	t.Run("a part goes native under auto, and is refused when Spark is forced", func(t *testing.T) {
		part := feed.Part{FirstSnapshot: h.snapshots[0], LastSnapshot: h.snapshots[0]}
		p, err := routed.Plan(t.Context(), feed.Request{Table: tableName, Part: &part})
		if err != nil || p.Backend.Backend != feed.BackendNative || !strings.Contains(p.Backend.Reason, "a part") {
			t.Fatalf("part: %+v, %v", p, err)
		}
		_, err = routed.Plan(t.Context(), feed.Request{Table: tableName, Part: &part, Backend: feed.BackendSpark})
		if !errors.Is(err, feed.ErrUnsupported) {
			t.Fatalf("err = %v, want ErrUnsupported", err)
		}
	})
	t.Run("a ref runs natively under auto, and is refused when Spark is forced", func(t *testing.T) {
		before := backend.reads
		p, got, _ := read(t, routed, feed.Request{Table: tableName, Ref: feed.MainBranch})
		sameChanges(t, got, h.wantInserts(0, 4))
		if backend.reads != before || p.Backend.Backend != feed.BackendNative ||
			!strings.Contains(p.Backend.Reason, "a branch or tag") || p.Ref == nil || p.Ref.Name != feed.MainBranch {
			t.Fatalf("%d backend reads, verdict %+v, ref %+v", backend.reads-before, p.Backend, p.Ref)
		}
		_, err := routed.Plan(t.Context(), feed.Request{Table: tableName, Ref: feed.MainBranch, Backend: feed.BackendSpark})
		if !errors.Is(err, feed.ErrUnsupported) {
			t.Fatalf("err = %v, want ErrUnsupported", err)
		}
	})
	t.Run("backend errors", func(t *testing.T) {
		for _, tt := range []struct {
			eng  *feed.Engine
			req  feed.Request
			want error
		}{
			{routed, feed.Request{Table: tableName, Backend: "duckdb"}, feed.ErrInvalidRequest},
			{native, feed.Request{Table: tableName, Backend: feed.BackendSpark}, feed.ErrInvalidRequest},
		} {
			if _, err := tt.eng.Plan(t.Context(), tt.req); !errors.Is(err, tt.want) {
				t.Errorf("%+v: err = %v, want %v", tt.req, err, tt.want)
			}
		}
		if _, err := (feed.Request{Table: tableName, Backend: "duckdb"}).Parse(); !errors.Is(err, feed.ErrInvalidRequest) {
			t.Errorf("Parse: %v", err)
		}
	})
	t.Run("no Spark engine: native only", func(t *testing.T) {
		fell := verdict
		fell.Backend, fell.Chosen, fell.FellBack, fell.Reason = feed.BackendNative, "native", true, "CHANGES refused"
		eng := feed.New(routedCatalog{Catalog: h.cat, route: feed.Route{Verdict: fell, Native: true}},
			feed.Options{Allocator: mem})
		p, _, _ := read(t, eng, feed.Request{Table: tableName})
		if p.Backend == nil || !p.Backend.FellBack || p.Snapshots[0].Strategy != feed.StrategyAppend {
			t.Fatalf("plan %+v", p.Backend)
		}
		_, err := eng.Plan(t.Context(), feed.Request{Table: tableName, Backend: feed.BackendSpark})
		if !errors.Is(err, feed.ErrUnsupported) || !strings.Contains(err.Error(), "CHANGES refused") {
			t.Fatalf("err = %v, want ErrUnsupported with the verdict's reason", err)
		}
	})
	t.Run("flat layout", func(t *testing.T) {
		p, err := routed.Plan(t.Context(), feed.Request{Table: tableName, Layout: feed.LayoutFlat})
		if err != nil {
			t.Fatal(err)
		}
		rows := 0
		for b, err := range routed.Read(t.Context(), p) {
			if err != nil {
				t.Fatal(err)
			}
			if !b.Record.Schema().Equal(p.Schema()) {
				t.Fatalf("schema %s", b.Record.Schema())
			}
			rows += int(b.Record.NumRows())
			b.Record.Release()
		}
		if rows != 20 {
			t.Fatalf("%d flat rows, want 20", rows)
		}
	})
	t.Run("batches bounded by bytes", func(t *testing.T) {
		narrow := feed.New(routedCatalog{Catalog: h.cat, route: feed.Route{Backend: backend, Verdict: verdict,
			Native: true}}, feed.Options{Allocator: mem, MaxBatchBytes: 1})
		_, got, batches := read(t, narrow, feed.Request{Table: tableName})
		sameChanges(t, got, h.wantInserts(0, 4))
		// One row per batch, each snapshot's last one complete.
		if len(batches) != 20 {
			t.Fatalf("%d batches of 20 rows, want one row each", len(batches))
		}
	})
	t.Run("listing", func(t *testing.T) {
		tables, _, err := routed.ListTables(t.Context(), nil)
		if err != nil || len(tables) != 1 || tables[0].Backend == nil || *tables[0].Backend != verdict {
			t.Fatalf("%+v, %v", tables, err)
		}
	})
	if err := routed.Close(); err != nil {
		t.Fatal(err)
	}
}

// filteringBackend is a FilterPusher that says it evaluates part of every
// filter and sends the whole window (a superset, as the contract allows):
// the engine must evaluate the filter itself.
type filteringBackend struct {
	*nativeBackend
	filters int
}

func (b *filteringBackend) PushFilter(filter.Expr) (pushed, exact bool) { return true, false }

func (b *filteringBackend) ReadWindow(ctx context.Context, w feed.Window) iter.Seq2[arrow.RecordBatch, error] {
	if w.Filter != nil {
		b.filters++
	}
	return b.nativeBackend.ReadWindow(ctx, w)
}

// TestRoutedFilterFoldNet: a routed window's filter, fold_updates and
// net_changes give the native engine's rows: the filter by the engine on
// the backend's rows (wider by the filter's columns when they are not
// projected), update pairs kept whole also when a pair straddles two of
// the backend's batches; fold_updates folding the backend's pairs;
// net_changes netting its changes. The verdict's reason says who computed
// what.
func TestRoutedFilterFoldNet(t *testing.T) {
	h := newHistory(t, 3, 4)
	ctx := t.Context()
	// One snapshot that updates ids 2 and 5 (SE, then NO and SE) and
	// deletes id 7, and one that updates id 2 again.
	keys := []tablewrite.Row{{"id": 2}, {"id": 5}, {"id": 7}}
	ins := []tablewrite.Row{
		{"id": 2, "country": "NO", "amount": 2.0, "created": "2024-02-01T10:00:00Z"},
		{"id": 5, "country": "SE", "amount": 5.0, "created": "2024-02-01T10:00:00Z"},
	}
	tbl, err := tablewrite.EqualityDelete(ctx, h.tbl, "id", keys, ins)
	if err != nil {
		t.Fatal(err)
	}
	if _, err = tablewrite.EqualityDelete(ctx, tbl, "id", keys[:1], []tablewrite.Row{
		{"id": 2, "country": "SE", "amount": 22.0, "created": "2024-02-02T10:00:00Z"}}); err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	defer mem.AssertSize(t, 0)
	native := feed.New(h.cat, feed.Options{Allocator: mem})
	verdict := feed.Verdict{Backend: feed.BackendSpark, Chosen: "spark_native", Reason: "CHANGES resolves"}
	plain := &nativeBackend{eng: native, mem: mem}
	pusher := &filteringBackend{nativeBackend: &nativeBackend{eng: native, mem: mem}}
	for _, be := range []struct {
		name    string
		backend feed.WindowBackend
		filter  string // the reason of a filtered request
	}{
		{"no pushdown", plain, "evaluated by Sluice after the read"},
		{"partial pushdown", pusher, "part of the filter"},
	} {
		// MaxBatchRows 2 cuts the update snapshot's 5 rows (a delete,
		// two pairs) so that a pair straddles two batches.
		routed := feed.New(routedCatalog{Catalog: h.cat, route: feed.Route{Backend: be.backend, Verdict: verdict,
			Native: true}}, feed.Options{Allocator: mem, MaxBatchRows: 2})
		for _, tt := range []struct {
			name   string
			req    feed.Request
			reason string
		}{
			{"filter", feed.Request{Filter: "country = 'SE'"}, be.filter},
			{"filter on a column not projected", feed.Request{Filter: "country = 'SE'", Columns: []string{"id", "amount"}},
				be.filter},
			{"filter on a pair's image", feed.Request{Filter: "amount > 20", FromSnapshot: &h.snapshots[2]}, be.filter},
			{"fold_updates", feed.Request{FoldUpdates: true, FromSnapshot: &h.snapshots[1]}, "folds Spark's update pairs"},
			{"fold_updates with a filter", feed.Request{FoldUpdates: true, Filter: "country = 'NO'",
				Columns: []string{"amount"}}, "folds"},
			{"net_changes", feed.Request{NetChanges: true}, "Sluice nets"},
			{"net_changes with a filter", feed.Request{NetChanges: true, Filter: "country = 'SE'",
				Columns: []string{"amount"}}, "applies to the net changes"},
		} {
			t.Run(be.name+"/"+tt.name, func(t *testing.T) {
				tt.req.Table = tableName
				p, got, _ := read(t, routed, tt.req)
				if p.Backend == nil || p.Backend.Backend != feed.BackendSpark || !strings.Contains(p.Backend.Reason, tt.reason) {
					t.Fatalf("verdict %+v, want %q in its reason", p.Backend, tt.reason)
				}
				_, want, _ := read(t, native, tt.req)
				sameChanges(t, got, want)
				if len(want) == 0 {
					t.Fatal("the native read is empty: the case tests nothing")
				}
			})
		}
		if err := routed.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if pusher.filters == 0 {
		t.Error("the pushing backend was never given the filter")
	}
}
