package storage

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	iceio "github.com/apache/iceberg-go/io"

	"github.com/sluicefeed/sluice/internal/testkit/testsvc"
)

// cloudFiles are the objects of the FS tests over GCS and Azure: two
// tables' logs and data files under root/, one object beside it.
var cloudFiles = map[string]string{
	"lake/t/_delta_log/00000000000000000000.json": `{"commitInfo":{}}`,
	"lake/t/_delta_log/00000000000000000001.json": "one",
	"lake/t/part-0.parquet":                       "0123456789abcdef",
	"lake/t/p=a b/part-1.parquet":                 "x",
	// Delta writers' escapes: gocloud's azureblob cannot read these keys.
	"lake/t/p=a%20b/test%file#1?.parquet":         "escaped",
	"lake/u/_delta_log/00000000000000000000.json": "u",
	"rootless.txt": "not under the root",
}

// testCloudFS checks the FS over root (the URL of root/ in a bucket
// holding cloudFiles): fstest.TestFS, the root's listing, ranged reads,
// and missing files and folders.
func testCloudFS(t *testing.T, root string, props map[string]string) {
	t.Helper()
	ctx := context.Background()
	fsys, err := Open(ctx, root, props)
	if err != nil {
		t.Fatal(err)
	}
	if err := fsys.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if err := fstest.TestFS(fsys, "t/_delta_log/00000000000000000000.json", "t/_delta_log/00000000000000000001.json",
		"t/part-0.parquet", "t/p=a b/part-1.parquet", "t/p=a%20b/test%file#1?.parquet",
		"u/_delta_log/00000000000000000000.json"); err != nil {
		t.Fatal(err)
	}
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() {
			t.Errorf("%s is not a folder", e.Name())
		}
		names = append(names, e.Name())
	}
	if got := strings.Join(names, ","); got != "t,u" {
		t.Errorf("root lists %s, want t,u", got)
	}
	for name, want := range map[string]string{"t/_delta_log/00000000000000000000.json": `{"commitInfo":{}}`,
		"t/p=a%20b/test%file#1?.parquet": "escaped"} {
		if b, err := fs.ReadFile(fsys, name); err != nil || string(b) != want {
			t.Errorf("ReadFile(%s) = %q, %v", name, b, err)
		}
	}

	testReadDirAfter(t, fsys)

	f, err := fsys.Open("t/part-0.parquet")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ra := f.(io.ReaderAt)
	buf := make([]byte, 4)
	if n, err := ra.ReadAt(buf, 10); n != 4 || err != nil || string(buf) != "abcd" {
		t.Errorf("ReadAt(4, 10) = %d, %v, %q", n, err, buf)
	}
	if n, err := ra.ReadAt(buf, 14); n != 2 || err != io.EOF || string(buf[:2]) != "ef" {
		t.Errorf("ReadAt past the end = %d, %v, %q", n, err, buf[:n])
	}
	if _, err := f.(io.Seeker).Seek(-3, io.SeekEnd); err != nil {
		t.Fatal(err)
	}
	if rest, err := io.ReadAll(f); err != nil || string(rest) != "def" {
		t.Errorf("read after seeking to the end less 3 = %q, %v", rest, err)
	}

	if _, err := fsys.Stat("t/missing.parquet"); !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrBucketNotFound) {
		t.Errorf("a missing object in a bucket that exists: %v, want fs.ErrNotExist", err)
	}
	if _, err := fs.ReadDir(fsys, "nope/_delta_log"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a folder that does not exist: %v, want fs.ErrNotExist", err)
	}
	if ok, err := fsys.HasDir("t/_delta_log"); !ok || err != nil {
		t.Errorf("HasDir(t/_delta_log) = %v, %v", ok, err)
	}
	if ok, err := fsys.HasDir("v/_delta_log"); ok || err != nil {
		t.Errorf("HasDir(v/_delta_log) = %v, %v", ok, err)
	}
	empty, err := Open(ctx, strings.TrimSuffix(root, "lake")+"nothing-here", props)
	if err != nil {
		t.Fatal(err)
	}
	if err := empty.Check(ctx); !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrBucketNotFound) {
		t.Errorf("Check of a root with nothing under it: %v, want fs.ErrNotExist", err)
	}
}

func TestFSOverFakeGCS(t *testing.T) {
	t.Parallel() // the emulators' tests wait mostly on their retries and round trips
	g := testsvc.SharedFakeGCS(t)
	bucket := testsvc.UniqueName("fs")
	g.CreateBucket(t, bucket)
	for k, v := range cloudFiles {
		g.PutObject(t, bucket, k, []byte(v))
	}
	testCloudFS(t, "gs://"+bucket+"/lake", g.Props())
}

func TestFSOverAzurite(t *testing.T) {
	t.Parallel() // the emulators' tests wait mostly on their retries and round trips
	a := testsvc.SharedAzurite(t)
	container := testsvc.UniqueName("fs")
	a.CreateContainer(t, container)
	for k, v := range cloudFiles {
		a.PutBlob(t, container, k, []byte(v))
	}
	testCloudFS(t, a.URL(container, "lake"), a.Props(""))
}

// checkErr fails t unless err wraps kind, is no missing file, and says
// each of want.
func checkErr(t *testing.T, err, kind error, want ...string) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("got %v, want %v", err, kind)
	}
	if errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%v reads as a missing file", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q does not say %q", err, w)
		}
	}
}

