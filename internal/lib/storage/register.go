package storage

// The file IO of each object store, registered with iceberg-go for its URL
// schemes.

import (
	"runtime"
	"sync"
	"time"
	"weak"

	"cloud.google.com/go/storage"
	iceio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/azure" // abfs://, abfss://, wasb://, wasbs://
	"github.com/apache/iceberg-go/io/gocloud/blobfs"
	_ "github.com/apache/iceberg-go/io/gocloud/gcs" // gs://
	_ "github.com/apache/iceberg-go/io/gocloud/s3"  // s3://, s3a://, s3n://
	"github.com/googleapis/gax-go/v2"
)

// gcsRetry bounds the GCS client's retries of a failed request (a refused
// connection, HTTP 5xx or 429): by default it retries until its context
// ends, which for flightd's reads is never, so storage that cannot be
// reached would hang a read instead of failing it as unavailable. Five
// attempts wait about 3 s at most.
var gcsRetry = []storage.RetryOption{
	storage.WithBackoff(gax.Backoff{Initial: 200 * time.Millisecond, Max: 2 * time.Second, Multiplier: 2}),
	storage.WithMaxAttempts(5),
}

// Prepare readies an IO that iceberg-go made for flightd's reads: it bounds
// the retries of a GCS client (see gcsRetry). Other IOs are left as they
// are. It is safe to call on an IO in use, and again: a client is set once
// (a catalog may hand out one cached IO to every read of a table).
func Prepare(fsys iceio.IO) {
	fio, ok := fsys.(*blobfs.FileIO)
	if !ok || fio.Bucket == nil {
		return
	}
	var c *storage.Client
	if !fio.As(&c) {
		return
	}
	wp := weak.Make(c)
	once, loaded := prepared.LoadOrStore(wp, new(sync.Once))
	if !loaded {
		runtime.AddCleanup(c, func(wp weak.Pointer[storage.Client]) { prepared.Delete(wp) }, wp)
	}
	once.(*sync.Once).Do(func() { c.SetRetry(gcsRetry...) })
}

// prepared holds a *sync.Once per GCS client that Prepare has seen, until
// the client is collected.
var prepared sync.Map // weak.Pointer[storage.Client] → *sync.Once
