package registry

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// TestFileNotifierSQL: a commit to a table of the sql catalog (its row
// updated in the SQLite file) notifies every followed table of the
// catalog; other files beside it (the progress store) notify none.
func TestFileNotifierSQL(t *testing.T) {
	ctx := context.Background()
	wh := t.TempDir()
	cat, err := tablewrite.OpenWarehouse(ctx, wh)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	cfg := catalog.Config{Type: catalog.TypeSQL, Warehouse: wh}.WithDefaults()
	n := NewFileNotifier(cfg, catalog.DeltaConfig{}, cat, nil, slog.New(slog.DiscardHandler))
	defer n.Close()
	calls := map[string]chan struct{}{"a.t": make(chan struct{}, 1), "b.t": make(chan struct{}, 1)}
	for name, ch := range calls {
		stop := n.NotifyChanges(name, func() {
			select {
			case ch <- struct{}{}:
			default:
			}
		})
		if stop == nil {
			t.Fatalf("%s: the sql catalog's file is not watched", name)
		}
		defer stop()
	}
	if got := n.w.Watched(); len(got) != 1 || got[0] != wh {
		t.Fatalf("watched %v, want the catalog file's folder once", got)
	}
	if err := os.WriteFile(filepath.Join(wh, "sluice-consumers.db"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, ch := range calls {
		select {
		case <-ch:
			t.Fatalf("%s notified by a change of another file", name)
		case <-time.After(50 * time.Millisecond):
		}
	}
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	if _, err := tablewrite.CreateTable(ctx, cat, "a.t", sc); err != nil {
		t.Fatal(err)
	}
	for name, ch := range calls {
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s not notified of a commit to the catalog", name)
		}
	}
}

// TestFileNotifierTargets: a hadoop table's metadata folder and a local
// Delta table's _delta_log are watched for the names a commit writes; a
// table on object storage is not watched; a folder that cannot be watched
// is logged once at warn, and the table is left to polling.
func TestFileNotifierTargets(t *testing.T) {
	wh := t.TempDir()
	cfg := catalog.Config{Type: catalog.TypeHadoop, Warehouse: wh}.WithDefaults()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "t", "_delta_log"), 0o755); err != nil {
		t.Fatal(err)
	}
	deltaCfg := catalog.DeltaConfig{Root: root, Tables: map[string]string{"s3.t": "s3://bucket/t"}}
	delta := catalog.NewDeltaTables(context.Background(), deltaCfg, nil)
	var logs syncBuffer
	n := NewFileNotifier(cfg, deltaCfg, nil, delta, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	defer n.Close()

	dir, match, ok := n.target("ns.tbl")
	if !ok || dir != filepath.Join(wh, "ns", "tbl", "metadata") || !match("version-hint.text") ||
		!match("v3.metadata.json") || match("snap-1-uuid.avro") {
		t.Fatalf("hadoop table: %q, %v", dir, ok)
	}
	dir, match, ok = n.target("delta.t")
	if !ok || dir != filepath.Join(root, "t", "_delta_log") || !match("00000000000000000003.json") ||
		match("_commit_x.json.tmp") {
		t.Fatalf("delta table: %q, %v", dir, ok)
	}
	if _, _, ok := n.target("s3.t"); ok {
		t.Fatal("a Delta table on object storage is watched")
	}
	remoteCfg := catalog.DeltaConfig{Root: "s3://bucket/root"}
	remote := NewFileNotifier(cfg, remoteCfg, nil, catalog.NewDeltaTables(context.Background(), remoteCfg, nil),
		slog.New(slog.DiscardHandler))
	defer remote.Close()
	if _, _, ok := remote.target("delta.t"); ok {
		t.Fatal("a table under a Delta root on object storage is watched")
	}

	// The hadoop table does not exist: its folder cannot be watched.
	for range 2 {
		if stop := n.NotifyChanges("ns.tbl", func() {}); stop != nil {
			t.Fatal("a folder that does not exist is watched")
		}
	}
	if got := strings.Count(logs.String(), "level=WARN"); got != 1 {
		t.Fatalf("%d warnings for two failed watches, want 1:\n%s", got, logs.String())
	}
	stop := n.NotifyChanges("delta.t", func() {})
	if stop == nil {
		t.Fatalf("the Delta table's log is not watched:\n%s", logs.String())
	}
	stop()
	if got := n.w.Watched(); len(got) != 0 {
		t.Fatalf("still watched after stop: %v", got)
	}
}

// TestFileNotifierHadoop: a commit to a table of a local hadoop catalog
// (a new vN.metadata.json and version-hint.text in its metadata folder)
// notifies the table's follower.
func TestFileNotifierHadoop(t *testing.T) {
	ctx := context.Background()
	wh := t.TempDir()
	cfg := catalog.Config{Type: catalog.TypeHadoop, Warehouse: wh}.WithDefaults()
	cat, err := catalog.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	tbl, err := tablewrite.CreateTable(ctx, cat, "ns.tbl", sc)
	if err != nil {
		t.Fatal(err)
	}
	n := NewFileNotifier(cfg, catalog.DeltaConfig{}, cat, nil, slog.New(slog.DiscardHandler))
	defer n.Close()
	ch := make(chan struct{}, 1)
	stop := n.NotifyChanges("ns.tbl", func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	})
	if stop == nil {
		t.Fatal("the hadoop table's metadata folder is not watched")
	}
	defer stop()
	if _, err := tablewrite.Append(ctx, tbl, []tablewrite.Row{{"id": int64(1)}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("a commit to the hadoop table notified nothing")
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
