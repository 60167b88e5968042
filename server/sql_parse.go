package server

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sluicefeed/sluice/filter"
)

// The SQL that the Flight SQL endpoint accepts is one statement:
//
//	query   := SELECT select FROM TABLE_CHANGES '(' args ')' [WHERE filter] [LIMIT n] [';']
//	select  := '*' | column {',' column}
//	args    := 'ns.table' [',' bound [',' bound]] {',' name '=>' value}
//	bound   := integer | NULL
//	name    := from_snapshot | to_snapshot | net_changes | identity | ref
//	value   := integer | NULL | TRUE | FALSE | 'string'
//
// Keywords and option names are case-insensitive; a column is a bare
// identifier or quoted with "double quotes" or `backticks` (the quote
// written twice stands for itself). The filter is the text between WHERE
// and LIMIT (or the end), parsed by the feed's filter grammar (SPEC §3).
// identity is one string of comma-separated column names; ref one string,
// the name of a branch or tag.

// maxSQLBytes bounds a query's text.
const maxSQLBytes = 64 << 10

// sqlSupported names what the endpoint accepts, for error messages.
const sqlSupported = "Sluice's Flight SQL accepts one query: SELECT <columns | *> FROM " +
	"table_changes('<ns.table>'[, <from_snapshot>[, <to_snapshot>]][, net_changes => true][, identity => '<col>[,<col>]'][, ref => '<branch or tag>']) " +
	"[WHERE <filter>] [LIMIT <n>]"

// Columns of the flat layout after the data columns.
const (
	colChangeType      = "_change_type"
	colCommitVersion   = "_commit_version"
	colCommitTimestamp = "_commit_timestamp"
)

// flatMetaColumns are the flat layout's columns after the data columns.
var flatMetaColumns = []string{colChangeType, colCommitVersion, colCommitTimestamp}

// sqlQuery is a parsed table_changes query.
type sqlQuery struct {
	Table string
	// From and To bound the window (from, to]; nil: the start of history,
	// the current snapshot.
	From, To *int64
	// Select lists the output columns in order; nil for '*'.
	Select []string
	// Filter is the WHERE clause's text ("" for none).
	Filter     string
	NetChanges bool
	Identity   []string
	// Ref is the branch or tag the window runs on ("" for the main
	// branch).
	Ref string
	// Limit caps the rows returned; nil for no limit.
	Limit *int64
}

// dataColumns returns the data columns the query selects: its columns but
// the flat layout's own; nil when it selects every data column ('*' or
// only _change_type and the like).
func (q *sqlQuery) dataColumns() []string {
	var out []string
	for _, c := range q.Select {
		if !slices.Contains(flatMetaColumns, c) {
			out = append(out, c)
		}
	}
	return out
}

type sqlTokKind int

const (
	sqlEOF sqlTokKind = iota
	sqlIdent
	sqlQuotedIdent
	sqlString
	sqlNumber
	sqlPunct
)

type sqlTok struct {
	kind sqlTokKind
	text string
	// off and end are byte offsets of the token in the query.
	off, end int
}

// sqlErrorf returns an InvalidArgument error about the query at a byte
// offset, reported as a 1-based character position.
func sqlErrorf(src string, off int, format string, args ...any) error {
	pos := utf8.RuneCountInString(src[:min(off, len(src))]) + 1
	return badRequestf("SQL at position %d: %s. %s", pos, fmt.Sprintf(format, args...), sqlSupported)
}

// lexSQL splits a query into tokens, with the filter language's lexer in
// its SQL mode (so that the WHERE clause is lexed as the filter is).
// Operators and punctuation are sqlPunct tokens spelled as written.
func lexSQL(src string) ([]sqlTok, error) {
	lx := filter.NewSQLLexer(src)
	var toks []sqlTok
	for {
		t, err := lx.Next()
		if err != nil {
			var se *filter.SyntaxError
			if errors.As(err, &se) {
				return nil, sqlErrorf(src, se.Off, "%s", se.Msg)
			}
			return nil, badRequestf("SQL: %v. %s", err, sqlSupported)
		}
		tok := sqlTok{text: t.Text, off: t.Off, end: t.End}
		switch t.Kind {
		case filter.TokenEOF:
			tok.kind = sqlEOF
		case filter.TokenIdent:
			tok.kind = sqlIdent
		case filter.TokenQuotedIdent:
			tok.kind = sqlQuotedIdent
		case filter.TokenString:
			tok.kind = sqlString
		case filter.TokenNumber:
			tok.kind = sqlNumber
		default:
			tok.kind, tok.text = sqlPunct, src[t.Off:t.End]
		}
		toks = append(toks, tok)
		if t.Kind == filter.TokenEOF {
			return toks, nil
		}
	}
}

