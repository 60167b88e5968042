package iceberg

import (
	"errors"
	"io/fs"
	"testing"

	iceio "github.com/apache/iceberg-go/io"

	"github.com/sluicefeed/sluice/internal/lib/storage"
	"github.com/sluicefeed/sluice/internal/testkit/testsvc"
	"github.com/sluicefeed/sluice/lake"
)

// TestSafeIOStorageErrors reads through the file IO iceberg-go gives an
// Iceberg table on S3 (moto's), wrapped as the engine wraps it: an object
// missing from a bucket that exists is a file gone (resync required), an
// object of a bucket that does not exist is the bucket's fault, never a
// resync.
func TestSafeIOStorageErrors(t *testing.T) {
	m := testsvc.SharedMoto(t)
	bucket := testsvc.UniqueName("safeio")
	m.CreateBucket(t, bucket)
	m.PutObject(t, bucket, "t/data/a.parquet", []byte("not parquet"))
	props := map[string]string{"s3.endpoint": m.Endpoint, "s3.region": testsvc.Region,
		"s3.access-key-id": m.Admin.AccessKeyID, "s3.secret-access-key": m.Admin.SecretAccessKey}
	open := func(t *testing.T, loc string) error {
		t.Helper()
		fsys, err := iceio.LoadFS(t.Context(), props, loc)
		if err != nil {
			t.Fatal(err)
		}
		_, err = safeIO{fsys}.Open(loc)
		return lake.ReadError("db.t", 7, "data file "+loc, err)
	}

	err := open(t, "s3://"+bucket+"/t/data/gone.parquet")
	if !errors.Is(err, lake.ErrResyncRequired) {
		t.Errorf("a data file gone: %v, want lake.ErrResyncRequired", err)
	}
	err = open(t, "s3://no-such-"+bucket+"/t/data/a.parquet")
	if !errors.Is(err, storage.ErrBucketNotFound) || errors.Is(err, lake.ErrResyncRequired) || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a file of a bucket that does not exist: %v, want storage.ErrBucketNotFound only", err)
	}
	// The bucket is checked once, then remembered: the second file of it
	// says the same.
	err = open(t, "s3://no-such-"+bucket+"/t/data/b.parquet")
	if !errors.Is(err, storage.ErrBucketNotFound) {
		t.Errorf("a second file of a bucket that does not exist: %v", err)
	}
	// Files read through safeIO still read.
	fsys, err := iceio.LoadFS(t.Context(), props, "s3://"+bucket+"/t")
	if err != nil {
		t.Fatal(err)
	}
	b, err := safeIO{fsys}.ReadFile("s3://" + bucket + "/t/data/a.parquet")
	if err != nil || string(b) != "not parquet" {
		t.Errorf("ReadFile: %q, %v", b, err)
	}
}
