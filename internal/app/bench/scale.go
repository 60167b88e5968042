package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/catalog"
	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// workloadVersion names the way the cached workloads are written: bump it
// when a writer below changes, so a later run writes them again rather
// than reusing tables an older writer made.
const workloadVersion = 1

// ScaleFileRows is the size of the scale tables' data files.
const ScaleFileRows = 250_000

// ScaleParams are the statements of a scale table: Rows rows in files of
// FileRows, then a window of about 1% changes in three copy-on-write
// snapshots: an overwrite that updates Updates rows from UpdateFirst on
// (amount + 1, priority + 1; iceberg-go rewrites their files), a delete of
// Deletes rows from DeleteFirst on (rewriting their files), and an append
// of Inserts new rows.
type ScaleParams struct {
	Rows        int   `json:"rows"`
	FileRows    int   `json:"file_rows"`
	UpdateFirst int64 `json:"update_first"`
	Updates     int   `json:"updates"`
	DeleteFirst int64 `json:"delete_first"`
	Deletes     int   `json:"deletes"`
	Inserts     int   `json:"inserts"`
}

// NewScaleParams returns the statements of a scale table of rows rows: 1%
// of them changed, half updated, a quarter deleted, a quarter inserted;
// the updates start at the second file, the deletes at the first file
// after the updated ones (no row is both updated and deleted, so the
// window's net changes are its changes).
func NewScaleParams(rows int) ScaleParams {
	fileRows := min(ScaleFileRows, max(rows/4, 1))
	c := max(rows/100, 4)
	p := ScaleParams{Rows: rows, FileRows: fileRows, UpdateFirst: int64(fileRows) + 1, Updates: c / 2,
		Deletes: c / 4, Inserts: c - c/2 - c/4}
	lastUpdated := p.UpdateFirst + int64(p.Updates) - 1
	p.DeleteFirst = (lastUpdated+int64(fileRows)-1)/int64(fileRows)*int64(fileRows) + 1
	return p
}

// Changes is the number of change rows the window has: an update is a
// pair of images.
func (p ScaleParams) Changes() int64 { return int64(2*p.Updates + p.Deletes + p.Inserts) }

// Scale is a written scale table: the warehouse that holds it (one per
// table, so a table of another size is cached beside it) and its window.
type Scale struct {
	ScaleParams
	Warehouse string `json:"-"`
	Table     string `json:"table"`
	Base      int64  `json:"base"` // the last append before the window
	End       int64  `json:"end"`  // the window's end
	// Metadata is the table's metadata file at End.
	Metadata     string  `json:"metadata"`
	WriteSeconds float64 `json:"write_seconds"`
	Cached       bool    `json:"-"`
}

