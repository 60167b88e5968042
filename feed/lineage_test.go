package feed_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/feed"
	icebergformat "github.com/sluicefeed/sluice/format/iceberg"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// fixedTable serves one table with the given metadata, in place of its
// catalog's: a test rewrites metadata the way another writer leaves it.
type fixedTable struct {
	name string
	tbl  *table.Table
}

func (f fixedTable) LoadTable(_ context.Context, name string) (*table.Table, error) {
	if name != f.name {
		return nil, fmt.Errorf("no table %s", name)
	}
	return f.tbl, nil
}

// Load serves the table as the engine reads an Iceberg table.
func (f fixedTable) Load(ctx context.Context, name string) (feed.Table, error) {
	tbl, err := f.LoadTable(ctx, name)
	if err != nil {
		return nil, err
	}
	return icebergformat.NewTable(tbl, nil), nil
}

func (f fixedTable) ListTables(context.Context) ([]string, error) { return []string{f.name}, nil }

// rewriteMetadata returns the table with its metadata JSON edited by edit.
func rewriteMetadata(t *testing.T, tbl *table.Table, edit func(map[string]any)) *table.Table {
	t.Helper()
	raw, err := json.Marshal(tbl.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // snapshot ids do not fit a float64
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	edit(doc)
	if raw, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	meta, err := table.ParseMetadataBytes(raw)
	if err != nil {
		t.Fatal(err)
	}
	return table.New(tbl.Identifier(), meta, tbl.MetadataLocation(), tbl.FS, nil)
}

// expireOldest expires every snapshot but the last keep ones with
// iceberg-go's own ExpireSnapshots.
func (h *history) expireOldest(t *testing.T, keep int) *table.Table {
	t.Helper()
	tbl, err := tablewrite.Expire(context.Background(), h.tbl, keep)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(tbl.Metadata().Snapshots()); got != keep {
		t.Fatalf("%d snapshots retained, want %d", got, keep)
	}
	return tbl
}

// TestExpiryWithoutParentLink: pyiceberg 0.12's expire_snapshots drops the
// parent-snapshot-id of the oldest snapshot it keeps, so the parent link no
// longer tells that history has expired. The sequence numbers still do.
// Every window that would start before the retained history is "resync
// required", never a silent jump or NotFound.
func TestExpiryWithoutParentLink(t *testing.T) {
	h := newHistory(t, 5, 3)
	ctx := context.Background()
	expired := h.expireOldest(t, 2)
	oldest := h.snapshots[3]
	for _, tc := range []struct {
		name string
		edit func(map[string]any)
	}{
		{"parent link kept (Java, iceberg-go)", func(map[string]any) {}},
		{"parent link dropped (pyiceberg 0.12)", func(doc map[string]any) {
			for _, s := range doc["snapshots"].([]any) {
				snap := s.(map[string]any)
				if fmt.Sprint(snap["snapshot-id"]) == fmt.Sprint(oldest) {
					delete(snap, "parent-snapshot-id")
				}
			}
		}},
		{"parent link dropped, sequence numbers silent, the snapshot log names expired snapshots", func(doc map[string]any) {
			// What a writer that keeps the log leaves: only the log tells.
			var log []any
			for i, id := range h.snapshots {
				log = append(log, map[string]any{"snapshot-id": json.Number(fmt.Sprint(id)), "timestamp-ms": i + 1})
			}
			doc["snapshot-log"] = log
			for i, s := range doc["snapshots"].([]any) {
				snap := s.(map[string]any)
				snap["sequence-number"] = i + 1
				snap["timestamp-ms"] = 100 + i
				if fmt.Sprint(snap["snapshot-id"]) == fmt.Sprint(oldest) {
					delete(snap, "parent-snapshot-id")
				}
			}
			doc["last-sequence-number"] = 2
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tbl := rewriteMetadata(t, expired, tc.edit)
			eng := feed.New(fixedTable{tableName, tbl}, feed.Options{})
			hist, err := eng.History(ctx, tableName)
			if err != nil {
				t.Fatal(err)
			}
			if !hist.Expired || len(hist.Snapshots) != 2 || hist.Snapshots[0].ID != oldest {
				t.Fatalf("history %+v: want expired, oldest retained %d", hist, oldest)
			}
			earliest, _ := hist.EarliestStart()
			resync := func(t *testing.T, req feed.Request) {
				t.Helper()
				_, err := eng.Plan(ctx, req)
				if !errors.Is(err, feed.ErrResyncRequired) {
					t.Fatalf("err = %v, want resync required", err)
				}
				if !strings.Contains(err.Error(), fmt.Sprint(earliest)) {
					t.Fatalf("err = %v, want the earliest start %d named", err, earliest)
				}
			}
			t.Run("from the start of history", func(t *testing.T) { resync(t, feed.Request{Table: tableName}) })
			t.Run("from an expired snapshot", func(t *testing.T) {
				resync(t, feed.Request{Table: tableName, FromSnapshot: &h.snapshots[0]})
			})
			t.Run("from a time before the retained history", func(t *testing.T) {
				ts := int64(1)
				resync(t, feed.Request{Table: tableName, FromTimestampMs: &ts})
			})
			t.Run("to a time before the retained history", func(t *testing.T) {
				ts := int64(1)
				resync(t, feed.Request{Table: tableName, ToTimestampMs: &ts})
			})
			t.Run("from the earliest start", func(t *testing.T) {
				_, got, _ := read(t, eng, feed.Request{Table: tableName, FromSnapshot: &earliest})
				lo := 3 // the parent is known: the oldest retained snapshot's rows are readable
				if earliest == oldest {
					lo = 4
				}
				sameChanges(t, got, h.wantInserts(lo, 5))
			})
		})
	}
}

// TestHistoryNotExpired: a table whose first snapshot is retained has no
// expired history, whatever its sequence numbers.
func TestHistoryNotExpired(t *testing.T) {
	h := newHistory(t, 3, 2)
	eng := feed.New(h.cat, feed.Options{})
	hist, err := eng.History(context.Background(), tableName)
	if err != nil {
		t.Fatal(err)
	}
	if hist.Expired || len(hist.Snapshots) != 3 {
		t.Fatalf("history %+v: want 3 snapshots, not expired", hist)
	}
	if _, ok := hist.EarliestStart(); ok {
		t.Fatal("EarliestStart of an unexpired history")
	}
	_, got, _ := read(t, eng, feed.Request{Table: tableName})
	sameChanges(t, got, h.wantInserts(0, 3))
}

// TestReversedWindow: a window whose start comes after its end says so.
func TestReversedWindow(t *testing.T) {
	h := newHistory(t, 3, 1)
	eng := feed.New(h.cat, feed.Options{})
	ctx := context.Background()
	_, err := eng.Plan(ctx, feed.Request{Table: tableName, FromSnapshot: &h.snapshots[2], ToSnapshot: &h.snapshots[0]})
	if !errors.Is(err, feed.ErrNotAncestor) || !strings.Contains(err.Error(), "swap them") {
		t.Fatalf("snapshots: err = %v, want not-ancestor saying swap them", err)
	}
	from, to := int64(2000), int64(1000)
	_, err = eng.Plan(ctx, feed.Request{Table: tableName, FromTimestampMs: &from, ToTimestampMs: &to})
	if !errors.Is(err, feed.ErrInvalidRequest) || !strings.Contains(err.Error(), "swap them") {
		t.Fatalf("timestamps: err = %v, want invalid request saying swap them", err)
	}
}

// TestV1CommitSeqSurvivesExpiry: a format v1 table has no sequence
// numbers; its commit_seq grows by at least one with every commit to the
// main branch (also when commits share a millisecond) and does not change
// when older snapshots expire, so that lag and redelivery checks keep
// working. (It used to be the position in the retained lineage, which
// shifted down on expiry.)
func TestV1CommitSeqSurvivesExpiry(t *testing.T) {
	ctx := context.Background()
	cat, err := tablewrite.OpenWarehouse(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	tbl, err := tablewrite.CreateTable(ctx, cat, tableName, ordersSchema(),
		icecatalog.WithProperties(iceberg.Properties{"format-version": "1"}))
	if err != nil {
		t.Fatal(err)
	}
	h := &history{cat: cat, tbl: tbl}
	for i := range 5 {
		h.appendRows(t, []tablewrite.Row{{"id": i + 1}})
	}
	if v := h.tbl.Metadata().Version(); v != 1 {
		t.Fatalf("format version %d, want 1", v)
	}
	seqs := func(tbl *table.Table) map[int64]int64 {
		t.Helper()
		hist, err := feed.New(fixedTable{tableName, tbl}, feed.Options{}).History(ctx, tableName)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int64]int64{}
		for i, s := range hist.Snapshots {
			if i > 0 && s.CommitSeq < hist.Snapshots[i-1].CommitSeq+1 {
				t.Fatalf("commit_seq %d after %d: want it to grow with every commit", s.CommitSeq,
					hist.Snapshots[i-1].CommitSeq)
			}
			out[s.ID] = s.CommitSeq
		}
		return out
	}
	before := seqs(h.tbl)
	if len(before) != 5 {
		t.Fatalf("%d snapshots", len(before))
	}
	expired := h.expireOldest(t, 2)
	after := seqs(expired)
	for id, cs := range after {
		if before[id] != cs {
			t.Fatalf("snapshot %d: commit_seq %d before the expiry, %d after", id, before[id], cs)
		}
	}
	eng := feed.New(fixedTable{tableName, expired}, feed.Options{})
	st, err := eng.Status(ctx, tableName)
	if err != nil || st.CommitSeq != before[h.snapshots[4]] {
		t.Fatalf("status after the expiry: %+v %v, want commit_seq %d", st, err, before[h.snapshots[4]])
	}
	hist, err := eng.History(ctx, tableName)
	if err != nil {
		t.Fatal(err)
	}
	if got := hist.CommitsSince(before[h.snapshots[0]]); got != 2 {
		t.Fatalf("commits since an expired snapshot: %d, want the 2 retained after it", got)
	}

	// Commits in one millisecond, and a clock that went back: commit_seq
	// still grows with every commit.
	same := rewriteMetadata(t, h.tbl, func(doc map[string]any) {
		for i, s := range doc["snapshots"].([]any) {
			s.(map[string]any)["timestamp-ms"] = 1000 - min(i, 2)
		}
		delete(doc, "snapshot-log")
	})
	got := seqs(same)
	if got[h.snapshots[0]] != 1000*1000 || got[h.snapshots[4]] != 1000*1000+4 {
		t.Fatalf("commit_seq of commits in one millisecond: %v", got)
	}
}

// TestSummaryDisagreeingWithManifestsFailsLoudly: a snapshot whose manifests
// do not add up to its summary's file counts (what pyiceberg before 0.12
// left, had its removals gone unseen) fails the read with
// ErrInconsistentSnapshot naming the snapshot, instead of a feed that does
// not add up.
func TestSummaryDisagreeingWithManifestsFailsLoudly(t *testing.T) {
	h := newHistory(t, 3, 2)
	ctx := context.Background()
	target := h.snapshots[1]
	tbl := rewriteMetadata(t, h.tbl, func(doc map[string]any) {
		for _, s := range doc["snapshots"].([]any) {
			snap := s.(map[string]any)
			if fmt.Sprint(snap["snapshot-id"]) == fmt.Sprint(target) {
				snap["summary"].(map[string]any)["deleted-data-files"] = "1"
			}
		}
	})
	eng := feed.New(fixedTable{tableName, tbl}, feed.Options{})
	_, err := eng.Plan(ctx, feed.Request{Table: tableName})
	if !errors.Is(err, feed.ErrInconsistentSnapshot) || !strings.Contains(err.Error(), fmt.Sprint(target)) {
		t.Fatalf("err = %v, want ErrInconsistentSnapshot naming snapshot %d", err, target)
	}
}
