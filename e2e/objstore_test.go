package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/testkit/testsvc"
)

// The object storage end-to-end tests: pyiceberg 0.12 writes tables
// through Apache Iceberg's RESTCatalogServer onto moto's S3 (both started
// by internal/testkit/testsvc, one of each per test binary where they can be
// shared), a real flightd serves them, and the Go client and pyarrow read
// windows that must equal pyiceberg's own scans of the snapshots.

// s3Oracle is what s3_writer.py reports: per snapshot, in lineage order,
// the table as pyiceberg scans it.
type s3Oracle struct {
	Columns   []string     `json:"columns"`
	Snapshots []s3Snapshot `json:"snapshots"`
}

type s3Snapshot struct {
	ID          int64   `json:"id"`
	Parent      *int64  `json:"parent"`
	Seq         int64   `json:"seq"`
	TimestampMs int64   `json:"timestamp_ms"`
	Operation   string  `json:"operation"`
	Rows        [][]any `json:"rows"`
}

// s3Catalog is a REST catalog on S3 as the writer sees it.
type s3Catalog struct {
	uri       string // the catalog's (a proxy's) URI
	warehouse string
	moto      *testsvc.MotoServer
	key       testsvc.Key // the writer's S3 key
	// env is the writer's extra environment (OAuth2 credentials).
	env []string
}

// write runs s3_writer.py: step "init", "small" or "more" on table.
func (c s3Catalog) write(t *testing.T, ctx context.Context, step, table string, seq int) *s3Oracle {
	t.Helper()
	out := filepath.Join(t.TempDir(), "oracle.json")
	cmd := exec.CommandContext(ctx, python(t), "python/s3_writer.py", step, "--table", table, "--oracle", out,
		"--seq", fmt.Sprint(seq))
	cmd.Env = append(os.Environ(), c.key.Env()...)
	cmd.Env = append(cmd.Env, "SLUICE_REST_URI="+c.uri, "SLUICE_WAREHOUSE="+c.warehouse,
		"SLUICE_S3_ENDPOINT="+c.moto.Endpoint)
	cmd.Env = append(cmd.Env, c.env...)
	began := time.Now()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("s3_writer.py %s: %v\n%s", step, err, b)
	}
	t.Logf("s3_writer.py %s %s: %s", step, table, time.Since(began).Round(time.Millisecond))
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var o s3Oracle
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatal(err)
	}
	return &o
}

// s3Config is a flightd YAML configuration for a REST catalog.
type s3Config struct {
	uri        string // the REST catalog's
	warehouse  string
	properties map[string]string // catalog.properties
	progress   string            // progress.dsn
	extra      string            // more YAML, at the top level
}

// file writes the configuration and returns its path.
func (c s3Config) file(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "catalog:\n  type: rest\n  name: rest\n  uri: %q\n  warehouse: %q\n", c.uri, c.warehouse)
	if len(c.properties) > 0 {
		b.WriteString("  properties:\n")
		for _, k := range slices.Sorted(maps.Keys(c.properties)) {
			fmt.Fprintf(&b, "    %q: %q\n", k, c.properties[k])
		}
	}
	if c.progress == "" {
		c.progress = filepath.Join(t.TempDir(), "consumers.db")
	}
	fmt.Fprintf(&b, "progress:\n  dsn: %q\n", c.progress)
	b.WriteString(c.extra)
	path := filepath.Join(t.TempDir(), "flightd.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// s3Props are the S3 properties of moto with a key (none: no key).
func s3Props(m *testsvc.MotoServer, key testsvc.Key) map[string]string {
	p := map[string]string{"s3.endpoint": m.Endpoint, "s3.region": testsvc.Region}
	if key.AccessKeyID != "" {
		p["s3.access-key-id"] = key.AccessKeyID
		p["s3.secret-access-key"] = key.SecretAccessKey
	}
	if key.SessionToken != "" {
		p["s3.session-token"] = key.SessionToken
	}
	return p
}

// noAmbientAWS keeps flightd from finding AWS credentials or a region
// outside its configuration (flightd inherits the test's environment): the
// AWS_* variables are unset for the test, the shared files pointed at
// nothing, the EC2 metadata service off.
func noAmbientAWS(t *testing.T) {
	for _, kv := range os.Environ() {
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "AWS_") {
			_ = os.Unsetenv(k)
			t.Cleanup(func() { _ = os.Setenv(k, v) })
		}
	}
	dir := t.TempDir()
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "none"))
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// s3Change is one change row: op and the image as canonical JSON.
type s3Change struct {
	snapshot int64
	op       string
	image    string
}

