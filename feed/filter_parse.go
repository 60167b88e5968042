package feed

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
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

type tokenKind int

const (
	tokEOF tokenKind = iota
	tokIdent
	tokQuotedIdent
	tokString
	tokNumber
	tokOp     // = != <> < <= > >=
	tokLParen // (
	tokRParen // )
	tokComma
)

type token struct {
	kind tokenKind
	text string
	pos  int // 1-based character position
}

type lexer struct {
	src  string
	off  int // byte offset
	char int // characters consumed so far
}

func (l *lexer) errorf(pos int, format string, args ...any) error {
	return filterErrorf(pos, format, args...)
}

func (l *lexer) peekRune() (rune, int) {
	if l.off >= len(l.src) {
		return 0, 0
	}
	return utf8.DecodeRuneInString(l.src[l.off:])
}

func (l *lexer) advance(size int) {
	l.off += size
	l.char++
}

func (l *lexer) next() (token, error) {
	for {
		r, size := l.peekRune()
		if size == 0 || !unicode.IsSpace(r) {
			break
		}
		l.advance(size)
	}
	pos := l.char + 1
	r, size := l.peekRune()
	if size == 0 {
		return token{kind: tokEOF, pos: pos}, nil
	}
	if r == utf8.RuneError && size == 1 {
		return token{}, l.errorf(pos, "invalid UTF-8")
	}
	switch {
	case r == '(':
		l.advance(size)
		return token{kind: tokLParen, text: "(", pos: pos}, nil
	case r == ')':
		l.advance(size)
		return token{kind: tokRParen, text: ")", pos: pos}, nil
	case r == ',':
		l.advance(size)
		return token{kind: tokComma, text: ",", pos: pos}, nil
	case r == '=':
		l.advance(size)
		if r2, _ := l.peekRune(); r2 == '=' {
			l.advance(1)
		}
		return token{kind: tokOp, text: "=", pos: pos}, nil
	case r == '!':
		l.advance(size)
		if r2, _ := l.peekRune(); r2 == '=' {
			l.advance(1)
			return token{kind: tokOp, text: "!=", pos: pos}, nil
		}
		return token{}, l.errorf(pos, "unexpected '!' (did you mean '!='?)")
	case r == '<' || r == '>':
		l.advance(size)
		op := string(r)
		if r2, _ := l.peekRune(); r2 == '=' || (r == '<' && r2 == '>') {
			l.advance(1)
			op += string(r2)
		}
		if op == "<>" {
			op = "!="
		}
		return token{kind: tokOp, text: op, pos: pos}, nil
	case r == '\'':
		s, err := l.quoted('\'', pos, "string")
		return token{kind: tokString, text: s, pos: pos}, err
	case r == '"' || r == '`':
		s, err := l.quoted(r, pos, "quoted column name")
		if err == nil && s == "" {
			err = l.errorf(pos, "empty quoted column name")
		}
		return token{kind: tokQuotedIdent, text: s, pos: pos}, err
	case r == '-' || r == '+' || r == '.' || (r >= '0' && r <= '9'):
		start := l.off
		l.advance(size)
		for {
			r2, s2 := l.peekRune()
			if s2 == 0 || !l.inNumber(r2) {
				break
			}
			l.advance(s2)
		}
		// A number runs into a following word ("1and", "0x10") only by
		// mistake; reject it rather than split it.
		if r2, _ := l.peekRune(); r2 == '_' || unicode.IsLetter(r2) || unicode.IsDigit(r2) {
			l.skipIdent()
			return token{}, l.errorf(pos, "invalid number %q", clip(l.src[start:l.off]))
		}
		return token{kind: tokNumber, text: l.src[start:l.off], pos: pos}, nil
	case r == '_' || unicode.IsLetter(r):
		start := l.off
		l.skipIdent()
		return token{kind: tokIdent, text: l.src[start:l.off], pos: pos}, nil
	default:
		return token{}, l.errorf(pos, "unexpected character %q", r)
	}
}

// inNumber reports whether r continues a number: digits, a point, an
// exponent and the exponent's sign.
func (l *lexer) inNumber(r rune) bool {
	switch {
	case r >= '0' && r <= '9', r == '.', r == 'e', r == 'E':
		return true
	case r == '-' || r == '+':
		prev := l.src[l.off-1]
		return prev == 'e' || prev == 'E'
	default:
		return false
	}
}