// TestErrorsOverFakeGCS drives the GCS failures the server can show: a
// bucket that does not exist, an endpoint that refuses connections.
func TestErrorsOverFakeGCS(t *testing.T) {
	t.Parallel() // the emulators' tests wait mostly on their retries and round trips
	g := testsvc.SharedFakeGCS(t)
	bucket := testsvc.UniqueName("errs")
	g.CreateBucket(t, bucket)
	g.PutObject(t, bucket, "t/_delta_log/00000000000000000000.json", []byte("{}"))
	ctx := context.Background()

	t.Run("bucket missing", func(t *testing.T) {
		missing := "no-such-" + bucket
		f, err := Open(ctx, "gs://"+missing+"/t", g.Props())
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.Open("_delta_log/00000000000000000000.json")
		checkErr(t, err, ErrBucketNotFound, `bucket "`+missing+`"`)
		checkErr(t, f.Check(ctx), ErrBucketNotFound)
		_, err = fs.ReadDir(f, "_delta_log")
		checkErr(t, err, ErrBucketNotFound)
		// The same through the IO iceberg-go gives an Iceberg table.
		io, err := iceio.LoadFS(ctx, g.Props(), "gs://"+missing+"/t")
		if err != nil {
			t.Fatal(err)
		}
		loc := "gs://" + missing + "/t/data/x.parquet"
		_, err = io.Open(loc)
		checkErr(t, Classify(io, loc, err), ErrBucketNotFound, "does not exist")
	})
	t.Run("endpoint refuses connections", func(t *testing.T) {
		p := g.Props()
		p["gcs.endpoint"] = "http://127.0.0.1:1/storage/v1/"
		f, err := Open(ctx, "gs://"+bucket+"/t", p)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = fs.ReadDir(f, "_delta_log")
		checkErr(t, err, ErrUnavailable, "127.0.0.1:1", "connection refused")
		_, err = f.Open("_delta_log/00000000000000000000.json")
		checkErr(t, err, ErrUnavailable, "127.0.0.1:1")
		// The IO iceberg-go gives an Iceberg table, as the feed prepares
		// it (twice: a catalog may hand out one IO for every read).
		io, err := iceio.LoadFS(ctx, p, "gs://"+bucket+"/t")
		if err != nil {
			t.Fatal(err)
		}
		Prepare(io)
		Prepare(io)
		loc := "gs://" + bucket + "/t/data/x.parquet"
		_, err = io.Open(loc)
		checkErr(t, Classify(io, loc, err), ErrUnavailable, "127.0.0.1:1")
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("unreachable storage took %s to report", d)
		}
	})
}

// TestErrorsOverAzurite drives the Azure failures against Azurite: a
// container that does not exist, a wrong shared key, an endpoint that
// refuses connections.
func TestErrorsOverAzurite(t *testing.T) {
	t.Parallel() // the emulators' tests wait mostly on their retries and round trips
	a := testsvc.SharedAzurite(t)
	container := testsvc.UniqueName("errs")
	a.CreateContainer(t, container)
	a.PutBlob(t, container, "t/_delta_log/00000000000000000000.json", []byte("{}"))
	ctx := context.Background()
	open := func(t *testing.T, root string, p map[string]string) *FS {
		t.Helper()
		f, err := Open(ctx, root, p)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}

	t.Run("container missing", func(t *testing.T) {
		missing := "no-such-" + container
		f := open(t, a.URL(missing, "t"), a.Props(""))
		_, err := f.Open("_delta_log/00000000000000000000.json")
		checkErr(t, err, ErrBucketNotFound, `container "`+missing+`"`, testsvc.AzuriteAccount)
		checkErr(t, f.Check(ctx), ErrBucketNotFound)
		_, err = fs.ReadDir(f, "_delta_log")
		checkErr(t, err, ErrBucketNotFound)
		io, err := iceio.LoadFS(ctx, a.Props(""), a.URL(missing, "t"))
		if err != nil {
			t.Fatal(err)
		}
		loc := a.URL(missing, "t/data/x.parquet")
		_, err = io.Open(loc)
		checkErr(t, Classify(io, loc, err), ErrBucketNotFound, "does not exist")
	})
	t.Run("wrong shared key", func(t *testing.T) {
		const wrong = "d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXk="
		f := open(t, a.URL(container, "t"), a.Props(wrong))
		_, err := f.Open("_delta_log/00000000000000000000.json")
		checkErr(t, err, ErrAccessDenied, testsvc.AzuriteAccount, "adls.auth.shared-key.account.key")
		_, err = fs.ReadDir(f, "_delta_log")
		checkErr(t, err, ErrAccessDenied, testsvc.AzuriteAccount)
		checkErr(t, f.Check(ctx), ErrAccessDenied, testsvc.AzuriteAccount)
		if strings.Contains(err.Error(), wrong) || strings.Contains(err.Error(), testsvc.AzuriteKey) {
			t.Errorf("%v repeats the key", err)
		}
	})
	t.Run("endpoint refuses connections", func(t *testing.T) {
		p := a.Props("")
		p["adls.endpoint"] = "127.0.0.1:1"
		f := open(t, a.URL(container, "t"), p)
		start := time.Now()
		_, err := fs.ReadDir(f, "_delta_log")
		checkErr(t, err, ErrUnavailable, "127.0.0.1:1", "connection refused")
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("unreachable storage took %s to report", d)
		}
	})
}