// canonRow is a row as canonical JSON: the oracle's columns in order,
// numbers as float64, a missing column as null.
func canonRow(cols []string, get func(string) (any, bool)) string {
	vals := make([]any, len(cols))
	for i, c := range cols {
		if v, ok := get(c); ok {
			vals[i] = v
		}
	}
	b, err := json.Marshal(vals)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// oracleRow is a row of the oracle as canonical JSON.
func oracleRow(cols []string, row []any) string {
	return canonRow(cols, func(c string) (any, bool) {
		i := slices.Index(cols, c)
		if i < 0 || i >= len(row) || row[i] == nil {
			return nil, false
		}
		switch v := row[i].(type) {
		case float64, string, bool:
			return v, true
		default:
			return fmt.Sprint(v), true
		}
	})
}

// arrowValue is a value of an Arrow array as the oracle has it.
func arrowValue(a arrow.Array, i int) (any, bool) {
	if a.IsNull(i) {
		return nil, false
	}
	switch a := a.(type) {
	case *array.Int64:
		return float64(a.Value(i)), true
	case *array.Int32:
		return float64(a.Value(i)), true
	case *array.Float64:
		return a.Value(i), true
	case *array.Float32:
		return float64(a.Value(i)), true
	case *array.String:
		return a.Value(i), true
	case *array.Boolean:
		return a.Value(i), true
	default:
		return a.ValueStr(i), true
	}
}

// readChanges reads a window with the Go client: its changes in order.
func readChanges(ctx context.Context, c *sluice.Client, cols []string, req sluice.ChangeRequest) ([]s3Change, error) {
	rdr, err := c.Changes(ctx, req)
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	var out []s3Change
	for b, err := range rdr.All() {
		if err != nil {
			return nil, err
		}
		out = append(out, batchChanges(b.Record, cols)...)
	}
	return out, nil
}

// batchChanges are the change rows of a record batch.
func batchChanges(rec arrow.RecordBatch, cols []string) []s3Change {
	ops := rec.Column(0).(*array.String)
	snaps := rec.Column(3).(*array.Int64)
	var out []s3Change
	for i := range int(rec.NumRows()) {
		op := ops.Value(i)
		img := rec.Column(2).(*array.Struct) // after
		if op == "delete" || op == "update_before" {
			img = rec.Column(1).(*array.Struct)
		}
		st := img.DataType().(*arrow.StructType)
		out = append(out, s3Change{snapshot: snaps.Value(i), op: op, image: canonRow(cols, func(c string) (any, bool) {
			j, ok := st.FieldIdx(c)
			if !ok {
				return nil, false
			}
			return arrowValue(img.Field(j), i)
		})})
	}
	return out
}

// expected is what a window (from, to] must hold by the oracle: per
// snapshot after from up to to, the rows its scan has that its parent's
// has not (inserts) and the other way round (deletes). from -1 is the
// start of the history; to is an index of o.Snapshots.
func (o *s3Oracle) expected(from, to int) []s3Change {
	var out []s3Change
	prev := map[string]int{}
	if from >= 0 {
		prev = o.multiset(from)
	}
	for k := from + 1; k <= to; k++ {
		cur := o.multiset(k)
		id := o.Snapshots[k].ID
		for r, n := range prev {
			for range n - cur[r] {
				out = append(out, s3Change{snapshot: id, op: "delete", image: r})
			}
		}
		for r, n := range cur {
			for range n - prev[r] {
				out = append(out, s3Change{snapshot: id, op: "insert", image: r})
			}
		}
		prev = cur
	}
	return out
}

func (o *s3Oracle) multiset(k int) map[string]int {
	m := map[string]int{}
	for _, r := range o.Snapshots[k].Rows {
		m[oracleRow(o.Columns, r)]++
	}
	return m
}

// sameChanges compares changes as multisets per snapshot, and checks that
// the snapshots come in lineage order.
func sameChanges(got, want []s3Change) string {
	key := func(cs []s3Change) []string {
		k := make([]string, len(cs))
		for i, c := range cs {
			k[i] = fmt.Sprintf("%d %s %s", c.snapshot, c.op, c.image)
		}
		sort.Strings(k)
		return k
	}
	g, w := key(got), key(want)
	if !slices.Equal(g, w) {
		var missing, extra []string
		gm, wm := map[string]int{}, map[string]int{}
		for _, s := range g {
			gm[s]++
		}
		for _, s := range w {
			wm[s]++
		}
		for s, n := range wm {
			if gm[s] < n {
				missing = append(missing, s)
			}
		}
		for s, n := range gm {
			if wm[s] < n {
				extra = append(extra, s)
			}
		}
		return fmt.Sprintf("%d changes, want %d; missing %v; unexpected %v", len(got), len(want), head(missing), head(extra))
	}
	order := func(cs []s3Change) []int64 {
		var ids []int64
		for _, c := range cs {
			if len(ids) == 0 || ids[len(ids)-1] != c.snapshot {
				ids = append(ids, c.snapshot)
			}
		}
		return ids
	}
	if go_, wo := order(got), order(want); !slices.Equal(go_, wo) {
		return fmt.Sprintf("snapshots in the order %v, want %v", go_, wo)
	}
	return ""
}

func head(s []string) []string {
	sort.Strings(s)
	if len(s) > 5 {
		return append(s[:5:5], fmt.Sprintf("... %d more", len(s)-5))
	}
	return s
}

// checkWindows reads every window (from, to] of the oracle's snapshots
// with the Go client, and the whole history, and compares them with the
// oracle. It returns the number of windows read.
func checkWindows(t *testing.T, ctx context.Context, c *sluice.Client, table string, o *s3Oracle) int {
	t.Helper()
	n := 0
	for to := range o.Snapshots {
		for from := -1; from < to; from++ {
			req := sluice.ChangeRequest{Table: table, ToSnapshot: &o.Snapshots[to].ID}
			if from >= 0 {
				req.FromSnapshot = &o.Snapshots[from].ID
			}
			got, err := readChanges(ctx, c, o.Columns, req)
			if err != nil {
				t.Fatalf("window (%d, %d]: %v", from, to, err)
			}
			if d := sameChanges(got, o.expected(from, to)); d != "" {
				t.Fatalf("window (%s, %d] of %s: %s", fromName(o, from), o.Snapshots[to].ID, table, d)
			}
			n++
		}
	}
	return n
}

func fromName(o *s3Oracle, from int) string {
	if from < 0 {
		return "start"
	}
	return fmt.Sprint(o.Snapshots[from].ID)
}

// checkSnapshots compares the served snapshot list with the oracle's.
func checkSnapshots(t *testing.T, ctx context.Context, c *sluice.Client, table string, o *s3Oracle) {
	t.Helper()
	snaps, err := c.Snapshots(ctx, table)
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != len(o.Snapshots) {
		t.Fatalf("%d snapshots served, pyiceberg has %d", len(snaps), len(o.Snapshots))
	}
	for i, s := range snaps {
		w := o.Snapshots[i]
		if s.ID != w.ID || s.CommitSeq != w.Seq || s.TimestampMs != w.TimestampMs {
			t.Fatalf("snapshot %d: %+v, pyiceberg has %+v", i, s, w)
		}
	}
}

// subscription reads a Subscription on a goroutine.
type subscription struct {
	sub     *sluice.Subscription
	batches chan subBatch
	done    chan error
}

type subBatch struct {
	meta    sluice.BatchMeta
	changes []s3Change
}

func followS3(t *testing.T, ctx context.Context, c *sluice.Client, req sluice.SubscribeRequest, cols []string) *subscription {
	t.Helper()
	sub, err := c.Subscribe(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	s := &subscription{sub: sub, batches: make(chan subBatch, 10000), done: make(chan error, 1)}
	t.Cleanup(sub.Release)
	go func() {
		for sub.Next() {
			b := sub.Batch()
			s.batches <- subBatch{meta: b.Meta, changes: batchChanges(b.Record, cols)}
		}
		s.done <- sub.Err()
	}()
	return s
}

// until collects batches until one completes snapshot (heartbeats are
// skipped), or fails after timeout.
func (s *subscription) until(t *testing.T, snapshot int64, timeout time.Duration) []s3Change {
	t.Helper()
	var out []s3Change
	deadline := time.After(timeout)
	for {
		select {
		case b := <-s.batches:
			if b.meta.Heartbeat {
				continue
			}
			out = append(out, b.changes...)
			if b.meta.SnapshotComplete && b.meta.Snapshot == snapshot {
				return out
			}
		case err := <-s.done:
			// The stream ended: the batches it sent before are still
			// queued (select picks among ready cases at random). Put the
			// end back for the caller, then read what is left.
			s.done <- err
			for {
				select {
				case b := <-s.batches:
					if b.meta.Heartbeat {
						continue
					}
					out = append(out, b.changes...)
					if b.meta.SnapshotComplete && b.meta.Snapshot == snapshot {
						return out
					}
					continue
				default:
				}
				break
			}
			t.Fatalf("the stream ended before snapshot %d completed: %v", snapshot, err)
		case <-deadline:
			t.Fatalf("snapshot %d did not complete within %s", snapshot, timeout)
		}
	}
}

// TestS3REST: a table that pyiceberg wrote through the REST catalog onto
// S3 (appends, an overwrite, deletes, a schema change) is served by
// flightd: every window equals pyiceberg's scans (Go client here, pyarrow
// in test_s3_rest.py); a follow stream delivers a new commit; a durable
// consumer acks, flightd restarts, and the consumer resumes right after
// its ack.
func TestS3REST(t *testing.T) {
	python(t)
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	rest := testsvc.SharedRESTCatalog(t)
	m := rest.Moto
	t.Logf("moto and RESTCatalogServer up in %s", time.Since(began).Round(time.Millisecond))
	cat := s3Catalog{uri: rest.URI, warehouse: rest.Warehouse, moto: m, key: m.Admin}
	const table = "s3e2e.items"
	o := cat.write(t, ctx, "init", table, 0)
	if len(o.Snapshots) < 6 {
		t.Fatalf("the writer made %d snapshots", len(o.Snapshots))
	}
	if keys := m.ListKeys(t, rest.Bucket, "s3e2e/items/data/"); len(keys) == 0 {
		t.Fatalf("no data files under s3://%s/s3e2e/items/data/: %v", rest.Bucket, m.ListKeys(t, rest.Bucket, ""))
	}
	noAmbientAWS(t)
	progress := filepath.Join(t.TempDir(), "consumers.db")
	cfg := s3Config{uri: rest.URI, warehouse: rest.Warehouse, properties: s3Props(m, m.Admin), progress: progress}.file(t)
	args := []string{"--config", cfg, "--poll-interval", "200ms", "--heartbeat-interval", "500ms"}
	srv := launchFlightd(t, args...)
	defer func() { srv.stop(t) }()
	c := dialGo(t, ctx, srv.URI())

	t.Run("go windows", func(t *testing.T) {
		checkSnapshots(t, ctx, c, table, o)
		began := time.Now()
		n := checkWindows(t, ctx, c, table, o)
		t.Logf("%d windows over %d snapshots equal pyiceberg's scans (%s)", n, len(o.Snapshots), time.Since(began).Round(time.Millisecond))
	})
	t.Run("pyarrow windows", func(t *testing.T) { pyarrowWindows(t, ctx, srv.URI(), table, o) })
	t.Run("follow", func(t *testing.T) {
		s := followS3(t, ctx, c, sluice.SubscribeRequest{Table: table, Start: sluice.StartLatest, Heartbeats: true}, o.Columns)
		time.Sleep(time.Second) // the stream stands at the current snapshot
		o2 := cat.write(t, ctx, "more", table, 1)
		last := len(o2.Snapshots) - 1
		got := s.until(t, o2.Snapshots[last].ID, time.Minute)
		if d := sameChanges(got, o2.expected(last-1, last)); d != "" {
			t.Fatalf("the followed commit: %s", d)
		}
		o = o2
	})
	t.Run("consumer resumes after a restart", func(t *testing.T) {
		consumerResumes(t, ctx, c, func() *sluice.Client {
			srv.stop(t)
			srv = launchFlightd(t, args...)
			return dialGo(t, ctx, srv.URI())
		}, table, o, 3)
	})
	t.Logf("TestS3REST took %s", time.Since(began).Round(time.Millisecond))
}

// pyarrowWindows runs test_s3_rest.py: pyarrow reads every window of table
// from the flightd at uri and compares it with the oracle.
func pyarrowWindows(t *testing.T, ctx context.Context, uri, table string, o *s3Oracle) {
	t.Helper()
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "oracle.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	pytestPaths(t, ctx, map[string]string{"SLUICE_ADDR": uri, "SLUICE_S3_ORACLE": path, "SLUICE_S3_TABLE": table},
		[]string{"python/test_s3_rest.py"})
}

// consumerResumes: a durable consumer reads table from its first snapshot
// up to snapshot ackAt (an index of o.Snapshots, before the last) and acks
// it; restart replaces flightd and returns a client of the new one, where
// the consumer resumes right after ackAt and gets every later snapshot.
func consumerResumes(t *testing.T, ctx context.Context, c *sluice.Client, restart func() *sluice.Client, table string,
	o *s3Oracle, ackAt int) {
	t.Helper()
	consumer := testsvc.UniqueName("mirror")
	first := o.Snapshots[0].ID
	s := followS3(t, ctx, c, sluice.SubscribeRequest{Table: table, Consumer: consumer, Start: sluice.StartFromSnapshot,
		FromSnapshot: &first, NoFollow: true}, o.Columns)
	got := s.until(t, o.Snapshots[ackAt].ID, time.Minute)
	if d := sameChanges(got, o.expected(0, ackAt)); d != "" {
		t.Fatalf("before the ack: %s", d)
	}
	// The reading goroutine may be past the batch that completed the
	// snapshot: ack the snapshot by id.
	s.sub.Release()
	if _, err := c.Ack(ctx, consumer, table, o.Snapshots[ackAt].ID); err != nil {
		t.Fatal(err)
	}
	c2 := restart()
	s2 := followS3(t, ctx, c2, sluice.SubscribeRequest{Table: table, Consumer: consumer, NoFollow: true}, o.Columns)
	last := len(o.Snapshots) - 1
	got = s2.until(t, o.Snapshots[last].ID, time.Minute)
	if d := sameChanges(got, o.expected(ackAt, last)); d != "" {
		t.Fatalf("the consumer resumed after the restart: %s", d)
	}
	select {
	case err := <-s2.done:
		if err != nil {
			t.Fatalf("the resumed stream ended with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the resumed NoFollow stream did not end")
	}
}
