package spark

import (
	"fmt"
	"strings"
	"time"
)

// TableName is Spark's name of a table, part by part
// (["spark_catalog", "sales", "orders"]).
type TableName []string

// ParseTableName parses a dotted table name; a part may be quoted with
// backquotes (a doubled backquote inside is one). Errors wrap
// ErrInvalidRequest.
func ParseTableName(s string) (TableName, error) {
	var parts TableName
	var cur strings.Builder
	quoted, inQuote := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inQuote && c == '`' && i+1 < len(s) && s[i+1] == '`':
			cur.WriteByte('`')
			i++
		case c == '`' && (inQuote || cur.Len() == 0 && !quoted):
			inQuote = !inQuote
			quoted = true
		case inQuote:
			cur.WriteByte(c)
		case c == '.':
			if cur.Len() == 0 {
				return nil, fmt.Errorf("%w: table name %q has an empty part", ErrInvalidRequest, s)
			}
			parts = append(parts, cur.String())
			cur.Reset()
			quoted = false
		case quoted:
			return nil, fmt.Errorf("%w: table name %q: text after a quoted part", ErrInvalidRequest, s)
		default:
			cur.WriteByte(c)
		}
	}
	if inQuote || cur.Len() == 0 {
		return nil, fmt.Errorf("%w: table name %q", ErrInvalidRequest, s)
	}
	return append(parts, cur.String()), nil
}

// SQL is the name quoted for Spark SQL.
func (n TableName) SQL() (string, error) {
	if len(n) == 0 {
		return "", fmt.Errorf("%w: no table name", ErrInvalidRequest)
	}
	q := make([]string, len(n))
	for i, p := range n {
		var err error
		if q[i], err = quoteIdent(p); err != nil {
			return "", err
		}
	}
	return strings.Join(q, "."), nil
}

// String is the name with its parts joined by dots, quoted where needed.
func (n TableName) String() string {
	q := make([]string, len(n))
	for i, p := range n {
		if p == "" || strings.ContainsAny(p, ".` ") {
			q[i] = "`" + strings.ReplaceAll(p, "`", "``") + "`"
		} else {
			q[i] = p
		}
	}
	return strings.Join(q, ".")
}

// Format is a table's format, which decides the change engines Spark may
// offer for it.
type Format int

// The formats.
const (
	// Delta is a Delta Lake table (CHANGES, with row tracking, on 4.2).
	Delta Format = iota + 1
	// Iceberg is an Apache Iceberg table (its changelog view on 4.1).
	Iceberg
	// Other is any other table whose connector may implement CHANGES.
	Other
)

func (f Format) String() string {
	switch f {
	case Delta:
		return "delta"
	case Iceberg:
		return "iceberg"
	case Other:
		return "other"
	}
	return fmt.Sprintf("format(%d)", int(f))
}

// Table is a table served through Spark.
type Table struct {
	// Name is Spark's name of the table.
	Name TableName
	// Format is the table's format.
	Format Format
	// NativeReadable says that Sluice can read the table's files itself:
	// Detect then falls back to the native engine rather than fail.
	NativeReadable bool
}

// Bound is one end of a window: a version (a Delta version or an Iceberg
// snapshot id) or a commit time. The zero Bound is absent.
type Bound struct {
	version int64
	time    time.Time
	kind    boundKind
}

type boundKind uint8

const (
	boundNone boundKind = iota
	boundVersion
	boundTime
)

// AtVersion is the bound at a version or snapshot id.
func AtVersion(v int64) Bound { return Bound{version: v, kind: boundVersion} }

// AtTime is the bound at a commit time.
func AtTime(t time.Time) Bound { return Bound{time: t, kind: boundTime} }

// IsZero reports whether the bound is absent.
func (b Bound) IsZero() bool { return b.kind == boundNone }

// Version returns the bound's version and whether it is one.
func (b Bound) Version() (int64, bool) { return b.version, b.kind == boundVersion }

// Time returns the bound's time and whether it is one.
func (b Bound) Time() (time.Time, bool) { return b.time, b.kind == boundTime }

func (b Bound) String() string {
	switch b.kind {
	case boundVersion:
		return fmt.Sprintf("version %d", b.version)
	case boundTime:
		return "time " + b.time.UTC().Format(time.RFC3339Nano)
	}
	return "absent"
}

// Window is the changes of the commits after From up to and including
// To. An absent From is the start of the table's history; an absent To is
// the table's latest commit when the read is planned (the window is pinned
// then).
type Window struct {
	From, To Bound
}

// Request is a window read through Spark.
type Request struct {
	// Table is the table.
	Table Table
	// Engine is the change engine, from the table's Verdict:
	// EngineSparkNative or EngineIcebergChangelogView.
	Engine Engine
	// Window is the window.
	Window Window
	// Columns is the projection of data columns; empty: every column.
	Columns []string
	// Filter keeps the changes whose before- or after-image matches; an
	// update pair is kept or dropped whole. Nil: every change.
	Filter Expr
	// Identity are the columns that pair a delete and an insert of one
	// key into an update in Iceberg's changelog view (its
	// identifier_columns). Empty: no pairs there. Delta's CHANGES pairs
	// by row id and ignores it.
	Identity []string
	// NetChanges collapses the window per row (Iceberg's net_changes;
	// Delta's deduplicationMode netChanges).
	NetChanges bool
}
