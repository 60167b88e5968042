package iceberg

import "github.com/sluicefeed/sluice/internal/lib/errclass"

// ErrUnsupported reports an Iceberg schema feature Sluice cannot represent:
// a type lake lacks (variant, geometry, geography, unknown) or a field
// default that does not convert to its field's type. Its class of failure
// (errclass) is FailedPrecondition, as lake.ErrUnsupported's.
var ErrUnsupported = errclass.New(errclass.FailedPrecondition, "iceberg: unsupported")
