package bench

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/format/delta"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
	"github.com/sluicefeed/sluice/internal/testkit/testsvc"
)

// The workloads are what the report says, and the full re-read baseline
// finds the same changes as the feed.
func TestWorkloads(t *testing.T) {
	ctx := context.Background()
	cat, err := tablewrite.OpenWarehouse(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	ref, err := WriteReference(ctx, cat, "bench.ref", 8000)
	if err != nil {
		t.Fatal(err)
	}
	if len(ref.Appends) != 4 || len(ref.DataFiles) != 4 {
		t.Fatalf("%d appends, %d files", len(ref.Appends), len(ref.DataFiles))
	}
	n, err := RawDecode(ctx, ref.DataFiles, []string{"id", "amount"}, 2)
	if err != nil || n != 8000 {
		t.Fatalf("raw decode: %d rows, %v", n, err)
	}
}

// The scale tables' statements touch disjoint rows in files of their own
// at every size, and change 1% of the rows.
func TestScaleParams(t *testing.T) {
	for _, rows := range []int{4000, 20000, 1_000_000, 10_000_000, 100_000_000} {
		p := NewScaleParams(rows)
		updLast := p.UpdateFirst + int64(p.Updates) - 1
		if p.DeleteFirst <= updLast || (p.DeleteFirst-1)%int64(p.FileRows) != 0 ||
			p.DeleteFirst+int64(p.Deletes)-1 > int64(rows) || p.Updates+p.Deletes+p.Inserts != rows/100 {
			t.Errorf("%d rows: %+v", rows, p)
		}
	}
}

// A scale table's window holds the statements' changes, update pairs
// included, and the full re-read diff finds as many; a second write reuses
// the cached table.
func TestScaleWorkload(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	p := NewScaleParams(20000)
	s, err := WriteScale(ctx, root, p)
	if err != nil {
		t.Fatal(err)
	}
	if s.Cached || p.FileRows != 5000 || p.Changes() != 300 {
		t.Fatalf("first write: cached %v, params %+v", s.Cached, p)
	}
	again, err := WriteScale(ctx, root, p)
	if err != nil || !again.Cached || again.End != s.End || again.Base != s.Base || again.Warehouse != s.Warehouse {
		t.Fatalf("second write: %+v, %v; want the table reused", again, err)
	}
	cat, err := tablewrite.OpenWarehouse(ctx, s.Warehouse)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	tbl, err := cat.LoadTable(ctx, s.Table)
	if err != nil {
		t.Fatal(err)
	}
	full, err := FullDiff(ctx, tbl, s.Base, s.End)
	if err != nil {
		t.Fatal(err)
	}
	eng := feed.New(cat, feed.Options{})
	plan, err := eng.Plan(ctx, feed.Request{Table: s.Table, FromSnapshot: &s.Base, ToSnapshot: &s.End})
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]int64{}
	for b, err := range eng.Read(ctx, plan) {
		if err != nil {
			t.Fatal(err)
		}
		op := b.Record.Column(b.Record.Schema().FieldIndices("op")[0])
		for i := range op.Len() {
			ops[op.ValueStr(i)]++
		}
		b.Record.Release()
	}
	want := map[string]int64{"insert": 50, "delete": 50, "update_before": 100, "update_after": 100}
	if !maps.Equal(ops, want) || full != p.Changes() {
		t.Fatalf("the 1%% window: the feed has %v, the full diff %d changes; want %v and %d", ops, full, want,
			p.Changes())
	}
}

