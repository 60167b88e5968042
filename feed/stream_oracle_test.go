package feed_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/feed"
	icebergformat "github.com/sluicefeed/sluice/format/iceberg"
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
	"github.com/sluicefeed/sluice/internal/testkit/histgen"
)

// growingTable serves a generated history as it was after its first
// `revealed` commits: each LoadTable reads the metadata file that was
// current then, so a stream follows the table while the history "commits"
// one snapshot (or a few) at a time.
type growingTable struct {
	versions []*table.Table // versions[k]: the table once snapshot k is current
	revealed atomic.Int64   // the versions a LoadTable may see: [0, revealed)
}

func (g *growingTable) LoadTable(_ context.Context, name string) (*table.Table, error) {
	if name != histgen.Table {
		return nil, fmt.Errorf("no table %s", name)
	}
	return g.versions[g.revealed.Load()-1], nil
}

// Load serves the table as the engine reads an Iceberg table.
func (g *growingTable) Load(ctx context.Context, name string) (feed.Table, error) {
	tbl, err := g.LoadTable(ctx, name)
	if err != nil {
		return nil, err
	}
	return icebergformat.NewTable(tbl, nil), nil
}

func (g *growingTable) ListTables(context.Context) ([]string, error) {
	return []string{histgen.Table}, nil
}

// versionsOf returns, for each snapshot of the history in commit order, the
// table as of the last metadata file in which that snapshot is current (a
// schema change after it included).
func versionsOf(t *testing.T, g *histgen.History) []*table.Table {
	t.Helper()
	ctx := context.Background()
	bySnapshot := map[int64]*table.Table{}
	var files []string
	for entry := range g.Table.Metadata().PreviousFiles() {
		files = append(files, entry.MetadataFile)
	}
	for _, f := range files {
		tbl, err := table.NewFromLocation(ctx, g.Table.Identifier(), f, g.Table.FS, nil)
		if err != nil {
			t.Fatalf("metadata file %s: %v", f, err)
		}
		if cur := tbl.CurrentSnapshot(); cur != nil {
			bySnapshot[cur.SnapshotID] = tbl
		}
	}
	bySnapshot[g.Table.CurrentSnapshot().SnapshotID] = g.Table
	out := make([]*table.Table, len(g.Snapshots))
	for i, id := range g.Snapshots {
		if out[i] = bySnapshot[id]; out[i] == nil {
			t.Fatalf("no metadata file has snapshot %d current", id)
		}
	}
	return out
}

// TestStreamOracle follows a random history while it commits, through
// Engine.Stream without gRPC, and checks the stream against the full-state
// oracle: the stream's first state plus every change it yields, applied in
// order, is the table's state at the stream's cursor at every completed
// snapshot and every heartbeat. Snapshots land one or three at a time, and
// windows hold at most two snapshots, so that a stream catches up across
// several windows; a schema change ends a stream, and the next one resumes
// from its cursor, as a client does.
func TestStreamOracle(t *testing.T) {
	configs := []histgen.Config{
		{FormatVersion: 2, DeleteMode: table.WriteModeMergeOnRead, Commits: 10},
		{FormatVersion: 3, DeleteMode: table.WriteModeCopyOnWrite, Partitioned: true, Commits: 10},
		{FormatVersion: 2, DeleteMode: table.WriteModeMergeOnRead, Commits: 10, SchemaChanges: true},
	}
	for _, cfg := range configs {
		for seed := range uint64(seedsPerConfig()) {
			t.Run(fmt.Sprintf("%s/seed%d", cfg, seed), func(t *testing.T) {
				t.Parallel()
				for _, fold := range []bool{false, true} {
					followOracle(t, seed, cfg, fold)
				}
			})
		}
	}
}

