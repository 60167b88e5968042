package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"google.golang.org/grpc/codes"

	"github.com/sluicefeed/sluice/catalog"
	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// addedFiles returns the data files and the manifests that a snapshot of
// a table added, as local paths.
func addedFiles(t *testing.T, warehouse, name string, snapshot int64) (data, manifests []string) {
	t.Helper()
	ctx := context.Background()
	cat, err := tablewrite.OpenWarehouse(ctx, warehouse)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	tbl, err := cat.LoadTable(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := tbl.SnapshotByID(snapshot).Manifests(fsys)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.SnapshotID() != snapshot {
			continue
		}
		manifests = append(manifests, strings.TrimPrefix(m.FilePath(), "file://"))
		for e, err := range m.Entries(fsys, true) {
			if err != nil {
				t.Fatal(err)
			}
			data = append(data, strings.TrimPrefix(e.DataFile().FilePath(), "file://"))
		}
	}
	if len(data) == 0 || len(manifests) == 0 {
		t.Fatalf("snapshot %d added no data file or manifest", snapshot)
	}
	return data, manifests
}

// readResult is how a read went: the batches that came, and the error
// that ended it (nil: a clean end).
type readResult struct {
	metas []sluice.BatchMeta
	err   error
}

// readAll reads a window with the Go client to its end.
func readAll(ctx context.Context, c *sluice.Client, req sluice.ChangeRequest) readResult {
	rdr, err := c.Changes(ctx, req)
	if err != nil {
		return readResult{err: err}
	}
	defer rdr.Release()
	var res readResult
	for b, err := range rdr.All() {
		if err != nil {
			res.err = err
			break
		}
		res.metas = append(res.metas, b.Meta)
	}
	return res
}

// damaged checks the read of a history whose snapshot victim has a damaged
// file: the snapshots before it may arrive, complete, then the stream fails
// with FailedPrecondition naming the file; no row of victim or later
// arrives, and the stream never ends cleanly.
func damaged(t *testing.T, res readResult, fix *fixture, victim int, file, msg string) {
	t.Helper()
	if res.err == nil {
		t.Fatalf("the read of a history with a damaged file ended cleanly after %d batches", len(res.metas))
	}
	if sluice.Code(res.err) != codes.FailedPrecondition || !strings.Contains(res.err.Error(), file) ||
		!strings.Contains(res.err.Error(), msg) {
		t.Fatalf("the read ended with %v, want FailedPrecondition naming %s and saying %q", res.err, file, msg)
	}
	t.Logf("%d batches of earlier snapshots, then %v", len(res.metas), res.err)
	before := map[int64]bool{}
	for _, s := range fix.Snapshots[:victim] {
		before[s.Snapshot] = true
	}
	for _, m := range res.metas {
		if !before[m.Snapshot] {
			t.Fatalf("a batch of snapshot %d arrived, at or after the damaged snapshot %d", m.Snapshot,
				fix.Snapshots[victim].Snapshot)
		}
	}
}

