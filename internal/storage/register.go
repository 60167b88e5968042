package storage

// The file IO of each object store, registered with iceberg-go for its URL
// schemes.

import (
	_ "github.com/apache/iceberg-go/io/gocloud/azure" // abfs://, abfss://, wasb://, wasbs://
	_ "github.com/apache/iceberg-go/io/gocloud/gcs"   // gs://
	_ "github.com/apache/iceberg-go/io/gocloud/s3"    // s3://, s3a://, s3n://
)