// skipIdent consumes the characters of an identifier.
func (l *lexer) skipIdent() {
	for {
		r, size := l.peekRune()
		if size == 0 || (r != '_' && r != '.' && !unicode.IsLetter(r) && !unicode.IsDigit(r)) {
			return
		}
		l.advance(size)
	}
}

// quoted reads a quoted token, in which the quote character written twice
// stands for one quote character (SQL's escape).
func (l *lexer) quoted(q rune, pos int, what string) (string, error) {
	l.advance(1)
	var sb strings.Builder
	for {
		r, size := l.peekRune()
		if size == 0 {
			return "", l.errorf(pos, "unterminated %s", what)
		}
		if r == utf8.RuneError && size == 1 {
			return "", l.errorf(l.char+1, "invalid UTF-8")
		}
		l.advance(size)
		if r == q {
			if r2, _ := l.peekRune(); r2 == q {
				l.advance(1)
				sb.WriteRune(q)
				continue
			}
			return sb.String(), nil
		}
		sb.WriteRune(r)
	}
}

type parser struct {
	lex   lexer
	tok   token
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
	p := &parser{lex: lexer{src: src}}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind == tokEOF {
		return nil, filterErrorf(1, "empty filter")
	}
	n, err := p.expr()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tokEOF {
		return nil, p.unexpected("AND, OR or the end of the filter")
	}
	return n, nil
}

func (p *parser) advance() error {
	t, err := p.lex.next()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

func (p *parser) keyword(kw string) bool {
	return p.tok.kind == tokIdent && strings.EqualFold(p.tok.text, kw)
}

func (p *parser) unexpected(want string) error {
	got := "end of filter"
	switch p.tok.kind {
	case tokEOF:
	case tokString:
		got = "string " + literal{kind: litString, text: clip(p.tok.text)}.String()
	default:
		got = strconv.Quote(clip(p.tok.text))
	}
	return p.lex.errorf(p.tok.pos, "expected %s, found %s", want, got)
}

// enter counts one more level of nesting (a parenthesis or a NOT) at the
// current token; leave undoes it.
func (p *parser) enter() error {
	p.depth++
	if p.depth > maxFilterDepth {
		return p.lex.errorf(p.tok.pos, "filter nests deeper than %d levels", maxFilterDepth)
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
		pos := p.tok.pos
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
		pos := p.tok.pos
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
		pos := p.tok.pos
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
	case p.tok.kind == tokLParen:
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
		if p.tok.kind != tokRParen {
			return nil, p.unexpected("')'")
		}
		return n, p.advance()
	case p.keyword("TRUE") || p.keyword("FALSE"):
		n := constNode{pos: p.tok.pos, value: p.keyword("TRUE")}
		return n, p.advance()
	case p.tok.kind == tokQuotedIdent || (p.tok.kind == tokIdent && !isReserved(p.tok.text)):
		column, pos := p.tok.text, p.tok.pos
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
	case p.tok.kind == tokOp:
		op := p.tok.text
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
		if p.tok.kind != tokLParen {
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
			if p.tok.kind == tokRParen {
				break
			}
			if p.tok.kind != tokComma {
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
	lit := literal{pos: t.pos, text: t.text}
	switch {
	case t.kind == tokString:
		lit.kind = litString
	case t.kind == tokNumber:
		if i, err := strconv.ParseInt(t.text, 10, 64); err == nil {
			lit.kind, lit.i = litInt, i
		} else if f, ferr := strconv.ParseFloat(t.text, 64); ferr == nil && !strings.ContainsAny(t.text, "xXpP_") {
			lit.kind, lit.f = litFloat, f
		} else {
			return literal{}, p.lex.errorf(t.pos, "invalid number %q", clip(t.text))
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
		if p.tok.kind != tokString {
			return literal{}, p.unexpected("a quoted " + strings.ToLower(t.text) + " after " + strings.ToUpper(t.text))
		}
		lit.kind, lit.text = kind, p.tok.text
	case p.keyword("NULL"):
		return literal{}, p.lex.errorf(t.pos, "comparison with NULL is never true; use IS NULL or IS NOT NULL")
	default:
		return literal{}, p.unexpected("a literal (a 'string', a number, TRUE, FALSE, TIMESTAMP '...' or DATE '...')")
	}
	return lit, p.advance()
}

var reserved = map[string]bool{"AND": true, "OR": true, "NOT": true, "IN": true, "IS": true, "NULL": true,
	"TRUE": true, "FALSE": true}

func isReserved(word string) bool { return reserved[strings.ToUpper(word)] }