type sqlParser struct {
	src  string
	toks []sqlTok
	i    int
}

func (p *sqlParser) peek() sqlTok { return p.toks[p.i] }

func (p *sqlParser) next() sqlTok {
	t := p.toks[p.i]
	if t.kind != sqlEOF {
		p.i++
	}
	return t
}

// keyword consumes the keyword kw (case-insensitive) if it is next.
func (p *sqlParser) keyword(kw string) bool {
	if t := p.peek(); t.kind == sqlIdent && strings.EqualFold(t.text, kw) {
		p.i++
		return true
	}
	return false
}

// punct consumes the punctuation s if it is next.
func (p *sqlParser) punct(s string) bool {
	if t := p.peek(); t.kind == sqlPunct && t.text == s {
		p.i++
		return true
	}
	return false
}

// unexpected reports the next token where want was expected.
func (p *sqlParser) unexpected(want string) error {
	t := p.peek()
	if t.kind == sqlEOF {
		return sqlErrorf(p.src, t.off, "expected %s, found the end of the query", want)
	}
	return sqlErrorf(p.src, t.off, "expected %s, found %s", want, quoteName(p.src[t.off:t.end]))
}

// parseSQL parses a table_changes query.
func parseSQL(src string) (*sqlQuery, error) {
	if len(src) > maxSQLBytes {
		return nil, badRequestf("SQL of %d bytes is longer than the limit of %d", len(src), maxSQLBytes)
	}
	toks, err := lexSQL(src)
	if err != nil {
		return nil, err
	}
	p := &sqlParser{src: src, toks: toks}
	if !p.keyword("SELECT") {
		if t := p.peek(); t.kind == sqlIdent {
			return nil, sqlErrorf(src, t.off, "%s statements are not supported: Sluice is read-only", quoteName(strings.ToUpper(t.text)))
		}
		return nil, p.unexpected("SELECT")
	}
	q := &sqlQuery{}
	if err := p.selectList(q); err != nil {
		return nil, err
	}
	if !p.keyword("FROM") {
		return nil, p.unexpected("',' or FROM")
	}
	if !p.keyword("table_changes") {
		return nil, p.unexpected("table_changes(...): Sluice's tables are read as their changes")
	}
	if !p.punct("(") {
		return nil, p.unexpected("'(' after table_changes")
	}
	if err := p.args(q); err != nil {
		return nil, err
	}
	if p.keyword("WHERE") {
		start := p.peek().off
		depth := 0
		for {
			t := p.peek()
			if t.kind == sqlEOF || (depth == 0 && t.kind == sqlPunct && t.text == ";") ||
				(depth == 0 && t.kind == sqlIdent && strings.EqualFold(t.text, "LIMIT")) {
				break
			}
			if t.kind == sqlPunct && t.text == "(" {
				depth++
			} else if t.kind == sqlPunct && t.text == ")" {
				depth--
			}
			p.next()
		}
		q.Filter = strings.TrimSpace(src[start:p.peek().off])
		if q.Filter == "" {
			return nil, p.unexpected("a filter after WHERE")
		}
	}
	if p.keyword("LIMIT") {
		t := p.next()
		n, err := strconv.ParseInt(t.text, 10, 64)
		if t.kind != sqlNumber || err != nil || n < 0 {
			p.i--
			return nil, p.unexpected("a row count (an integer of 0 or more) after LIMIT")
		}
		q.Limit = &n
	}
	p.punct(";")
	if p.peek().kind != sqlEOF {
		return nil, p.unexpected("the end of the query (WHERE, LIMIT and a ';' may end it)")
	}
	return q, nil
}

