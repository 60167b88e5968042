package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"

	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/testkit/deltafx"
	"github.com/sluicefeed/sluice/internal/testkit/testsvc"
)

// The Delta object storage end-to-end test: delta-rs (deltalake) writes
// Delta tables onto moto's S3, a real flightd serves them from an s3://
// --delta-root and delta.tables URL, and every window must equal what
// delta-rs itself reads (load_cdf, or the difference of its reads of
// consecutive versions for a table without change data); then the storage
// failures must name their cause with the right code, at start and on
// reads.

// deltaS3Expected is what delta_s3_writer.py reports, by table.
type deltaS3Expected map[string]deltafx.Expected

// writeDeltaS3 writes the tables under root with delta_s3_writer.py.
func writeDeltaS3(t *testing.T, ctx context.Context, m *testsvc.MotoServer, root string) deltaS3Expected {
	t.Helper()
	out := filepath.Join(t.TempDir(), "expected.json")
	cmd := exec.CommandContext(ctx, python(t), "python/delta_s3_writer.py", "--root", root, "--expected", out)
	cmd.Env = append(os.Environ(), "SLUICE_S3_ENDPOINT="+m.Endpoint, "AWS_ACCESS_KEY_ID="+m.Admin.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY="+m.Admin.SecretAccessKey)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("delta_s3_writer.py: %v\n%s", err, b)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	dec.UseNumber()
	var exp deltaS3Expected
	if err := dec.Decode(&exp); err != nil {
		t.Fatal(err)
	}
	return exp
}

// deltaS3Config writes a flightd YAML file whose catalog properties are the
// storage settings of moto with key k (no region when region is ""),
// with the Delta root and tables given.
func deltaS3Config(t *testing.T, m *testsvc.MotoServer, endpoint string, k testsvc.Key, region, root string,
	tables map[string]string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "catalog:\n  properties:\n    s3.endpoint: %q\n", endpoint)
	if region != "" {
		fmt.Fprintf(&b, "    s3.region: %q\n", region)
	}
	fmt.Fprintf(&b, "    s3.access-key-id: %q\n    s3.secret-access-key: %q\ndelta:\n", k.AccessKeyID,
		k.SecretAccessKey)
	if root != "" {
		fmt.Fprintf(&b, "  root: %q\n", root)
	}
	if len(tables) > 0 {
		b.WriteString("  tables:\n")
		for n, loc := range tables {
			fmt.Fprintf(&b, "    %s: %q\n", n, loc)
		}
	}
	return writeFile(t, t.TempDir(), "flightd.yaml", b.String())
}

// noAWSEnv is an environment in which the AWS SDK finds no region or
// credentials of the machine's.
var noAWSEnv = []string{"AWS_REGION=", "AWS_DEFAULT_REGION=", "AWS_CONFIG_FILE=/nonexistent",
	"AWS_SHARED_CREDENTIALS_FILE=/nonexistent", "AWS_PROFILE=", "AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY="}

