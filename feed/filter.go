package feed

import (
	"github.com/sluicefeed/sluice/filter"
	"github.com/sluicefeed/sluice/lake"
)

// Filter is a parsed and type-checked row filter (package filter's).
type Filter = filter.Filter

// ParseFilter parses a row filter over the columns of schema (see
// filter.Parse). Errors wrap ErrInvalidFilter, or ErrUnknownColumn for a
// column the schema lacks.
func ParseFilter(text string, schema *lake.Schema) (*Filter, error) {
	return filter.Parse(text, schema)
}

// The limits of a client's filter (filter.MaxLength, filter.MaxDepth).
const (
	maxFilterLength = filter.MaxLength
	maxFilterDepth  = filter.MaxDepth
)
