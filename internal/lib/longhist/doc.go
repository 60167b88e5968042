// Package longhist writes tables with long histories fast, for the
// planning benchmarks and the tests that keep planning proportional to
// the window rather than to the history: an Iceberg table of many
// snapshots whose manifests and manifest lists are written directly with
// iceberg-go, and a Delta table of many versions with checkpoints.
package longhist

import "errors"

// ErrInvalidParams is returned for parameters that make no history.
var ErrInvalidParams = errors.New("longhist: invalid parameters")