// The Delta workload is what the report says: appends of one file each,
// then one MERGE that rewrites one file, with a change data file of its
// changed rows when the feed is on; a second write reuses the tables. (The
// run itself checks that Sluice's feeds and delta-rs's agree.) It needs a
// Python with deltalake, numpy and pyarrow in SLUICE_PYTHON.
func TestDeltaWorkload(t *testing.T) {
	python := testsvc.Python(t)
	ctx := context.Background()
	cfg := Config{Python: python}
	if _, err := deltalakeVersion(ctx, python); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	p := NewDeltaParams(8000)
	wl, err := WriteDelta(ctx, cfg, root, p)
	if err != nil {
		t.Fatal(err)
	}
	if wl.Cached || wl.End != int64(p.Files) {
		t.Fatalf("first write: cached %v, window end %d, want written and %d", wl.Cached, wl.End, p.Files)
	}
	again, err := WriteDelta(ctx, cfg, root, p)
	if err != nil || !again.Cached || again.End != wl.End {
		t.Fatalf("second write: %+v, %v; want the tables reused", again, err)
	}
	for _, tc := range []struct {
		table string
		cdcs  int
	}{{DeltaTableCDF, 1}, {DeltaTableNoCDF, 0}} {
		log, err := delta.Open(ctx, os.DirFS(filepath.Join(root, tc.table)), tc.table)
		if err != nil {
			t.Fatal(err)
		}
		vs, err := log.Versions(ctx)
		if err != nil || vs.Latest != wl.End {
			t.Fatalf("%s: versions %+v, %v; want the latest %d", tc.table, vs, err, wl.End)
		}
		rows := int64(0)
		for v := range wl.End + 1 {
			c, err := log.Commit(ctx, v)
			if err != nil {
				t.Fatal(err)
			}
			adds, removes, cdcs := len(c.Adds), len(c.Removes), len(c.CDCs)
			if v < wl.End {
				if adds != 1 || removes != 0 || cdcs != 0 {
					t.Errorf("%s version %d: %d adds, %d removes, %d cdc files; want one add", tc.table, v, adds,
						removes, cdcs)
				}
				var st struct {
					NumRecords int64 `json:"numRecords"`
				}
				if err := json.Unmarshal([]byte(c.Adds[0].Stats), &st); err != nil {
					t.Fatal(err)
				}
				rows += st.NumRecords
				continue
			}
			if c.CommitInfo == nil || c.CommitInfo.Operation != "MERGE" || adds != 1 || removes != 1 || cdcs != tc.cdcs {
				t.Errorf("%s version %d: %d adds, %d removes, %d cdc files; want a MERGE of one add, one remove "+
					"and %d cdc files", tc.table, v, adds, removes, cdcs, tc.cdcs)
			}
		}
		if rows != int64(p.Rows) {
			t.Errorf("%s: %d rows appended, want %d", tc.table, rows, p.Rows)
		}
	}
}

// A whole run at a tiny size, without Spark and Delta: every arm runs
// through a real flightd, the peers read the same windows and agree on
// them (Run checks that), and the report has the side-by-side table and
// the scale curve, whose plot is well-formed SVG.
func TestRunTiny(t *testing.T) {
	python := testsvc.Python(t)
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "github.com/sluicefeed/sluice/cmd/flightd")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build flightd: %v\n%s", err, out)
	}
	cfg := Config{Work: filepath.Join(dir, "work"), Flightd: filepath.Join(dir, "flightd"), Python: python, Runs: 1,
		Rows: 4000, ScaleRows: []int{4000}, PeerRows: 4000, DeltaRows: -1, SVG: "bench-scale.svg",
		Log: testLog{t}}
	if err := os.MkdirAll(cfg.Work, 0o755); err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var readers []string
	for _, p := range rep.Peers {
		readers = append(readers, p.Window+": "+p.Reader)
		if p.Rows == 0 || len(p.Seconds) != 1 || len(p.CPU) != 1 || p.PeakRSSMiB <= 0 {
			t.Errorf("%s, %s: %+v; want rows, a time, a CPU time and a peak RSS", p.Window, p.Reader, p.PeerRead)
		}
		if p.Sluice && (len(p.ServerCPU) != 1 || p.ServerPeakMiB <= 0) {
			t.Errorf("%s, %s: flightd's CPU %v, peak %v", p.Window, p.Reader, p.ServerCPU, p.ServerPeakMiB)
		}
	}
	want := []string{"append window: " + readerSluiceCold, "append window: " + readerSluiceWarm,
		"append window: " + readerSluiceFlat, "append window: " + readerSluiceRend,
		"copy-on-write window (4000-row table): Sluice via pyarrow",
		"copy-on-write window (4000-row table): full re-read of both snapshots and diff, Go (iceberg-go scan)"}
	for _, w := range want {
		if !slices.Contains(readers, w) {
			t.Errorf("no peer %q among %q", w, readers)
		}
	}
	if len(rep.Scale) != 1 || rep.Scale[0].Full == nil || rep.Scale[0].Feed.Rows != 60 ||
		rep.Scale[0].Full.Rows != 60 || rep.Scale[0].FeedPeakMiB <= 0 {
		t.Fatalf("scale points %+v", rep.Scale)
	}
	md := rep.Markdown("test", cfg)
	for _, s := range []string{"## Peers, side by side", "## Large windows", "](bench-scale.svg)", "pyiceberg's speed",
		"## Decode line", "flightd's CPU per row, full width", "append window, flat: Sluice via pyarrow at"} {
		if !strings.Contains(md, s) {
			t.Errorf("the report lacks %q", s)
		}
	}
}

