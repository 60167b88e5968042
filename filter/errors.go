package filter

import (
	"github.com/sluicefeed/sluice/internal/lib/errclass"
	"github.com/sluicefeed/sluice/lake"
)

// Sentinel errors of the filter language. Their texts are the engine's
// (package feed re-exports them under its own names), so that a client
// sees the same messages whichever package reports them.
var (
	// ErrInvalidFilter reports a filter that does not parse or does not
	// type-check against the schema.
	ErrInvalidFilter = errclass.New(errclass.InvalidArgument, "feed: invalid filter")
	// ErrUnknownColumn reports a filter column the schema lacks: the
	// engine's (lake.ErrUnknownColumn), for every column a request names.
	ErrUnknownColumn = lake.ErrUnknownColumn
)
