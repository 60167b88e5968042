package lake

import "errors"

// ErrInvalidSchema reports a schema that breaks a rule of the model (two
// fields with one name or id) or a name a schema lacks. Its text is that
// of iceberg-go's error of the same name, so that the engine's messages
// read as they did before it spoke this package.
var ErrInvalidSchema = errors.New("invalid schema")