// The plot is well-formed SVG with a point per measured value, and says
// where the full diff was not run.
func TestScaleSVG(t *testing.T) {
	pt := func(rows int, feed, server, full float64) ScalePoint {
		p := ScalePoint{Scale: &Scale{ScaleParams: NewScaleParams(rows)},
			Feed: Arm{Seconds: []float64{feed}, ServerCPU: []float64{server}}}
		if full > 0 {
			p.Full = &PeerRead{Seconds: []float64{full}}
		}
		return p
	}
	svg := ScaleSVG([]ScalePoint{pt(1_000_000, 0.2, 0.3, 5), pt(10_000_000, 0.9, 1.1, 50),
		pt(100_000_000, 4, 5, 0)})
	dec := xml.NewDecoder(strings.NewReader(svg))
	circles := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the plot is not XML: %v\n%s", err, svg)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "circle" {
			circles++
		}
	}
	if circles != 8 {
		t.Errorf("the plot has %d points, want 8", circles)
	}
	for _, s := range []string{"not run above 10M rows", ">100 ms<", ">100 s<", ">1M<", ">100M<"} {
		if !strings.Contains(svg, s) {
			t.Errorf("the plot lacks %q:\n%s", s, svg)
		}
	}
}

// testLog writes a run's progress to the test's log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// The Paimon arm at a tiny size: pypaimon writes both tables (a second
// write reuses them), Sluice through a real flightd and pypaimon read the
// same snapshots and agree on them (RunPaimon checks that), the upsert
// snapshot's changes are the workload's, and the section renders every
// read. It needs SLUICE_PYTHON (pyarrow) and SLUICE_PAIMON_PYTHON
// (pypaimon).
func TestPaimonArmTiny(t *testing.T) {
	python, paimonPython := testsvc.Python(t), testsvc.PaimonPython(t)
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "github.com/sluicefeed/sluice/cmd/flightd")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build flightd: %v\n%s", err, out)
	}
	cfg := Config{Work: filepath.Join(dir, "work"), Flightd: filepath.Join(dir, "flightd"), Python: python,
		PaimonPython: paimonPython, Runs: 1, Rows: 4000, PaimonRows: 2000, Log: testLog{t}}
	if err := os.MkdirAll(cfg.Work, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rep, err := RunPaimonAlone(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	pr := rep.Paimon
	if pr == nil || pr.Workload.Cached || pr.Workload.AppendEnd != paimonFiles || pr.Workload.PKBase != paimonFiles ||
		pr.Workload.PKEnd != paimonFiles+1 {
		t.Fatalf("the Paimon report %+v; want freshly written tables of %d appends", pr, paimonFiles)
	}
	for _, r := range []*PeerRead{pr.AppendSluice, pr.AppendPeer, pr.PKSluice, pr.PKPeer} {
		if r.Rows != 2000 || len(r.Seconds) != 1 || len(r.CPU) != 1 || r.PeakRSSMiB <= 0 {
			t.Errorf("a state read %+v; want 2000 rows, a time, a CPU time and a peak RSS", r)
		}
	}
	for _, r := range []*PeerRead{pr.AppendSluice, pr.PKSluice, pr.Upsert} {
		if len(r.ServerCPU) != 1 || r.ServerPeakMiB <= 0 {
			t.Errorf("a Sluice read: flightd's CPU %v, peak %v", r.ServerCPU, r.ServerPeakMiB)
		}
	}
	if pr.UpsertStrategy != "paimon-merge-diff" || pr.Upsert.Rows != 2*20+2 {
		t.Errorf("the upsert snapshot: strategy %q, %d rows; want paimon-merge-diff and 42", pr.UpsertStrategy,
			pr.Upsert.Rows)
	}
	md := rep.PaimonMarkdown("test", cfg)
	for _, s := range []string{"## Paimon: Sluice and pypaimon", "pypaimon 2.1.0 `to_arrow()`", "**Machine:**",
		"20 update_before, 20 update_after, 2 delete"} {
		if !strings.Contains(md, s) {
			t.Errorf("the section lacks %q:\n%s", s, md)
		}
	}
	again, err := WritePaimon(ctx, cfg, filepath.Join(cfg.Work, "paimon"), NewPaimonParams(2000))
	if err != nil || !again.Cached || again.PKEnd != pr.Workload.PKEnd {
		t.Fatalf("second write: %+v, %v; want the tables reused", again, err)
	}
}

// TestPlanningTiny plans the windows of a tiny Iceberg and a tiny Delta
// history through flightd: each window has its cold plan, its warm ones
// and the files the plan reads, and the section a row per window.
func TestPlanningTiny(t *testing.T) {
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "github.com/sluicefeed/sluice/cmd/flightd")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build flightd: %v\n%s", err, out)
	}
	ice, err := ParsePlanHistories("20:40")
	if err != nil {
		t.Fatal(err)
	}
	dl, err := ParseDeltaHistories("10:20:4")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Work: filepath.Join(dir, "work"), Flightd: filepath.Join(dir, "flightd"), PlanHistories: ice,
		PlanDeltaHistories: dl, Log: testLog{t}}
	rep, err := RunPlanning(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Planning) != 2 {
		t.Fatalf("%d histories planned, want 2", len(rep.Planning))
	}
	for _, h := range rep.Planning {
		if len(h.Windows) != 2 || h.PeakMiB <= 0 {
			t.Fatalf("%s: windows %+v, peak %v", h.Format, h.Windows, h.PeakMiB)
		}
		for _, w := range h.Windows {
			if w.ColdSeconds <= 0 || len(w.WarmSeconds) != planWarmRuns || w.Files <= 0 {
				t.Errorf("%s %s: %+v", h.Format, w.Name, w)
			}
		}
		// The closing rewrite removes one file and adds one.
		if w := h.Windows[1]; w.Files != 2 {
			t.Errorf("%s %s reads %d files, want 2", h.Format, w.Name, w.Files)
		}
	}
	md := rep.PlanningSection()
	for _, s := range []string{"| Iceberg | 20 | 40 |", "| Delta | 10 | 20 | 4 |"} {
		if !strings.Contains(md, s) {
			t.Errorf("the section lacks %q:\n%s", s, md)
		}
	}
	if _, err := ParsePlanHistories("10"); err == nil {
		t.Error("-plan-histories 10: no error")
	}
	if _, err := ParseDeltaHistories("10:20"); err == nil {
		t.Error("-plan-delta-histories 10:20: no error")
	}
}
