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

// props are the storage properties of a moto server with key k.
func props(m *testsvc.MotoServer, k testsvc.Key) map[string]string {
	return map[string]string{
		"s3.endpoint": m.Endpoint, "s3.region": testsvc.Region,
		"s3.access-key-id": k.AccessKeyID, "s3.secret-access-key": k.SecretAccessKey,
	}
}

func TestFSOverMoto(t *testing.T) {
	m := testsvc.SharedMoto(t)
	bucket := testsvc.UniqueName("fs")
	m.CreateBucket(t, bucket)
	files := map[string]string{
		"lake/t/_delta_log/00000000000000000000.json": `{"commitInfo":{}}`,
		"lake/t/_delta_log/00000000000000000001.json": "one",
		"lake/t/part-0.parquet":                       "0123456789abcdef",
		"lake/t/p=a b/part-1.parquet":                 "x",
		"lake/u/_delta_log/00000000000000000000.json": "u",
		"rootless.txt": "not under the root",
	}
	for k, v := range files {
		m.PutObject(t, bucket, k, []byte(v))
	}
	ctx := context.Background()
	fsys, err := Open(ctx, "s3://"+bucket+"/lake/", props(m, m.Admin))
	if err != nil {
		t.Fatal(err)
	}
	if err := fsys.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if err := fstest.TestFS(fsys, "t/_delta_log/00000000000000000000.json", "t/part-0.parquet",
		"t/p=a b/part-1.parquet", "u/_delta_log/00000000000000000000.json"); err != nil {
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

	// A folder is one delimited listing: one request, whatever is below.
	// Moto logs a request after answering it, so the root listing above may
	// be logged late: only requests naming something under t/ count.
	before := requests(m, bucket)
	if _, err := fs.ReadDir(fsys, "t/_delta_log"); err != nil {
		t.Fatal(err)
	}
	if got := newRequests(t, m, bucket, before, "lake/t/", 1); len(got) != 1 ||
		!strings.Contains(got[0], "GET /"+bucket+"?") || !strings.Contains(got[0], "delimiter=") {
		t.Errorf("listing t/_delta_log made the requests %q, want one delimited listing", got)
	}

	// A listing after a name starts after its key: S3's start-after.
	before = requests(m, bucket)
	testReadDirAfter(t, fsys)
	got := newRequests(t, m, bucket, before, "lake/t/", 4)
	if n := len(under(got, "&start-after=lake/t/_delta_log/0000")); len(got) != 4 || n != 3 {
		t.Errorf("listing t/_delta_log after four names (one empty) made the requests %q, want four listings, "+
			"three with start-after", got)
	}

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
	empty, err := Open(ctx, "s3://"+bucket+"/nothing-here", props(m, m.Admin))
	if err != nil {
		t.Fatal(err)
	}
	if err := empty.Check(ctx); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Check of a root with nothing under it: %v, want fs.ErrNotExist", err)
	}
}

// requests returns the requests moto logged on bucket so far.
func requests(m *testsvc.MotoServer, bucket string) []string {
	var out []string
	for _, line := range strings.Split(m.Logs(), "\n") {
		if strings.Contains(line, `"GET /`+bucket) || strings.Contains(line, `"HEAD /`+bucket) ||
			strings.Contains(line, `"PUT /`+bucket) {
			out = append(out, line)
		}
	}
	return out
}

// under keeps the logged requests that name a key or prefix under p.
func under(lines []string, p string) []string {
	var out []string
	for _, l := range lines {
		if strings.Contains(l, p) {
			out = append(out, l)
		}
	}
	return out
}