// TestFaultDamagedFiles damages one file of the third of five snapshots --
// deletes a data file, truncates one, overwrites bytes of a manifest -- and
// reads the history through a real flightd: the read fails with
// FailedPrecondition naming the file (with the Go client, the pyarrow
// client and a follow stream), windows that do not touch the file still
// read, and the server goes on serving.
func TestFaultDamagedFiles(t *testing.T) {
	const victim = 2
	for _, tt := range []struct {
		name   string
		damage func(t *testing.T, data, manifests []string) string // returns the damaged file
		msg    string
	}{
		{"deleted data file", func(t *testing.T, data, _ []string) string {
			if err := os.Remove(data[0]); err != nil {
				t.Fatal(err)
			}
			return data[0]
		}, "resync required"},
		{"truncated data file", func(t *testing.T, data, _ []string) string {
			st, err := os.Stat(data[0])
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(data[0], st.Size()/2); err != nil {
				t.Fatal(err)
			}
			return data[0]
		}, "cannot be read"},
		{"corrupted manifest header", func(t *testing.T, _, manifests []string) string {
			// The middle of the file: the Avro header's schema.
			return overwrite(t, manifests[0], func(size int) int { return size / 2 })
		}, "manifest"},
		{"corrupted manifest entries", func(t *testing.T, _, manifests []string) string {
			// The end of the file, before the 16-byte sync marker: the
			// block of entries.
			return overwrite(t, manifests[0], func(size int) int { return size - 16 - 32 })
		}, "manifest"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fix := writeEvents(t, 5, 21)
			data, manifests := addedFiles(t, fix.Warehouse, eventsTable, fix.Snapshots[victim].Snapshot)
			file := tt.damage(t, data, manifests)
			srv := startFlightd(t, "--warehouse", fix.Warehouse, "--max-batch-rows", "8")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			c := dialGo(t, ctx, srv.URI())

			damaged(t, readAll(ctx, c, sluice.ChangeRequest{Table: eventsTable}), fix, victim, file, tt.msg)
			// Again: the failure is not cached into a success.
			damaged(t, readAll(ctx, c, sluice.ChangeRequest{Table: eventsTable}), fix, victim, file, tt.msg)
			// A follow stream from the first snapshot fails the same way,
			// at once: a damaged file is not a transient failure to retry.
			sub, err := c.Subscribe(ctx, sluice.SubscribeRequest{Table: eventsTable,
				Start: sluice.StartFromSnapshot, FromSnapshot: &fix.Snapshots[0].Snapshot})
			var res readResult
			if err != nil {
				res.err = err
			} else {
				for b, err := range sub.All() {
					if err != nil {
						res.err = err
						break
					}
					res.metas = append(res.metas, b.Meta)
				}
				sub.Release()
			}
			damaged(t, res, fix, victim, file, tt.msg)
			// The pyarrow client sees the same failure.
			if py := os.Getenv("SLUICE_PYTHON"); py != "" {
				pyarrowDamaged(t, ctx, py, srv.URI(), fix, victim, file, tt.msg)
			}
			// Windows that do not read the damaged snapshot's files.
			before := readAll(ctx, c, sluice.ChangeRequest{Table: eventsTable, ToSnapshot: &fix.Snapshots[victim-1].Snapshot})
			after := readAll(ctx, c, sluice.ChangeRequest{Table: eventsTable, FromSnapshot: &fix.Snapshots[victim].Snapshot})
			if strings.HasPrefix(tt.name, "corrupted manifest") {
				// Planning a window after the snapshot needs nothing of its
				// manifest only when its entries are cached: either way,
				// never a clean end with missing rows.
				if after.err != nil {
					damaged(t, after, fix, victim, file, tt.msg)
					after = readResult{}
				}
			}
			if before.err != nil || after.err != nil {
				t.Fatalf("windows around the damaged snapshot: %v, %v", before.err, after.err)
			}
			if _, err := c.CommitSeq(ctx, eventsTable); err != nil {
				t.Fatalf("the server after the failures: %v", err)
			}
		})
	}
}

