// Package storage is Sluice's storage layer: the object stores flightd
// reads tables from (S3 and S3-compatible servers, GCS, Azure), besides
// local files, for both table formats.
//
//   - Importing it registers iceberg-go's file IO for their URL schemes
//     (register.go), so that an Iceberg table whose files live at s3://,
//     gs:// or abfs:// locations can be read.
//   - [Open] returns a folder of an object store as an io/fs.FS ([FS]), read
//     through the same file IO and configured by the same properties as
//     the catalog's (s3.endpoint, s3.region, s3.access-key-id, ...): how
//     Delta tables on object storage are read.
//   - [Classify] names the cause of a storage failure with the package's
//     sentinel errors: a bucket that does not exist ([ErrBucketNotFound],
//     not a file gone), refused credentials or access ([ErrAccessDenied],
//     naming the access key id, never the secret), settings that cannot
//     work ([ErrMisconfigured]: no region, no credentials), storage that
//     cannot be reached ([ErrUnavailable]). The FS classifies its own
//     errors; the engine classifies those of an Iceberg table's file IO.
package storage
