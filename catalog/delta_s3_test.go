package catalog

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/sluicefeed/sluice/internal/lib/storage"
	"github.com/sluicefeed/sluice/internal/testkit/testsvc"
)

// TestDeltaTablesOnS3 finds Delta tables under an s3:// root and by URL on
// moto's S3, and checks what Check refuses at start.
func TestDeltaTablesOnS3(t *testing.T) {
	m := testsvc.SharedMoto(t)
	bucket := testsvc.UniqueName("deltacat")
	m.CreateBucket(t, bucket)
	for _, k := range []string{"lake/a/_delta_log/00000000000000000000.json", "lake/a/part-0.parquet",
		"lake/b/part-0.parquet", "lake/c/_delta_log/00000000000000000000.json", "lake/file.txt",
		"named/_delta_log/00000000000000000000.json"} {
		m.PutObject(t, bucket, k, []byte("{}"))
	}
	empty := testsvc.UniqueName("deltaempty")
	m.CreateBucket(t, empty)
	props := map[string]string{"s3.endpoint": m.Endpoint, "s3.region": testsvc.Region,
		"s3.access-key-id": m.Admin.AccessKeyID, "s3.secret-access-key": m.Admin.SecretAccessKey}
	ctx := context.Background()
	url := "s3://" + bucket

	d := NewDeltaTables(ctx, DeltaConfig{Root: url + "/lake/", Tables: map[string]string{"sales.named": url + "/named"}},
		props)
	if err := d.Check(ctx); err != nil {
		t.Fatal(err)
	}
	names, err := d.ListTables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"delta.a", "delta.c", "sales.named"}; !slices.Equal(names, want) {
		t.Errorf("ListTables %v, want %v", names, want)
	}
	for name, want := range map[string]bool{"delta.a": true, "delta.b": false, "delta.file.txt": false,
		"delta.nope": false, "sales.named": true, "delta.": false} {
		if got := d.Has(name); got != want {
			t.Errorf("Has(%q) = %v, want %v", name, got, want)
		}
	}
	loc, err := d.Locate("delta.a")
	if err != nil {
		t.Fatal(err)
	}
	if loc.Root != url+"/lake/a" || loc.Dir != loc.Root {
		t.Errorf("Locate: root %s, dir %s", loc.Root, loc.Dir)
	}
	entries, err := fs.ReadDir(loc.FS, "_delta_log")
	if err != nil || len(entries) != 1 || entries[0].Name() != "00000000000000000000.json" {
		t.Errorf("the table's _delta_log: %v, %v", entries, err)
	}
	if _, err := d.Locate("delta.b"); !errors.Is(err, ErrTableNotFound) {
		t.Errorf("Locate of a folder without _delta_log: %v", err)
	}

	for _, tc := range []struct {
		name string
		cfg  DeltaConfig
		kind error
		says string
	}{
		{"a bucket that does not exist", DeltaConfig{Root: "s3://no-such-" + bucket + "/lake"},
			storage.ErrBucketNotFound, "does not exist"},
		{"a table in a bucket that does not exist", DeltaConfig{Tables: map[string]string{"s.t": "s3://no-such-" +
			bucket + "/t"}}, storage.ErrBucketNotFound, "delta.tables s.t"},
		{"a root with nothing under it", DeltaConfig{Root: url + "/nothing"}, ErrInvalidConfig,
			"nothing is stored under it"},
		{"a table without _delta_log", DeltaConfig{Tables: map[string]string{"s.t": url + "/lake/b"}},
			ErrInvalidConfig, "holds no _delta_log"},
		{"a name the root serves too", DeltaConfig{Root: url + "/lake", Tables: map[string]string{
			"delta.a": url + "/named"}}, ErrInvalidConfig, "same name"},
		{"an unknown scheme", DeltaConfig{Root: "hdfs://namenode/lake"}, ErrInvalidConfig, "hdfs"},
		{"an empty bucket", DeltaConfig{Root: "s3://" + empty}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := NewDeltaTables(ctx, tc.cfg, props).Check(ctx)
			if tc.kind == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Check: %v; want %v saying %q", err, tc.kind, tc.says)
			}
		})
	}
}