// overwrite flips 32 bytes of a file from the offset at(size) on, and
// returns the file.
func overwrite(t *testing.T, path string, at func(size int) int) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := at(len(b)); i < at(len(b))+32; i++ {
		b[i] ^= 0xA5
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// pyarrowDamaged reads the history with pyarrow's own Flight client.
func pyarrowDamaged(t *testing.T, ctx context.Context, py, uri string, fix *fixture, victim int, file, msg string) {
	t.Helper()
	script := `
import json, sys
import pyarrow.flight as flight
client = flight.connect(sys.argv[1])
snapshots = []
try:
    reader = client.do_get(flight.Ticket(json.dumps({"table": sys.argv[2]}).encode()))
    while True:
        chunk = reader.read_chunk()
        snapshots.append(json.loads(chunk.app_metadata.to_pybytes())["snapshot"])
except StopIteration:
    print(json.dumps({"clean": True, "snapshots": snapshots}))
except Exception as e:
    print(json.dumps({"clean": False, "type": type(e).__name__, "error": str(e), "snapshots": snapshots}))
`
	out, err := exec.CommandContext(ctx, py, "-c", script, uri, eventsTable).CombinedOutput()
	if err != nil {
		t.Fatalf("pyarrow: %v\n%s", err, out)
	}
	var got struct {
		Clean     bool    `json:"clean"`
		Type      string  `json:"type"`
		Error     string  `json:"error"`
		Snapshots []int64 `json:"snapshots"`
	}
	if err := jsonUnmarshal(out, &got); err != nil {
		t.Fatalf("pyarrow printed %s: %v", out, err)
	}
	// pyarrow maps FailedPrecondition to ArrowInvalid ("Flight returned
	// invalid argument error" is not used for it: the message says so).
	if got.Clean || !strings.Contains(got.Error, file) || !strings.Contains(got.Error, msg) ||
		!strings.Contains(got.Error, "FailedPrecondition") && !strings.Contains(got.Error, "failed precondition") &&
			got.Type != "ArrowInvalid" {
		t.Fatalf("pyarrow's read of the damaged history: %+v", got)
	}
	for _, s := range got.Snapshots {
		if !slices.ContainsFunc(fix.Snapshots[:victim], func(x fixtureSnapshot) bool { return x.Snapshot == s }) {
			t.Fatalf("pyarrow got a batch of snapshot %d, at or after the damaged one", s)
		}
	}
}

// metricsAddr waits for flightd's log line announcing its metrics server
// (flightd must run with --log-level info and --metrics-listen) and
// returns the address.
func metricsAddr(t *testing.T, f *flightd) string {
	t.Helper()
	re := regexp.MustCompile(`msg="serving metrics" address=(\S+)`)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(f.logs()); m != nil {
			return m[1]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("flightd did not log its metrics address:\n%s", f.logs())
	return ""
}

// metric returns the value of an unlabelled Prometheus metric.
func metric(t *testing.T, addr, name string) float64 {
	t.Helper()
	v, ok := metricWhere(t, addr, func(line string) bool { return strings.HasPrefix(line, name+" ") })
	if !ok {
		t.Fatalf("no metric %s", name)
	}
	return v
}

// metricWhere returns the value of the first sample line of the server's
// /metrics that match accepts; ok is false when none does.
func metricWhere(t *testing.T, addr string, match func(line string) bool) (float64, bool) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !match(line) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatal(err)
		}
		return v, true
	}
	return 0, false
}

