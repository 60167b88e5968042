package delta

import (
	"fmt"
	"slices"
	"strings"
)

// supportedReaderFeatures are the reader features (and the writer-only
// features some writers also list as reader features) that Sluice reads
// correctly: the others change how a table must be read in ways Sluice does
// not implement (catalogManaged, ...), so their tables are refused rather
// than read wrongly. variantType is accepted because ParseSchema refuses
// variant columns: a table that lists the feature without one (delta-rs
// lists it whenever it enables deletion vectors) reads correctly, and one
// with a variant column is refused by its schema, naming the column.
var supportedReaderFeatures = map[string]bool{
	"deletionVectors":      true,
	"columnMapping":        true,
	"timestampNtz":         true,
	"v2Checkpoint":         true,
	"typeWidening":         true,
	"typeWidening-preview": true,
	"vacuumProtocolCheck":  true,
	"inCommitTimestamp":    true,
	"rowTracking":          true,
	"domainMetadata":       true,
	"changeDataFeed":       true,
	"checkConstraints":     true,
	"generatedColumns":     true,
	"identityColumns":      true,
	"invariants":           true,
	"appendOnly":           true,
	"allowColumnDefaults":  true,
	"icebergCompatV1":      true,
	"icebergCompatV2":      true,
	"clustering":           true,
	"variantType":          true,
}

// maxReaderVersion is the newest reader protocol version Sluice implements.
const maxReaderVersion = 3

// CheckProtocol reports whether Sluice can read a table with protocol p. It
// returns nil for reader versions 1 and 2 (version 2 adds column mapping),
// and for version 3 when every reader feature is supported. Otherwise it
// returns an error wrapping ErrUnsupportedFeature that names the version or
// the unsupported features. Writer features never prevent reading.
func CheckProtocol(p Protocol) error {
	if why := unsupportedProtocol(p); why != "" {
		return fmt.Errorf("%w: %s", ErrUnsupportedFeature, why)
	}
	return nil
}

// CheckProtocol is the package's CheckProtocol with the table's name in
// its error.
func (t *Table) CheckProtocol(p Protocol) error {
	if why := unsupportedProtocol(p); why != "" {
		return fmt.Errorf("%w: table %q: %s", ErrUnsupportedFeature, t.name, why)
	}
	return nil
}

// unsupportedProtocol says why Sluice cannot read a table with protocol p,
// or returns "" when it can.
func unsupportedProtocol(p Protocol) string {
	switch {
	case p.MinReaderVersion < 1:
		return fmt.Sprintf("invalid minReaderVersion %d", p.MinReaderVersion)
	case p.MinReaderVersion > maxReaderVersion:
		return fmt.Sprintf("minReaderVersion %d (Sluice reads up to %d)", p.MinReaderVersion, maxReaderVersion)
	case p.MinReaderVersion < 3:
		return ""
	}
	var unsupported []string
	for _, f := range p.ReaderFeatures {
		if !supportedReaderFeatures[f] && !slices.Contains(unsupported, f) {
			unsupported = append(unsupported, f)
		}
	}
	if len(unsupported) == 0 {
		return ""
	}
	return "unsupported reader features " + strings.Join(unsupported, ", ")
}