func followOracle(t *testing.T, seed uint64, cfg histgen.Config, fold bool) {
	g := generate(t, seed, cfg)
	tables := &growingTable{versions: versionsOf(t, g)}
	tables.revealed.Store(1)
	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	defer mem.AssertSize(t, 0)
	eng := feed.New(tables, feed.Options{Allocator: mem, MaxBatchRows: 7})
	// schemaOf returns the Iceberg schema of a stream's change rows.
	schemaOf := func(rows *arrow.Schema) *iceberg.Schema {
		img := rows.Field(2).Type.(*arrow.StructType)
		var out *iceberg.Schema
		for _, sc := range g.Table.Metadata().Schemas() {
			as, err := table.SchemaToArrowSchema(sc, nil, false, false)
			if err != nil {
				t.Fatal(err)
			}
			same := as.NumFields() == img.NumFields()
			for i := 0; same && i < as.NumFields(); i++ {
				same = as.Field(i).Name == img.Field(i).Name && arrow.TypeEqual(as.Field(i).Type, img.Field(i).Type)
			}
			if same {
				out = sc
			}
		}
		if out == nil {
			t.Fatalf("no schema of the table gives the change rows %s", rows)
		}
		return out
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := feed.StreamRequest{Request: feed.Request{Table: histgen.Table, FoldUpdates: fold}, Follow: true,
		Options: feed.FollowOptions{PollInterval: time.Millisecond, HeartbeatInterval: 5 * time.Millisecond,
			MaxWindowSnapshots: 2}}
	var applied state       // the state the stream's events build
	var end *iceberg.Schema // the schema of the stream's rows
	cursor := feed.Snapshot{ID: feed.NoSnapshot}
	streams, checks, finished := 0, 0, false
	check := func(at feed.Snapshot, what string) {
		t.Helper()
		want := scanState(t, g.Table, &at.ID, end)
		if d := diffStates(applied, want); d != "" {
			t.Fatalf("stream %d (fold %v), %s: the applied events are not the state at snapshot %d:\n%s\nhistory: %s",
				streams, fold, what, at.ID, d, strings.Join(g.Log, "; "))
		}
		checks++
	}
	for {
		streams++
		schemaChanged := false
		for ev, err := range eng.Stream(ctx, req) {
			switch {
			case errors.Is(err, feed.ErrSchemaChanged) && cfg.SchemaChanges:
				schemaChanged = true
				continue
			case errors.Is(err, context.Canceled) && finished:
				continue
			case err != nil:
				t.Fatalf("stream %d: %v\nhistory: %s", streams, err, strings.Join(g.Log, "; "))
			}
			switch ev.Kind {
			case feed.StreamStarted:
				if streams > 1 && ev.Cursor.ID != cursor.ID {
					t.Fatalf("stream %d starts at %d, want the cursor %d", streams, ev.Cursor.ID, cursor.ID)
				}
				// A stream starts from the state at its cursor, in its
				// schema (the first starts with a full state).
				end = schemaOf(ev.Schema)
				applied = state{}
				if cursor.ID != feed.NoSnapshot {
					applied = scanState(t, g.Table, &cursor.ID, end)
				}
				continue
			case feed.StreamState, feed.StreamChanges:
				if !ev.Batch.Record.Schema().Equal(ev.Schema) {
					t.Fatalf("a batch of schema %s in a stream of %s", ev.Batch.Record.Schema(), ev.Schema)
				}
				applyBatch(t, applied, ev.Batch.Record, ev.Kind == feed.StreamState)
			}
			ev.Batch.Record.Release()
			if ev.Cursor.ID == feed.NoSnapshot {
				continue
			}
			cursor = ev.Cursor
			if ev.Batch.SnapshotComplete || ev.Kind == feed.StreamHeartbeat {
				check(cursor, ev.Kind.String())
			}
			// Caught up with what has landed: land more, or end.
			revealed := tables.revealed.Load()
			if ev.Kind == feed.StreamHeartbeat && cursor.ID == g.Snapshots[revealed-1] && !finished {
				if int(revealed) == len(g.Snapshots) {
					finished = true
					cancel()
					continue
				}
				tables.revealed.Store(min(int64(len(g.Snapshots)), revealed+1+2*(revealed%2)))
			}
		}
		if !schemaChanged {
			break
		}
		// Resume after the cursor, as a client does on a schema change.
		id := cursor.ID
		req.FromSnapshot, req.Start = &id, feed.StartFromSnapshot
	}
	if !finished || cursor.ID != g.Snapshots[len(g.Snapshots)-1] {
		t.Fatalf("the stream ended at snapshot %d, before the last commit %d", cursor.ID, g.Snapshots[len(g.Snapshots)-1])
	}
	if checks < len(g.Snapshots) {
		t.Fatalf("%d checks for %d snapshots", checks, len(g.Snapshots))
	}
	t.Logf("fold %v: %d streams, %d checks against the oracle", fold, streams, checks)
}

// applyBatch applies a batch of change rows to st, failing on a delete of
// a row that is not there; a full state's rows must all be inserts.
func applyBatch(t *testing.T, st state, rec arrow.RecordBatch, fullState bool) {
	t.Helper()
	ops := rec.Column(0).(*array.String)
	before, after := rec.Column(1).(*array.Struct), rec.Column(2).(*array.Struct)
	for i := range int(rec.NumRows()) {
		op := ops.Value(i)
		if fullState && op != feed.OpInsert {
			t.Fatalf("a full state holds a %s", op)
		}
		if slices.Contains([]string{feed.OpDelete, feed.OpUpdateBefore, feed.OpUpdate}, op) {
			k := imageRow(before, i)
			if st[k] == 0 {
				t.Fatalf("%s of a row that is not there: %s", op, k)
			}
			if st[k]--; st[k] == 0 {
				delete(st, k)
			}
		}
		if slices.Contains([]string{feed.OpInsert, feed.OpUpdateAfter, feed.OpUpdate}, op) {
			st[imageRow(after, i)]++
		}
	}
}