func TestDeltaS3(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	m := testsvc.Moto(t, testsvc.MotoOptions{})
	bucket := testsvc.UniqueName("delta")
	m.CreateBucket(t, bucket)
	root := "s3://" + bucket + "/lake"
	exp := writeDeltaS3(t, ctx, m, root)
	for _, name := range []string{"orders", "plain"} {
		if len(exp[name].Queries) == 0 {
			t.Fatalf("the writer reported no windows of %s", name)
		}
	}

	// The secret comes from the environment, as a secret reference: the
	// Delta tables get the catalog's properties resolved.
	t.Setenv("SLUICE_TEST_DELTA_S3_SECRET", m.Admin.SecretAccessKey)
	cfg := deltaS3Config(t, m, m.Endpoint, testsvc.Key{AccessKeyID: m.Admin.AccessKeyID,
		SecretAccessKey: "${env:SLUICE_TEST_DELTA_S3_SECRET}"}, testsvc.Region, root+"/",
		map[string]string{"sales.orders_s3": root + "/orders"})
	srv := launchFlightd(t, append([]string{"--warehouse", t.TempDir(), "--config", cfg}, "--poll-interval", "100ms")...)
	stopped := false
	defer func() {
		if !stopped {
			srv.stop(t)
		}
	}()
	c := dialGo(t, ctx, srv.URI())

	t.Run("list_tables", func(t *testing.T) {
		tables, err := c.ListTables(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tbl := range tables {
			got = append(got, fmt.Sprintf("%s:%s:%d", tbl.Name, tbl.Format, tbl.CommitSeq))
		}
		want := []string{
			fmt.Sprintf("delta.orders:delta:%d", lastVersion(t, exp["orders"])),
			fmt.Sprintf("delta.plain:delta:%d", lastVersion(t, exp["plain"])),
			fmt.Sprintf("sales.orders_s3:delta:%d", lastVersion(t, exp["orders"])),
		}
		if !slices.Equal(got, want) {
			t.Fatalf("list_tables %v, want %v", got, want)
		}
	})

	t.Run("windows", func(t *testing.T) {
		n := 0
		for _, tc := range []struct{ table, name string }{
			{"orders", "delta.orders"}, {"plain", "delta.plain"}, {"orders", "sales.orders_s3"},
		} {
			for _, q := range exp[tc.table].Queries {
				w, err := q.Window()
				if err != nil {
					t.Fatal(err)
				}
				got, err := deltaRowsGo(ctx, c, sluice.ChangeRequest{Table: tc.name, FromSnapshot: w.FromSnapshot,
					ToSnapshot: w.ToSnapshot})
				if err != nil {
					t.Errorf("%s %s: %v", tc.name, q.ID, err)
					continue
				}
				if tc.table == "plain" {
					// Without change data an update is the delete of the old
					// row and the insert of the new, as the reads' difference
					// has it.
					for _, row := range got {
						switch row["_change_type"] {
						case "update_preimage":
							row["_change_type"] = "delete"
						case "update_postimage":
							row["_change_type"] = "insert"
						}
					}
				}
				if d := deltafx.Compare(q, got); d != "" {
					t.Errorf("%s %s: %s", tc.name, q.ID, d)
				}
				n++
			}
		}
		if n < 20 {
			t.Fatalf("%d windows compared, want the writer's 25", n)
		}
	})

	t.Run("follow", func(t *testing.T) {
		// A follow stream lists the table's _delta_log on S3 at every poll:
		// a commit delta-rs appends arrives on the open stream.
		latest := lastVersion(t, exp["orders"])
		sub, err := c.Subscribe(ctx, sluice.SubscribeRequest{Table: "delta.orders", Start: sluice.StartLatest,
			Heartbeats: true})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Release()
		if !sub.Next() || !sub.Batch().Meta.Heartbeat || sub.Batch().Meta.Snapshot != latest {
			t.Fatalf("the first message: %+v, %v; want a heartbeat at version %d", sub.Batch().Meta, sub.Err(), latest)
		}
		cmd := exec.CommandContext(ctx, python(t), "python/delta_s3_writer.py", "--append", root+"/orders",
			"--ids", "100,101")
		cmd.Env = append(os.Environ(), "SLUICE_S3_ENDPOINT="+m.Endpoint, "AWS_ACCESS_KEY_ID="+m.Admin.AccessKeyID,
			"AWS_SECRET_ACCESS_KEY="+m.Admin.SecretAccessKey)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("append: %v\n%s", err, b)
		}
		var got []string
		for len(got) < 2 && sub.Next() {
			b := sub.Batch()
			if b.Meta.Heartbeat {
				continue
			}
			rows, err := deltafx.Flatten(b.Record)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				got = append(got, fmt.Sprintf("%s %s %s@%s", r["_change_type"], r["id"], r["name"], r["_commit_version"]))
			}
		}
		slices.Sort(got)
		want := []string{fmt.Sprintf("insert 100 f-100@%d", latest+1), fmt.Sprintf("insert 101 f-101@%d", latest+1)}
		if !slices.Equal(got, want) {
			t.Fatalf("the follow stream delivered %v (%v), want %v", got, sub.Err(), want)
		}
	})

	t.Run("a data file gone is resync required", func(t *testing.T) {
		// The first data file of plain, rewritten by its delete: as if
		// VACUUM had removed it.
		var first string
		for _, k := range m.ListKeys(t, bucket, "lake/plain/") {
			if strings.HasSuffix(k, ".parquet") && !strings.Contains(k, "_delta_log") {
				first = k
				break
			}
		}
		if first == "" {
			t.Fatal("no data file of plain")
		}
		deleteObject(t, m, bucket, first)
		// A read of its own: the whole window, read above, may be served
		// from the decode cache for --decode-cache-ttl.
		_, err := deltaRowsGo(ctx, c, sluice.ChangeRequest{Table: "delta.plain", Columns: []string{"id"}})
		t.Logf("%v", err)
		wantCode(t, err, codes.FailedPrecondition, "resync required")
	})

	t.Run("start refusals", func(t *testing.T) {
		wh := t.TempDir()
		missing := "s3://no-such-" + bucket + "/lake"
		out := refused(t, nil, "--warehouse", wh, "--config", deltaS3Config(t, m, m.Endpoint, m.Admin, testsvc.Region,
			missing, nil))
		wantOutput(t, out, "bucket not found", `"no-such-`+bucket+`" does not exist`, m.Endpoint)
		wantNot(t, out, "resync")

		// An Iceberg warehouse in a bucket that does not exist, the same.
		out = refused(t, nil, "--warehouse", "s3://no-such-"+bucket+"/wh", "--catalog-uri",
			filepath.Join(t.TempDir(), "catalog.db"), "--create-catalog", "--config", deltaS3Config(t, m, m.Endpoint,
				m.Admin, testsvc.Region, "", nil))
		wantOutput(t, out, "warehouse s3://no-such-"+bucket+"/wh", "bucket not found")

		out = refused(t, nil, "--warehouse", wh, "--config", deltaS3Config(t, m, m.Endpoint, m.Admin, testsvc.Region,
			"", map[string]string{"sales.gone": "s3://no-such-" + bucket + "/t"}))
		wantOutput(t, out, "delta.tables sales.gone", "bucket not found")

		out = refused(t, noAWSEnv, "--warehouse", wh, "--config", deltaS3Config(t, m, m.Endpoint, m.Admin, "", root,
			nil))
		wantOutput(t, out, "no region", "s3.region", "client.region", "AWS_REGION")

		out = refused(t, nil, "--warehouse", wh, "--config", deltaS3Config(t, m, m.Endpoint, m.Admin, testsvc.Region,
			"s3://"+bucket+"/nothing-here", nil))
		wantOutput(t, out, "--delta-root s3://"+bucket+"/nothing-here", "nothing is stored under it")

		out = refused(t, nil, "--warehouse", wh, "--config", deltaS3Config(t, m, m.Endpoint, m.Admin, testsvc.Region, "",
			map[string]string{"sales.nope": root + "/nope"}))
		wantOutput(t, out, "delta.tables sales.nope", root+"/nope", "no _delta_log")

		out = refused(t, nil, "--warehouse", wh, "--config", deltaS3Config(t, m, m.Endpoint, m.Admin, testsvc.Region, root,
			map[string]string{"delta.orders": root + "/orders"}))
		wantOutput(t, out, "delta.tables delta.orders", "same name")
	})

	t.Run("storage unreachable", func(t *testing.T) {
		// Storage that does not answer may come back: flightd starts,
		// says so, and reads are Unavailable (follow streams retry).
		srv := startFlightd(t, "--warehouse", t.TempDir(), "--config", deltaS3Config(t, m, "http://127.0.0.1:1", m.Admin,
			testsvc.Region, "", map[string]string{"sales.orders": root + "/orders"}))
		if !strings.Contains(srv.logs(), "cannot be reached") {
			t.Errorf("flightd's log does not say the storage cannot be reached:\n%s", srv.logs())
		}
		c := dialGo(t, ctx, srv.URI())
		_, err := c.Snapshots(ctx, "sales.orders")
		t.Logf("%v", err)
		wantCode(t, err, codes.Unavailable, "http://127.0.0.1:1")
	})

	t.Run("credentials", func(t *testing.T) {
		lister := m.CreateUser(t, "lister-"+bucket, testsvc.BucketPolicy(bucket, "s3:ListBucket"))
		m.EnableAuth(t)
		defer m.DisableAuth(t)
		wh := t.TempDir()

		unknown := testsvc.Key{AccessKeyID: "AKIAUNKNOWNKEY000000", SecretAccessKey: "a-secret-never-shown"}
		out := refused(t, noAWSEnv, "--warehouse", wh, "--config", deltaS3Config(t, m, m.Endpoint, unknown,
			testsvc.Region, root, nil))
		wantOutput(t, out, "access denied", "AKIAUNKNOWNKEY000000", "InvalidAccessKeyId", "s3.access-key-id")
		wantNot(t, out, "a-secret-never-shown")

		badSecret := testsvc.Key{AccessKeyID: lister.AccessKeyID, SecretAccessKey: "a-secret-never-shown"}
		out = refused(t, noAWSEnv, "--warehouse", wh, "--config", deltaS3Config(t, m, m.Endpoint, badSecret,
			testsvc.Region, root, nil))
		wantOutput(t, out, "access denied", lister.AccessKeyID, "SignatureDoesNotMatch", "s3.secret-access-key")
		wantNot(t, out, "a-secret-never-shown")

		// A key that may list the bucket but not read its objects:
		// flightd starts (listing is all it asks at start), and reads are
		// PermissionDenied naming the object and the key, not an
		// unreadable file.
		srv := startFlightd(t, "--warehouse", wh, "--config", deltaS3Config(t, m, m.Endpoint, lister, testsvc.Region,
			root, nil))
		c := dialGo(t, ctx, srv.URI())
		_, err := c.Snapshots(ctx, "delta.orders")
		t.Logf("%v", err)
		wantCode(t, err, codes.PermissionDenied, lister.AccessKeyID)
		wantCode(t, err, codes.PermissionDenied, "s3://"+bucket+"/lake/orders/_delta_log/")
		if strings.Contains(errString(err), lister.SecretAccessKey) || strings.Contains(errString(err), "unreadable") {
			t.Errorf("%v", err)
		}
	})

	t.Run("bucket deleted", func(t *testing.T) {
		// Every object of the bucket is gone with it: that is not a
		// history gone (resync required) but a bucket that does not exist.
		m.DeleteBucket(t, bucket)
		for _, name := range []string{"delta.orders", "sales.orders_s3"} {
			_, err := deltaRowsGo(ctx, c, sluice.ChangeRequest{Table: name})
			t.Logf("%v", err)
			wantCode(t, err, codes.NotFound, "bucket not found")
			wantCode(t, err, codes.NotFound, fmt.Sprintf("%q does not exist", bucket))
			if strings.Contains(errString(err), "resync") {
				t.Errorf("%s: %v", name, err)
			}
		}
	})
	srv.stop(t)
	stopped = true
}