// rssKiB returns a process's resident set size (VmRSS) and its peak
// (VmHWM), in KiB.
func rssKiB(t *testing.T, pid int) (rss, peak int64) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = n
		case "VmHWM:":
			peak = n
		}
	}
	return rss, peak
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// TestFaultCatalogUnavailable makes the catalog database unavailable under
// a running flightd -- moved away, or overwritten with garbage -- and
// brings it back: while it is gone, calls fail with Unavailable and a
// follow stream keeps its heartbeats; once it is back, the same server
// (no restart) answers again and the follow stream delivers the next
// commit.
func TestFaultCatalogUnavailable(t *testing.T) {
	for _, tt := range []struct {
		name         string
		break_, mend func(t *testing.T, path string, saved []byte)
	}{
		{"moved away", func(t *testing.T, path string, _ []byte) {
			if err := os.Rename(path, path+".away"); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, path string, _ []byte) {
			if err := os.Rename(path+".away", path); err != nil {
				t.Fatal(err)
			}
		}},
		{"overwritten with garbage", func(t *testing.T, path string, saved []byte) {
			garbage := []byte(strings.Repeat("this is not a database ", len(saved)/23+1))[:len(saved)]
			if err := os.WriteFile(path, garbage, 0o644); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, path string, saved []byte) {
			if err := os.WriteFile(path, saved, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fix := writeEvents(t, 3, 5)
			srv := startFlightd(t, "--warehouse", fix.Warehouse, "--poll-interval", "100ms",
				"--heartbeat-interval", "200ms", "--max-backoff", "400ms")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			c := dialGo(t, ctx, srv.URI())
			sub, err := c.Subscribe(ctx, sluice.SubscribeRequest{Table: eventsTable, Start: sluice.StartLatest,
				Heartbeats: true})
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Release()
			batches := make(chan sluice.BatchMeta, 1000)
			subErr := make(chan error, 1)
			go func() {
				for sub.Next() {
					batches <- sub.Batch().Meta
				}
				subErr <- sub.Err()
			}()
			nextBatch := func(what string) sluice.BatchMeta {
				t.Helper()
				select {
				case m := <-batches:
					return m
				case err := <-subErr:
					t.Fatalf("the follow stream ended %s: %v", what, err)
				case <-time.After(30 * time.Second):
					t.Fatalf("no batch %s within 30s", what)
				}
				return sluice.BatchMeta{}
			}
			if m := nextBatch("before the outage"); !m.Heartbeat {
				t.Fatalf("start latest on a quiet table: %+v, want a heartbeat", m)
			}

			saved, err := os.ReadFile(fix.Catalog)
			if err != nil {
				t.Fatal(err)
			}
			tt.break_(t, fix.Catalog, saved)
			// commit_seq of a followed table answers from the follow
			// streams' shared poll while that is less than a poll interval
			// old: it turns Unavailable once the poll fails.
			broken := time.Now()
			for {
				_, err := c.CommitSeq(ctx, eventsTable)
				if sluice.Code(err) == codes.Unavailable {
					break
				}
				if time.Since(broken) > 10*time.Second {
					t.Fatalf("commit_seq 10s after the catalog went: %v, want Unavailable", err)
				}
				time.Sleep(20 * time.Millisecond)
			}
			for _, call := range []func() error{
				func() error { _, err := c.ListTables(ctx); return err },
				func() error { return readAll(ctx, c, sluice.ChangeRequest{Table: eventsTable}).err },
			} {
				if err := call(); sluice.Code(err) != codes.Unavailable {
					t.Fatalf("a call while the catalog is gone: %v, want Unavailable", err)
				}
			}
			// The follow stream lives on: heartbeats, no error.
			for range 3 {
				if m := nextBatch("during the outage"); !m.Heartbeat {
					t.Fatalf("a batch during the outage: %+v", m)
				}
			}

			tt.mend(t, fix.Catalog, saved)
			deadline := time.Now().Add(30 * time.Second)
			for {
				_, err := c.CommitSeq(ctx, eventsTable)
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the server did not recover within 30s of the catalog's return: %v\n%s", err, srv.logs())
				}
				time.Sleep(50 * time.Millisecond)
			}
			if res := readAll(ctx, c, sluice.ChangeRequest{Table: eventsTable}); res.err != nil {
				t.Fatalf("a read after the catalog is back: %v", res.err)
			}
			// A new commit reaches the follow stream.
			cat, err := tablewrite.OpenWarehouse(ctx, fix.Warehouse)
			if err != nil {
				t.Fatal(err)
			}
			defer cat.Close()
			tbl, err := cat.LoadTable(ctx, eventsTable)
			if err != nil {
				t.Fatal(err)
			}
			if tbl, err = tablewrite.Append(ctx, tbl, []tablewrite.Row{{"id": 777}}); err != nil {
				t.Fatal(err)
			}
			for {
				m := nextBatch("after the catalog is back")
				if m.Heartbeat {
					continue
				}
				if m.Snapshot != tbl.CurrentSnapshot().SnapshotID || m.Rows != 1 {
					t.Fatalf("the follow stream after the outage: %+v, want the new commit's row", m)
				}
				break
			}
		})
	}
}