// newRequests returns the requests on bucket naming something under p
// logged after before, waiting a moment for at least want of them (moto
// logs a request after answering it).
func newRequests(t *testing.T, m *testsvc.MotoServer, bucket string, before []string, p string, want int) []string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		got := under(requests(m, bucket)[len(before):], p)
		if len(got) >= want || time.Now().After(deadline) {
			time.Sleep(100 * time.Millisecond) // and no more than want
			return under(requests(m, bucket)[len(before):], p)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestErrorsOverMoto drives each storage failure against a real S3 server
// and checks that it names its cause.
func TestErrorsOverMoto(t *testing.T) {
	m := testsvc.Moto(t, testsvc.MotoOptions{})
	bucket := testsvc.UniqueName("errs")
	m.CreateBucket(t, bucket)
	m.PutObject(t, bucket, "t/_delta_log/00000000000000000000.json", []byte("{}"))
	reader := m.CreateUser(t, "lister", testsvc.BucketPolicy(bucket, "s3:ListBucket"))
	ctx := context.Background()
	open := func(t *testing.T, root string, p map[string]string) *FS {
		t.Helper()
		f, err := Open(ctx, root, p)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	check := func(t *testing.T, err, kind error, want ...string) {
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

	t.Run("bucket missing", func(t *testing.T) {
		f := open(t, "s3://no-such-bucket-"+bucket+"/t", props(m, m.Admin))
		_, err := f.Open("_delta_log/00000000000000000000.json")
		check(t, err, ErrBucketNotFound, `bucket "no-such-bucket-`, m.Endpoint)
		check(t, f.Check(ctx), ErrBucketNotFound)
		// The same through the IO iceberg-go gives an Iceberg table.
		io, err := iceio.LoadFS(ctx, props(m, m.Admin), "s3://no-such-bucket-"+bucket+"/t")
		if err != nil {
			t.Fatal(err)
		}
		loc := "s3://no-such-bucket-" + bucket + "/t/data/x.parquet"
		_, err = io.Open(loc)
		check(t, Classify(io, loc, err), ErrBucketNotFound, "does not exist")
	})
	t.Run("no region", func(t *testing.T) {
		t.Setenv("AWS_REGION", "")
		t.Setenv("AWS_DEFAULT_REGION", "")
		t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
		p := props(m, m.Admin)
		delete(p, "s3.region")
		_, err := open(t, "s3://"+bucket+"/t", p).Stat("_delta_log")
		check(t, err, ErrMisconfigured, "s3.region", "client.region", "AWS_REGION")
	})
	t.Run("no credentials", func(t *testing.T) {
		for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
			"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
			"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"} {
			t.Setenv(k, "")
		}
		t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
		t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
		t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
		p := props(m, m.Admin)
		delete(p, "s3.access-key-id")
		delete(p, "s3.secret-access-key")
		_, err := open(t, "s3://"+bucket+"/t", p).Open("_delta_log/00000000000000000000.json")
		check(t, err, ErrMisconfigured, "no S3 credentials", "s3.access-key-id", "AWS_PROFILE")
	})
	t.Run("endpoint refuses connections", func(t *testing.T) {
		p := props(m, m.Admin)
		p["s3.endpoint"] = "http://127.0.0.1:1"
		_, err := fs.ReadDir(open(t, "s3://"+bucket+"/t", p), "_delta_log")
		check(t, err, ErrUnavailable, "http://127.0.0.1:1", "connection refused")
	})

	m.EnableAuth(t)
	t.Run("unknown access key id", func(t *testing.T) {
		p := props(m, testsvc.Key{AccessKeyID: "AKIAUNKNOWN000000000", SecretAccessKey: "wrong"})
		_, err := open(t, "s3://"+bucket+"/t", p).Open("_delta_log/00000000000000000000.json")
		check(t, err, ErrAccessDenied, "AKIAUNKNOWN000000000", "s3.access-key-id", "InvalidAccessKeyId")
		if strings.Contains(err.Error(), "wrong") {
			t.Errorf("%v repeats the secret", err)
		}
	})
	t.Run("wrong secret", func(t *testing.T) {
		p := props(m, testsvc.Key{AccessKeyID: reader.AccessKeyID, SecretAccessKey: "not-the-secret"})
		_, err := fs.ReadDir(open(t, "s3://"+bucket+"/t", p), "_delta_log")
		check(t, err, ErrAccessDenied, reader.AccessKeyID, "s3.secret-access-key", "SignatureDoesNotMatch")
		if strings.Contains(err.Error(), "not-the-secret") {
			t.Errorf("%v repeats the secret", err)
		}
	})
	t.Run("read refused", func(t *testing.T) {
		f := open(t, "s3://"+bucket+"/t", props(m, reader))
		if _, err := fs.ReadDir(f, "_delta_log"); err != nil {
			t.Fatalf("the lister may list: %v", err)
		}
		_, err := f.Open("_delta_log/00000000000000000000.json")
		check(t, err, ErrAccessDenied, "refused", reader.AccessKeyID,
			"s3://"+bucket+"/t/_delta_log/00000000000000000000.json")
		if strings.Contains(err.Error(), reader.SecretAccessKey) {
			t.Errorf("%v repeats the secret", err)
		}
	})
}

func TestIsURL(t *testing.T) {
	for loc, want := range map[string]bool{
		"s3://b/p": true, "gs://b": true, "abfss://c@a.dfs.core.windows.net/p": true,
		"file:///data/t": false, "/data/t": false, "data/t": false, "": false,
	} {
		if got := IsURL(loc); got != want {
			t.Errorf("IsURL(%q) = %v, want %v", loc, got, want)
		}
	}
}

// TestFSOverListableIO reads through an IO that is not gocloud's (iceberg-go's
// in-memory one): folders are listed with its WalkDir, one level deep.
func TestFSOverListableIO(t *testing.T) {
	ctx := context.Background()
	bucket := testsvc.UniqueName("mem")
	mem, err := iceio.LoadFS(ctx, nil, "mem://"+bucket)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"lake/t/_delta_log/00000000000000000000.json": "{}",
		"lake/t/part-0.parquet":                       "0123456789",
		"lake/u/_delta_log/00000000000000000000.json": "u",
	}
	for k, v := range files {
		if err := mem.(iceio.WriteFileIO).WriteFile("mem://"+bucket+"/"+k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	fsys, err := Open(ctx, "mem://"+bucket+"/lake", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := fsys.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if err := fstest.TestFS(fsys, "t/_delta_log/00000000000000000000.json", "t/part-0.parquet",
		"u/_delta_log/00000000000000000000.json"); err != nil {
		t.Fatal(err)
	}
	if ok, err := fsys.HasDir("t/_delta_log"); !ok || err != nil {
		t.Errorf("HasDir(t/_delta_log) = %v, %v", ok, err)
	}
	if ok, err := fsys.HasDir("v/_delta_log"); ok || err != nil {
		t.Errorf("HasDir(v/_delta_log) = %v, %v", ok, err)
	}
	empty, err := Open(ctx, "mem://"+bucket+"/nothing", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := empty.Check(ctx); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Check of a root with nothing under it: %v", err)
	}
}

// testReadDirAfter checks ReadDirAfter on the _delta_log folder of the
// table t of fsys, whose commits are versions 0 and 1.
func testReadDirAfter(t *testing.T, fsys ReadDirAfterFS) {
	t.Helper()
	for _, tc := range []struct{ after, want string }{
		{"", "00000000000000000000.json,00000000000000000001.json"},
		{"00000000000000000000", "00000000000000000000.json,00000000000000000001.json"},
		{"00000000000000000000.json", "00000000000000000001.json"},
		{"00000000000000000001.json", ""},
	} {
		entries, err := fsys.ReadDirAfter("t/_delta_log", tc.after)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if got := strings.Join(names, ","); got != tc.want {
			t.Errorf("ReadDirAfter(t/_delta_log, %q) lists %q, want %q", tc.after, got, tc.want)
		}
	}
}