// lastVersion is the newest version among an expected table's windows.
func lastVersion(t *testing.T, e deltafx.Expected) int64 {
	t.Helper()
	var last int64 = -1
	for _, q := range e.Queries {
		if q.Request.EndVersion != nil && *q.Request.EndVersion > last {
			last = *q.Request.EndVersion
		}
	}
	if last < 0 {
		t.Fatal("no window with an end version")
	}
	return last
}

// deleteObject deletes one object of moto's S3.
func deleteObject(t *testing.T, m *testsvc.MotoServer, bucket, key string) {
	t.Helper()
	if _, err := m.Do(context.Background(), m.Admin, "s3", "DELETE", "/"+bucket+"/"+key, nil); err != nil {
		t.Fatal(err)
	}
}

// wantNot checks that out does not say s.
func wantNot(t *testing.T, out, s string) {
	t.Helper()
	t.Logf("%s", out)
	if strings.Contains(out, s) {
		t.Errorf("output says %q:\n%s", s, out)
	}
}

// TestDeltaFixturesS3 serves the Delta fixtures (classic, multi-part and V2
// checkpoints with sidecars, deletion vectors, column mapping, change data
// files) from moto's S3 and runs every peer query on them, as
// TestDeltaFixtures does from a local folder: the log forms and files that
// delta-rs does not write in TestDeltaS3 are read from object storage too.
func TestDeltaFixturesS3(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	m := testsvc.SharedMoto(t)
	bucket := testsvc.UniqueName("fixtures")
	m.CreateBucket(t, bucket)
	local := copyDeltaFixtures(t)
	err := filepath.WalkDir(local, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(local, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		m.PutObject(t, bucket, "fixtures/"+filepath.ToSlash(rel), b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := deltaS3Config(t, m, m.Endpoint, m.Admin, testsvc.Region, "s3://"+bucket+"/fixtures", nil)
	srv := startFlightd(t, "--warehouse", t.TempDir(), "--config", cfg, "--max-batch-rows", "5")
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	client, err := sluice.Dial(ctx, srv.URI(), sluice.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		client.Close()
		mem.AssertSize(t, 0)
	}()
	checkDeltaFixtureQueries(t, ctx, client, local)

	sameDeltaFixtures(t, ctx, client, local, "S3")
}