// TestFaultCatalogReplaced replaces the catalog database under a running
// flightd with a new file (as a restore from a backup, or a tool that
// writes a new file and renames it into place, does) that holds one more
// commit: the server serves the new file's state, not the replaced one's.
func TestFaultCatalogReplaced(t *testing.T) {
	fix := writeEvents(t, 3, 6)
	srv := startFlightd(t, "--warehouse", fix.Warehouse, "--poll-interval", "100ms")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := dialGo(t, ctx, srv.URI())
	before, err := c.CommitSeq(ctx, eventsTable)
	if err != nil {
		t.Fatal(err)
	}
	saved, err := os.ReadFile(fix.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	next := fix.Catalog + ".new"
	if err := os.WriteFile(next, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Open(ctx, catalog.Config{Warehouse: fix.Warehouse, URI: "file://" + next})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, eventsTable)
	if err != nil {
		t.Fatal(err)
	}
	if tbl, err = tablewrite.Append(ctx, tbl, []tablewrite.Row{{"id": 888}}); err != nil {
		t.Fatal(err)
	}
	cat.Close()
	if err := os.Rename(next, fix.Catalog); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		seq, err := c.CommitSeq(ctx, eventsTable)
		if err == nil && *seq.Snapshot == tbl.CurrentSnapshot().SnapshotID {
			if seq.CommitSeq != before.CommitSeq+1 {
				t.Fatalf("commit_seq %d after one more commit than %d", seq.CommitSeq, before.CommitSeq)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30s after the catalog file was replaced, flightd still serves %+v (%v), not snapshot %d",
				seq, err, tbl.CurrentSnapshot().SnapshotID)
		}
		time.Sleep(50 * time.Millisecond)
	}
	from := before.Snapshot
	if res := readAll(ctx, c, sluice.ChangeRequest{Table: eventsTable, FromSnapshot: from}); res.err != nil ||
		len(res.metas) != 1 || res.metas[0].Rows != 1 {
		t.Fatalf("the new commit's window: %+v", res)
	}
}

// wideTable is a table of wide rows, for the memory tests.
const wideTable = "e2e.wide"