// cachedMarker is what a cached workload's marker file records: the writer,
// the statements, and what writing them produced.
type cachedMarker struct {
	Version int             `json:"version"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
}

// cached returns the workload the marker file dir+".json" records when it
// was written by this version with the same params and its warehouse is
// still there; otherwise it empties dir, calls write on a fresh warehouse
// there and records what it returned.
func cached[T any](ctx context.Context, dir string, params any, write func(*catalog.Catalog) (*T, error)) (*T, bool, error) {
	return cachedDir(ctx, dir, params, "catalog.db", func() (*T, error) {
		cat, err := tablewrite.OpenWarehouse(ctx, dir)
		if err != nil {
			return nil, err
		}
		defer cat.Close()
		return write(cat)
	})
}

// cachedDir returns the workload the marker file dir+".json" records when
// it was written by this version with the same params and dir still holds
// the file present; otherwise it empties dir, calls write and records what
// it returned.
func cachedDir[T any](_ context.Context, dir string, params any, present string, write func() (*T, error)) (*T, bool,
	error) {
	p, err := json.Marshal(params)
	if err != nil {
		return nil, false, err
	}
	markerFile := dir + ".json"
	if b, err := os.ReadFile(markerFile); err == nil {
		var m cachedMarker
		var have bytes.Buffer
		if json.Unmarshal(b, &m) == nil && json.Compact(&have, m.Params) == nil && m.Version == workloadVersion &&
			bytes.Equal(have.Bytes(), p) {
			if _, err := os.Stat(filepath.Join(dir, present)); err == nil {
				var out T
				if err := json.Unmarshal(m.Result, &out); err == nil {
					return &out, true, nil
				}
			}
		}
	}
	if err := os.Remove(markerFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, false, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, false, err
	}
	out, err := write()
	if err != nil {
		return nil, false, err
	}
	r, err := json.Marshal(out)
	if err != nil {
		return nil, false, err
	}
	b, err := json.MarshalIndent(cachedMarker{Version: workloadVersion, Params: p, Result: r}, "", "  ")
	if err != nil {
		return nil, false, err
	}
	return out, false, os.WriteFile(markerFile, append(b, '\n'), 0o644)
}

// WriteScale writes the scale table of p into a warehouse of its own under
// root (root/<rows>), or reuses the one an earlier run wrote the same way.
func WriteScale(ctx context.Context, root string, p ScaleParams) (*Scale, error) {
	dir := filepath.Join(canonical(root), fmt.Sprint(p.Rows))
	s, hit, err := cached(ctx, dir, p, func(cat *catalog.Catalog) (*Scale, error) {
		return writeScale(ctx, cat, p)
	})
	if err != nil {
		return nil, fmt.Errorf("scale table of %d rows: %w", p.Rows, err)
	}
	s.Warehouse, s.Cached = dir, hit
	return s, nil
}

func writeScale(ctx context.Context, cat *catalog.Catalog, p ScaleParams) (*Scale, error) {
	started := time.Now()
	tbl, err := tablewrite.CreateTable(ctx, cat, "bench.scale", Schema(),
		icecatalog.WithProperties(iceberg.Properties{"format-version": "2",
			"write.parquet.row-group-limit": "65536", "write.target-file-size-bytes": "1073741824",
			table.WriteDeleteModeKey: table.WriteModeCopyOnWrite}))
	if err != nil {
		return nil, err
	}
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return nil, err
	}
	// Each file its own commit: iceberg-go writes one file per append here.
	for first := 0; first < p.Rows; first += p.FileRows {
		n := min(p.FileRows, p.Rows-first)
		rec := Rows(memory.DefaultAllocator, sc, 4, int64(first+1), n, false)
		arrTbl := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
		tbl, err = tbl.AppendTable(ctx, arrTbl, int64(n)+1, nil)
		arrTbl.Release()
		rec.Release()
		if err != nil {
			return nil, err
		}
	}
	s := &Scale{ScaleParams: p, Table: "bench.scale", Base: tbl.CurrentSnapshot().SnapshotID}
	// The updates: the same ids, amount + 1 and priority + 1, in one
	// copy-on-write overwrite of the rows they replace.
	upd, err := updatedRows(ctx, tbl, p.UpdateFirst, p.Updates)
	if err != nil {
		return nil, err
	}
	tbl, err = tbl.OverwriteTable(ctx, upd, int64(p.Updates)+1, nil,
		table.WithOverwriteFilter(idRange(p.UpdateFirst, p.Updates)))
	upd.Release()
	if err != nil {
		return nil, fmt.Errorf("copy-on-write update: %w", err)
	}
	if tbl, err = tbl.Delete(ctx, idRange(p.DeleteFirst, p.Deletes), nil); err != nil {
		return nil, fmt.Errorf("copy-on-write delete: %w", err)
	}
	rec := Rows(memory.DefaultAllocator, sc, 5, int64(p.Rows+1), p.Inserts, false)
	arrTbl := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	tbl, err = tbl.AppendTable(ctx, arrTbl, int64(p.Inserts)+1, nil)
	arrTbl.Release()
	rec.Release()
	if err != nil {
		return nil, err
	}
	s.End, s.Metadata = tbl.CurrentSnapshot().SnapshotID, tbl.MetadataLocation()
	s.WriteSeconds = time.Since(started).Seconds()
	return s, nil
}

// idRange is first <= id < first+n.
func idRange(first int64, n int) iceberg.BooleanExpression {
	return iceberg.NewAnd(iceberg.GreaterThanEqual(iceberg.Reference("id"), first),
		iceberg.LessThan(iceberg.Reference("id"), first+int64(n)))
}

// updatedRows reads the n rows from id first on and returns them with
// amount + 1 and priority + 1, as a table the caller releases.
func updatedRows(ctx context.Context, tbl *table.Table, first int64, n int) (arrow.Table, error) {
	at, err := tbl.Scan(table.WithRowFilter(idRange(first, n))).ToArrowTable(ctx)
	if err != nil {
		return nil, err
	}
	defer at.Release()
	if at.NumRows() != int64(n) {
		return nil, fmt.Errorf("%d rows from id %d: found %d", n, first, at.NumRows())
	}
	sc := at.Schema()
	amount, priority := sc.FieldIndices("amount"), sc.FieldIndices("priority")
	if len(amount) != 1 || len(priority) != 1 {
		return nil, fmt.Errorf("the scan's schema %s has no amount or priority", sc)
	}
	tr := array.NewTableReader(at, 64<<10)
	defer tr.Release()
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for tr.Next() {
		rec := tr.RecordBatch()
		cols := slices.Clone(rec.Columns())
		ab := array.NewFloat64Builder(memory.DefaultAllocator)
		pb := array.NewInt32Builder(memory.DefaultAllocator)
		a, p := rec.Column(amount[0]).(*array.Float64), rec.Column(priority[0]).(*array.Int32)
		for i := range int(rec.NumRows()) {
			if a.IsNull(i) {
				ab.AppendNull()
			} else {
				ab.Append(a.Value(i) + 1)
			}
			if p.IsNull(i) {
				pb.AppendNull()
			} else {
				pb.Append(p.Value(i) + 1)
			}
		}
		cols[amount[0]], cols[priority[0]] = ab.NewArray(), pb.NewArray()
		ab.Release()
		pb.Release()
		recs = append(recs, array.NewRecordBatch(sc, cols, rec.NumRows()))
		cols[amount[0]].Release()
		cols[priority[0]].Release()
	}
	if err := tr.Err(); err != nil {
		return nil, err
	}
	return array.NewTableFromRecords(sc, recs), nil
}

// ScalePoint is one table size of the scale curve: its 1% window read
// through a fresh flightd with the Go client, and the full re-read diff.
type ScalePoint struct {
	*Scale
	// Feed is the window's feed: wall time, the Go client's CPU and
	// flightd's, per run.
	Feed Arm
	// FeedPeakMiB is flightd's peak RSS after the runs.
	FeedPeakMiB float64
	// Full is the full re-read diff in a process of its own (nil when
	// skipped; Skipped says why).
	Full    *PeerRead
	Skipped string
}

// runScale writes (or reuses) a scale table of each size and measures its
// window. The copy-on-write peers run on the table of cfg.PeerRows rows.
func runScale(ctx context.Context, cfg Config, rep *Report) error {
	root := filepath.Join(cfg.Work, "scale")
	for _, n := range cfg.ScaleRows {
		p := NewScaleParams(n)
		cfg.logf("writing (or reusing) the %d-row scale table", n)
		s, err := WriteScale(ctx, root, p)
		if err != nil {
			return err
		}
		if !s.Cached {
			cfg.logf("wrote the %d-row scale table in %.1f s", n, s.WriteSeconds)
		}
		pt := ScalePoint{Scale: s, Feed: Arm{Name: fmt.Sprintf("1%% window of a %d-row table: feed (Go client)", n)}}
		if err := scaleFeed(ctx, cfg, &pt); err != nil {
			return fmt.Errorf("scale %d: %w", n, err)
		}
		if cfg.FullDiffMaxRows > 0 && n > cfg.FullDiffMaxRows {
			pt.Skipped = fmt.Sprintf("not run: the table is larger than `-fulldiff-max-rows` (%d)", cfg.FullDiffMaxRows)
			// What it would hold: its map grows with the table.
			for _, q := range slices.Backward(rep.Scale) {
				if q.Full != nil && q.Full.PeakRSSMiB > 0 {
					pt.Skipped += fmt.Sprintf("; it peaked at %.1f GiB at %d rows, so about %.0f GiB here", q.Full.PeakRSSMiB/1024,
						q.Rows, q.Full.PeakRSSMiB/1024*float64(n)/float64(q.Rows))
					break
				}
			}
		} else {
			cfg.logf("measuring the full re-read diff of the %d-row table", n)
			if pt.Full, err = fullDiffProcess(ctx, cfg, s); err != nil {
				return fmt.Errorf("scale %d: %w", n, err)
			}
			if pt.Full.Rows != s.Changes() {
				return fmt.Errorf("scale %d: the full re-read diff found %d changed rows, the workload made %d", n,
					pt.Full.Rows, s.Changes())
			}
		}
		rep.Scale = append(rep.Scale, pt)
		if n == cfg.PeerRows {
			if err := runCoWPeers(ctx, cfg, s, rep); err != nil {
				return err
			}
		}
	}
	return nil
}

// scaleFeed measures the window of pt's table through a fresh flightd:
// one first read, then cfg.Runs measured ones.
func scaleFeed(ctx context.Context, cfg Config, pt *ScalePoint) error {
	srv, err := startFlightd(ctx, cfg, pt.Warehouse)
	if err != nil {
		return err
	}
	defer srv.stop()
	client, err := sluice.Dial(ctx, "grpc://"+srv.addr)
	if err != nil {
		return err
	}
	defer client.Close()
	base, end := pt.Base, pt.End
	req := sluice.ChangeRequest{Table: pt.Table, FromSnapshot: &base, ToSnapshot: &end}
	cfg.logf("measuring %s", pt.Feed.Name)
	for i := range cfg.Runs + 1 {
		self, server := selfCPU(), procCPU(srv.cmd.Process.Pid)
		start := time.Now()
		n, err := readGo(ctx, client, req)
		if err != nil {
			return err
		}
		if n != pt.Changes() {
			return fmt.Errorf("the feed has %d changes, the workload made %d", n, pt.Changes())
		}
		if i == 0 {
			continue
		}
		pt.Feed.Seconds = append(pt.Feed.Seconds, time.Since(start).Seconds())
		pt.Feed.CPU = append(pt.Feed.CPU, selfCPU()-self)
		pt.Feed.ServerCPU = append(pt.Feed.ServerCPU, procCPU(srv.cmd.Process.Pid)-server)
		pt.Feed.Rows = n
	}
	pt.FeedPeakMiB, err = peakRSS(srv.cmd.Process.Pid)
	return err
}

// canonical resolves the symbolic links of a folder's path when it exists:
// the tables written under it name their files by absolute paths, which
// must not pass through a link another folder holds.
func canonical(dir string) string {
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		return r
	}
	return dir
}