// selectList parses '*' or a list of columns.
func (p *sqlParser) selectList(q *sqlQuery) error {
	if p.punct("*") {
		return nil
	}
	for {
		t := p.next()
		if t.kind != sqlIdent && t.kind != sqlQuotedIdent {
			p.i--
			return p.unexpected("'*' or a column name")
		}
		if t.kind == sqlIdent && strings.Contains(t.text, ".") {
			return sqlErrorf(p.src, t.off, "column %s: select top-level columns (quote a name with a dot)", quoteName(t.text))
		}
		if slices.Contains(q.Select, t.text) {
			return sqlErrorf(p.src, t.off, "column %s is selected twice", quoteName(t.text))
		}
		q.Select = append(q.Select, t.text)
		if !p.punct(",") {
			return nil
		}
	}
}

// args parses table_changes' arguments up to its closing parenthesis.
func (p *sqlParser) args(q *sqlQuery) error {
	t := p.next()
	if t.kind != sqlString || t.text == "" {
		p.i--
		return p.unexpected("the table's name as a string, e.g. 'demo.orders'")
	}
	q.Table = t.text
	seen := map[string]bool{}
	positional, named := 0, false
	for {
		if p.punct(")") {
			return nil
		}
		if !p.punct(",") {
			return p.unexpected("',' or ')'")
		}
		// A named option: name => value.
		if nt := p.peek(); nt.kind == sqlIdent && p.toks[p.i+1].kind == sqlPunct && p.toks[p.i+1].text == "=>" {
			p.i += 2
			named = true
			name := strings.ToLower(nt.text)
			if seen[name] {
				return sqlErrorf(p.src, nt.off, "option %s is given twice", quoteName(nt.text))
			}
			seen[name] = true
			if err := p.option(q, name, nt); err != nil {
				return err
			}
			continue
		}
		if named {
			return p.unexpected("a named option (name => value): positional arguments come first")
		}
		positional++
		if positional > 2 {
			return p.unexpected("')' or a named option: table_changes takes a table, from_snapshot and to_snapshot")
		}
		v, err := p.bound()
		if err != nil {
			return err
		}
		if positional == 1 {
			q.From, seen["from_snapshot"] = v, true
		} else {
			q.To, seen["to_snapshot"] = v, true
		}
	}
}

// option parses the value of a named option.
func (p *sqlParser) option(q *sqlQuery, name string, nt sqlTok) error {
	switch name {
	case "from_snapshot", "to_snapshot":
		v, err := p.bound()
		if err != nil {
			return err
		}
		if name == "from_snapshot" {
			q.From = v
		} else {
			q.To = v
		}
	case "net_changes":
		switch {
		case p.keyword("TRUE"):
			q.NetChanges = true
		case p.keyword("FALSE"):
			q.NetChanges = false
		default:
			return p.unexpected("TRUE or FALSE for net_changes")
		}
	case "identity":
		t := p.next()
		if t.kind != sqlString {
			p.i--
			return p.unexpected("the identity columns as a string, e.g. 'order_id' or 'a, b'")
		}
		for c := range strings.SplitSeq(t.text, ",") {
			if c = strings.TrimSpace(c); c == "" {
				return sqlErrorf(p.src, t.off, "identity %s names an empty column", quoteName(t.text))
			}
			q.Identity = append(q.Identity, c)
		}
	case "ref":
		t := p.next()
		if t.kind != sqlString || t.text == "" {
			p.i--
			return p.unexpected("the branch or tag as a string, e.g. 'audit'")
		}
		q.Ref = t.text
	default:
		return sqlErrorf(p.src, nt.off, "unknown option %s: table_changes takes from_snapshot, to_snapshot, "+
			"net_changes, identity and ref", quoteName(nt.text))
	}
	return nil
}

// bound parses a snapshot id or NULL (no bound).
func (p *sqlParser) bound() (*int64, error) {
	if p.keyword("NULL") {
		return nil, nil
	}
	t := p.next()
	n, err := strconv.ParseInt(t.text, 10, 64)
	if t.kind != sqlNumber || err != nil {
		p.i--
		return nil, p.unexpected("a snapshot id (an integer) or NULL")
	}
	return &n, nil
}