// writeWide writes wideTable into a new warehouse: commits appends of rows
// rows, each with a payload of payloadBytes, and returns the warehouse.
func writeWide(t *testing.T, commits, rows, payloadBytes int) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	cat, err := tablewrite.OpenWarehouse(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	tbl, err := tablewrite.CreateTable(ctx, cat, wideTable, iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "payload", Type: iceberg.PrimitiveTypes.String}))
	if err != nil {
		t.Fatal(err)
	}
	for c := range commits {
		batch := make([]tablewrite.Row, rows)
		for i := range batch {
			id := c*rows + i
			batch[i] = tablewrite.Row{"id": id, "payload": strings.Repeat(string(rune('a'+id%26)), payloadBytes)}
		}
		if tbl, err = tablewrite.Append(ctx, tbl, batch); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestFaultStalledClient opens a read of a table of 114 MB (decoded) and
// stops reading after the first batch. The server decodes only what it
// reads ahead, its memory stays flat while the client holds the stream
// unread, the server drops the stream
// after --stall-timeout (its open-streams gauge falls to zero while the
// client is still connected), and the client, reading on, gets what was in
// flight and then ResourceExhausted: never a clean end.
func TestFaultStalledClient(t *testing.T) {
	const stall = 2 * time.Second
	const commits, rows, payload = 6, 20000, 1000
	wh := writeWide(t, commits, rows, payload)
	srv := startFlightd(t, "--warehouse", wh, "--stall-timeout", stall.String(), "--metrics-listen", "127.0.0.1:0",
		"--pprof", "--log-level", "info")
	maddr := metricsAddr(t, srv)
	// --pprof serves the runtime's profiles next to the metrics.
	if resp, err := http.Get("http://" + maddr + "/debug/pprof/goroutine?debug=1"); err != nil {
		t.Fatal(err)
	} else {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine profile:") {
			t.Fatalf("/debug/pprof/goroutine: %s\n%.200s", resp.Status, body)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := dialGo(t, ctx, srv.URI())

	// A full read first: the server's memory as a reading client makes it.
	start := time.Now()
	if n := countRows(t, ctx, c, sluice.ChangeRequest{Table: wideTable}); n != commits*rows {
		t.Fatalf("read %d rows, want %d", n, commits*rows)
	}
	fullRead := time.Since(start)
	warm, warmPeak := rssKiB(t, srv.pid())
	decodedBefore := metric(t, maddr, "sluice_rows_decoded_total")

	rdr, err := c.Changes(ctx, sluice.ChangeRequest{Table: wideTable})
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	if !rdr.Next() {
		t.Fatalf("no first batch: %v", rdr.Err())
	}
	stopped := time.Now()
	if open := metric(t, maddr, "sluice_open_streams"); open != 1 {
		t.Fatalf("%v open streams, want the stalled one", open)
	}
	// The client reads nothing more. Sample the server's memory until it
	// drops the stream.
	maxRSS := warm
	var samples []int64
	for {
		rss, _ := rssKiB(t, srv.pid())
		samples = append(samples, rss)
		maxRSS = max(maxRSS, rss)
		if metric(t, maddr, "sluice_open_streams") == 0 {
			break
		}
		if time.Since(stopped) > stall+30*time.Second {
			t.Fatalf("the stream of a client that stopped reading is still open %v later", time.Since(stopped))
		}
		time.Sleep(100 * time.Millisecond)
	}
	dropped := time.Since(stopped)
	rss, peak := rssKiB(t, srv.pid())
	decoded := metric(t, maddr, "sluice_rows_decoded_total") - decodedBefore
	t.Logf("table %d MB decoded, full read in %v; flightd RSS %d MiB after it (peak %d MiB); stalled stream "+
		"dropped %v after the client's last read; RSS during the stall at most %d MiB, after %d MiB (peak %d MiB); "+
		"%d samples; %.0f of the table's %d rows decoded for the stalled read", commits*rows*payload>>20,
		fullRead.Round(time.Millisecond), warm>>10, warmPeak>>10, dropped.Round(time.Millisecond), maxRSS>>10,
		rss>>10, peak>>10, len(samples), decoded, commits*rows)
	if dropped < stall/2 {
		t.Fatalf("the stream was dropped %v after the client stopped, before the %v stall timeout", dropped, stall)
	}
	// Backpressure: for a client that took one batch, the server decoded
	// what it reads ahead (--read-concurrency 2 data files, and the one it
	// sends from), not the table.
	if decoded > 3*rows {
		t.Fatalf("the server decoded %.0f rows (of %d) for a client that took one batch", decoded, commits*rows)
	}
	// Memory: a stalled read holds no more than a full read needed (plus
	// the collector's slack).
	if peak > warmPeak+(64<<10) {
		t.Fatalf("flightd's peak RSS rose from %d to %d MiB during the stall", warmPeak>>10, peak>>10)
	}
	// And it does not creep up while the client holds the stream: once the
	// read-ahead is decoded (half a second in), it stays where it is.
	if settled := samples[min(5, len(samples)-1)]; slices.Max(samples[len(samples)/2:]) > settled+(16<<10) {
		t.Fatalf("flightd's RSS went on growing during the stall: %v KiB", samples)
	}

	n := 0
	for rdr.Next() {
		n++
	}
	if err := rdr.Err(); sluice.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "stopped reading") {
		t.Fatalf("the stalled read, read on after %d batches, ended with %v, want ResourceExhausted", n, err)
	}
	if !strings.Contains(srv.logs(), "client stopped reading") {
		t.Fatalf("the drop is not logged:\n%s", srv.logs())
	}
	// The server serves on.
	if n := countRows(t, ctx, c, sluice.ChangeRequest{Table: wideTable, Columns: []string{"id"}}); n != commits*rows {
		t.Fatalf("a read after the stall: %d rows", n)
	}
}
