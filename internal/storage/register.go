// Package storage is Sluice's storage layer: the object stores flightd
// reads tables from (S3 and S3-compatible servers, GCS, Azure), besides
// local files. Importing it registers iceberg-go's file IO for their URL
// schemes, so that an Iceberg table whose files live at s3://, gs:// or
// abfs:// locations can be read, and a Delta table at such a URL opened.
package storage

import (
	_ "github.com/apache/iceberg-go/io/gocloud/azure" // abfs://, abfss://, wasb://, wasbs://
	_ "github.com/apache/iceberg-go/io/gocloud/gcs"   // gs://
	_ "github.com/apache/iceberg-go/io/gocloud/s3"    // s3://, s3a://, s3n://
)
