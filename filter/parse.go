package filter

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxFilterLength (in bytes) and maxFilterDepth (parentheses and NOTs
// nested in one another) bound the work a client's filter can ask of the
// parser and of the recursive code that later walks the expression.
const (
	maxFilterLength = 64 << 10
	maxFilterDepth  = 64
)

// maxQuoted is how many characters of a client's token an error message
// repeats.
const maxQuoted = 40

// filterErrorf returns an ErrInvalidFilter error at a 1-based character
// position of the filter.
func filterErrorf(pos int, format string, args ...any) error {
	return fmt.Errorf("%w: at position %d: %s", ErrInvalidFilter, pos, fmt.Sprintf(format, args...))
}

// clip shortens s to maxQuoted characters for an error message.
func clip(s string) string {
	if utf8.RuneCountInString(s) <= maxQuoted {
		return s
	}
	return string([]rune(s)[:maxQuoted]) + "..."
}

// filterNode is a node of a parsed filter. Positions are 1-based character
// offsets into the filter text, for error messages.
type filterNode interface{ position() int }

type (
	andNode struct {
		pos         int
		left, right filterNode
	}
	orNode struct {
		pos         int
		left, right filterNode
	}
	notNode struct {
		pos   int
		child filterNode
	}
	// cmpNode is `column op literal` (op one of = != < <= > >=).
	cmpNode struct {
		pos    int
		column string
		op     string
		value  literal
	}
	// inNode is `column [NOT] IN (literal, ...)`.
	inNode struct {
		pos    int
		column string
		negate bool
		values []literal
	}
	// nullNode is `column IS [NOT] NULL`.
	nullNode struct {
		pos    int
		column string
		negate bool
	}
	// constNode is TRUE or FALSE on its own.
	constNode struct {
		pos   int
		value bool
	}
)

func (n andNode) position() int   { return n.pos }
func (n orNode) position() int    { return n.pos }
func (n notNode) position() int   { return n.pos }
func (n cmpNode) position() int   { return n.pos }
func (n inNode) position() int    { return n.pos }
func (n nullNode) position() int  { return n.pos }
func (n constNode) position() int { return n.pos }

// literalKind is the lexical kind of a literal.
type literalKind int

const (
	litString literalKind = iota
	litInt
	litFloat
	litBool
	litTimestamp // TIMESTAMP '...'
	litDate      // DATE '...'
)

type literal struct {
	pos  int
	kind literalKind
	text string // the string's contents, or the number as written
	b    bool
	i    int64
	f    float64
}

func (l literal) String() string {
	switch l.kind {
	case litString:
		return "'" + strings.ReplaceAll(l.text, "'", "''") + "'"
	case litTimestamp:
		return "TIMESTAMP '" + l.text + "'"
	case litDate:
		return "DATE '" + l.text + "'"
	case litBool:
		return strconv.FormatBool(l.b)
	default:
		return l.text
	}
}

type parser struct {
	lex   *Lexer
	tok   Token
	depth int
}

// parseFilter parses a SQL boolean expression. The grammar:
//
//	expr    := and { OR and }
//	and     := unary { AND unary }
//	unary   := NOT unary | primary
//	primary := '(' expr ')' | TRUE | FALSE | column rest
//	rest    := op literal | [NOT] IN '(' literal {',' literal} ')' | IS [NOT] NULL
//	literal := 'string' | number | TRUE | FALSE | TIMESTAMP 'ts' | DATE 'd'
//
// Keywords are case-insensitive; a column is a bare identifier (dots allowed
// for nested fields) or quoted with "double quotes" or `backticks`.
func parseFilter(src string) (filterNode, error) {
	if len(src) > maxFilterLength {
		// The position is that of the first character that does not fit.
		pos := 1
		for i, r := range src {
			if i+utf8.RuneLen(r) > maxFilterLength {
				break
			}
			pos++
		}
		return nil, filterErrorf(pos, "filter is %d bytes, longer than the limit of %d bytes",
			len(src), maxFilterLength)
	}
	p := &parser{lex: NewLexer(src)}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.Kind == TokenEOF {
		return nil, filterErrorf(1, "empty filter")
	}
	n, err := p.expr()
	if err != nil {
		return nil, err
	}
	if p.tok.Kind != TokenEOF {
		return nil, p.unexpected("AND, OR or the end of the filter")
	}
	return n, nil
}

func (p *parser) advance() error {
	t, err := p.lex.Next()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

func (p *parser) keyword(kw string) bool {
	return p.tok.Kind == TokenIdent && strings.EqualFold(p.tok.Text, kw)
}

func (p *parser) unexpected(want string) error {
	got := "end of filter"
	switch p.tok.Kind {
	case TokenEOF:
	case TokenString:
		got = "string " + literal{kind: litString, text: clip(p.tok.Text)}.String()
	default:
		got = strconv.Quote(clip(p.tok.Text))
	}
	return filterErrorf(p.tok.Pos, "expected %s, found %s", want, got)
}

// enter counts one more level of nesting (a parenthesis or a NOT) at the
// current token; leave undoes it.
func (p *parser) enter() error {
	p.depth++
	if p.depth > maxFilterDepth {
		return filterErrorf(p.tok.Pos, "filter nests deeper than %d levels", maxFilterDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

func (p *parser) expr() (filterNode, error) {
	left, err := p.and()
	if err != nil {
		return nil, err
	}
	for p.keyword("OR") {
		pos := p.tok.Pos
		if err := p.advance(); err != nil {
			return nil, err
		}
		right, err := p.and()
		if err != nil {
			return nil, err
		}
		left = orNode{pos: pos, left: left, right: right}
	}
	return left, nil
}

func (p *parser) and() (filterNode, error) {
	left, err := p.unary()
	if err != nil {
		return nil, err
	}
	for p.keyword("AND") {
		pos := p.tok.Pos
		if err := p.advance(); err != nil {
			return nil, err
		}
		right, err := p.unary()
		if err != nil {
			return nil, err
		}
		left = andNode{pos: pos, left: left, right: right}
	}
	return left, nil
}

func (p *parser) unary() (filterNode, error) {
	if p.keyword("NOT") {
		pos := p.tok.Pos
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		if err := p.advance(); err != nil {
			return nil, err
		}
		child, err := p.unary()
		if err != nil {
			return nil, err
		}
		return notNode{pos: pos, child: child}, nil
	}
	return p.primary()
}

func (p *parser) primary() (filterNode, error) {
	switch {
	case p.tok.Kind == TokenLParen:
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		if err := p.advance(); err != nil {
			return nil, err
		}
		n, err := p.expr()
		if err != nil {
			return nil, err
		}
		if p.tok.Kind != TokenRParen {
			return nil, p.unexpected("')'")
		}
		return n, p.advance()
	case p.keyword("TRUE") || p.keyword("FALSE"):
		n := constNode{pos: p.tok.Pos, value: p.keyword("TRUE")}
		return n, p.advance()
	case p.tok.Kind == TokenQuotedIdent || (p.tok.Kind == TokenIdent && !isReserved(p.tok.Text)):
		column, pos := p.tok.Text, p.tok.Pos
		if err := p.advance(); err != nil {
			return nil, err
		}
		return p.rest(column, pos)
	default:
		return nil, p.unexpected("a column name, NOT or '('")
	}
}

func (p *parser) rest(column string, pos int) (filterNode, error) {
	switch {
	case p.tok.Kind == TokenOp:
		op := p.tok.Text
		if err := p.advance(); err != nil {
			return nil, err
		}
		lit, err := p.literal()
		if err != nil {
			return nil, err
		}
		return cmpNode{pos: pos, column: column, op: op, value: lit}, nil
	case p.keyword("IS"):
		if err := p.advance(); err != nil {
			return nil, err
		}
		negate := false
		if p.keyword("NOT") {
			negate = true
			if err := p.advance(); err != nil {
				return nil, err
			}
		}
		if !p.keyword("NULL") {
			return nil, p.unexpected("NULL")
		}
		return nullNode{pos: pos, column: column, negate: negate}, p.advance()
	case p.keyword("NOT") || p.keyword("IN"):
		negate := p.keyword("NOT")
		if negate {
			if err := p.advance(); err != nil {
				return nil, err
			}
			if !p.keyword("IN") {
				return nil, p.unexpected("IN")
			}
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.Kind != TokenLParen {
			return nil, p.unexpected("'(' after IN")
		}
		var values []literal
		for {
			if err := p.advance(); err != nil {
				return nil, err
			}
			lit, err := p.literal()
			if err != nil {
				return nil, err
			}
			values = append(values, lit)
			if p.tok.Kind == TokenRParen {
				break
			}
			if p.tok.Kind != TokenComma {
				return nil, p.unexpected("',' or ')'")
			}
		}
		return inNode{pos: pos, column: column, negate: negate, values: values}, p.advance()
	default:
		return nil, p.unexpected("a comparison (= != < <= > >=), IN or IS after column " + strconv.Quote(clip(column)))
	}
}

func (p *parser) literal() (literal, error) {
	t := p.tok
	lit := literal{pos: t.Pos, text: t.Text}
	switch {
	case t.Kind == TokenString:
		lit.kind = litString
	case t.Kind == TokenNumber:
		if i, err := strconv.ParseInt(t.Text, 10, 64); err == nil {
			lit.kind, lit.i = litInt, i
		} else if f, ferr := strconv.ParseFloat(t.Text, 64); ferr == nil && !strings.ContainsAny(t.Text, "xXpP_") {
			lit.kind, lit.f = litFloat, f
		} else {
			return literal{}, filterErrorf(t.Pos, "invalid number %q", clip(t.Text))
		}
	case p.keyword("TRUE") || p.keyword("FALSE"):
		lit.kind, lit.b = litBool, p.keyword("TRUE")
	case p.keyword("TIMESTAMP") || p.keyword("DATE"):
		kind := litTimestamp
		if p.keyword("DATE") {
			kind = litDate
		}
		if err := p.advance(); err != nil {
			return literal{}, err
		}
		if p.tok.Kind != TokenString {
			return literal{}, p.unexpected("a quoted " + strings.ToLower(t.Text) + " after " + strings.ToUpper(t.Text))
		}
		lit.kind, lit.text = kind, p.tok.Text
	case p.keyword("NULL"):
		return literal{}, filterErrorf(t.Pos, "comparison with NULL is never true; use IS NULL or IS NOT NULL")
	default:
		return literal{}, p.unexpected("a literal (a 'string', a number, TRUE, FALSE, TIMESTAMP '...' or DATE '...')")
	}
	return lit, p.advance()
}

var reserved = map[string]bool{"AND": true, "OR": true, "NOT": true, "IN": true, "IS": true, "NULL": true,
	"TRUE": true, "FALSE": true}

func isReserved(word string) bool { return reserved[strings.ToUpper(word)] }
