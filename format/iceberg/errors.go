package iceberg

import "errors"

// ErrUnsupported reports an Iceberg schema feature Sluice cannot represent:
// a type lake lacks (variant, geometry, geography, unknown) or a field
// default that does not convert to its field's type.
var ErrUnsupported = errors.New("iceberg: unsupported")
