package filter

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// TokenKind is the lexical kind of a Token.
type TokenKind int

// The kinds of tokens.
const (
	// TokenEOF ends the text.
	TokenEOF TokenKind = iota
	// TokenIdent is a bare identifier or keyword: a letter or '_', then
	// letters, digits, '_' and '.'.
	TokenIdent
	// TokenQuotedIdent is a "double-quoted" or `backquoted` identifier;
	// Text is its contents, quotes undoubled.
	TokenQuotedIdent
	// TokenString is a 'string'; Text is its contents, quotes undoubled.
	TokenString
	// TokenNumber is a number as written.
	TokenNumber
	// TokenOp is a comparison operator; Text is = != < <= > or >= (== is
	// read as =, <> as !=).
	TokenOp
	// TokenLParen is '('.
	TokenLParen
	// TokenRParen is ')'.
	TokenRParen
	// TokenComma is ','.
	TokenComma
	// TokenPunct is any other character, or "=>", in SQL mode only.
	TokenPunct
)

// Token is a token of a filter or statement.
type Token struct {
	Kind TokenKind
	// Text is the token's value (see TokenKind); Src[Off:End] is the token
	// as written.
	Text string
	// Pos is the 1-based character position of the token's start.
	Pos int
	// Off and End are the byte offsets of the token in the text.
	Off, End int
}

// SyntaxError is an error of the lexer at a place of the text. It wraps
// ErrInvalidFilter and reads as the filter's errors do; a SQL statement's
// parser reports Msg at Off in its own words.
type SyntaxError struct {
	// Pos is the 1-based character position of the problem, Off its byte
	// offset.
	Pos, Off int
	// Msg says what is wrong.
	Msg string
}

// Error reads "feed: invalid filter: at position N: Msg".
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%v: at position %d: %s", ErrInvalidFilter, e.Pos, e.Msg)
}

// Unwrap returns ErrInvalidFilter.
func (e *SyntaxError) Unwrap() error { return ErrInvalidFilter }

// Lexer splits a text into Tokens, one per call of Next.
type Lexer struct {
	src  string
	off  int // byte offset
	char int // characters consumed so far
	sql  bool
}

// NewLexer returns a lexer of a filter.
func NewLexer(src string) *Lexer { return &Lexer{src: src} }

// NewSQLLexer returns a lexer of a SQL statement: a filter's tokens, and
// also "--" comments to the end of the line (skipped), "=>" and any other
// character as TokenPunct (where a filter's lexer fails), numbers that run
// into letters as one TokenNumber (without an exponent's sign), and a '.'
// as TokenPunct rather than a number.
func NewSQLLexer(src string) *Lexer { return &Lexer{src: src, sql: true} }

func (l *Lexer) errorf(pos, off int, format string, args ...any) error {
	return &SyntaxError{Pos: pos, Off: off, Msg: fmt.Sprintf(format, args...)}
}

func (l *Lexer) peekRune() (rune, int) {
	if l.off >= len(l.src) {
		return 0, 0
	}
	return utf8.DecodeRuneInString(l.src[l.off:])
}

func (l *Lexer) advance(size int) {
	l.off += size
	l.char++
}

// skipSpace skips white space and, in SQL mode, comments.
func (l *Lexer) skipSpace() {
	for {
		r, size := l.peekRune()
		if size == 0 {
			return
		}
		if unicode.IsSpace(r) {
			l.advance(size)
			continue
		}
		if l.sql && strings.HasPrefix(l.src[l.off:], "--") {
			for {
				r, size := l.peekRune()
				if size == 0 {
					return
				}
				l.advance(size)
				if r == '\n' {
					break
				}
			}
			continue
		}
		return
	}
}

// Next returns the next token: TokenEOF at the end, for ever after. An
// error is a *SyntaxError.
func (l *Lexer) Next() (Token, error) {
	l.skipSpace()
	pos, start := l.char+1, l.off
	tok := func(kind TokenKind, text string) (Token, error) {
		return Token{Kind: kind, Text: text, Pos: pos, Off: start, End: l.off}, nil
	}
	r, size := l.peekRune()
	if size == 0 {
		return tok(TokenEOF, "")
	}
	if r == utf8.RuneError && size == 1 {
		return Token{}, l.errorf(pos, start, "invalid UTF-8")
	}
	if l.sql {
		if strings.HasPrefix(l.src[l.off:], "=>") {
			l.off += 2
			l.char += 2
			return tok(TokenPunct, "=>")
		}
		if r == '.' {
			l.advance(size)
			return tok(TokenPunct, ".")
		}
	}
	switch {
	case r == '(':
		l.advance(size)
		return tok(TokenLParen, "(")
	case r == ')':
		l.advance(size)
		return tok(TokenRParen, ")")
	case r == ',':
		l.advance(size)
		return tok(TokenComma, ",")
	case r == '=':
		l.advance(size)
		if r2, _ := l.peekRune(); r2 == '=' {
			l.advance(1)
		}
		return tok(TokenOp, "=")
	case r == '!':
		l.advance(size)
		if r2, _ := l.peekRune(); r2 == '=' {
			l.advance(1)
			return tok(TokenOp, "!=")
		}
		if l.sql {
			return tok(TokenPunct, "!")
		}
		return Token{}, l.errorf(pos, start, "unexpected '!' (did you mean '!='?)")
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
		return tok(TokenOp, op)
	case r == '\'':
		s, err := l.quoted('\'', pos, start, "string")
		if err != nil {
			return Token{}, err
		}
		return tok(TokenString, s)
	case r == '"' || r == '`':
		what, empty := "quoted column name", "empty quoted column name"
		if l.sql {
			what, empty = "quoted identifier", "empty quoted identifier"
		}
		s, err := l.quoted(r, pos, start, what)
		if err != nil {
			return Token{}, err
		}
		if s == "" {
			return Token{}, l.errorf(pos, start, "%s", empty)
		}
		return tok(TokenQuotedIdent, s)
	case r == '-' || r == '+' || r == '.' || (r >= '0' && r <= '9'):
		l.advance(size)
		for {
			r2, s2 := l.peekRune()
			if s2 == 0 || !l.inNumber(r2) {
				break
			}
			l.advance(s2)
		}
		// A number runs into a following word ("1and", "0x10") only by
		// mistake; reject it rather than split it. (SQL reads it as one
		// token, for its parser to reject.)
		if r2, _ := l.peekRune(); r2 == '_' || unicode.IsLetter(r2) || unicode.IsDigit(r2) {
			l.skipIdent()
			if !l.sql {
				return Token{}, l.errorf(pos, start, "invalid number %q", clip(l.src[start:l.off]))
			}
		}
		return tok(TokenNumber, l.src[start:l.off])
	case r == '_' || unicode.IsLetter(r):
		l.skipIdent()
		return tok(TokenIdent, l.src[start:l.off])
	case l.sql:
		l.advance(size)
		return tok(TokenPunct, string(r))
	default:
		return Token{}, l.errorf(pos, start, "unexpected character %q", r)
	}
}

// inNumber reports whether r continues a number: digits, a point, an
// exponent and the exponent's sign.
func (l *Lexer) inNumber(r rune) bool {
	switch {
	case r >= '0' && r <= '9', r == '.', r == 'e', r == 'E':
		return true
	case r == '-' || r == '+':
		prev := l.src[l.off-1]
		return !l.sql && (prev == 'e' || prev == 'E')
	default:
		return false
	}
}

// skipIdent consumes the characters of an identifier.
func (l *Lexer) skipIdent() {
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
func (l *Lexer) quoted(q rune, pos, start int, what string) (string, error) {
	l.advance(1)
	var sb strings.Builder
	for {
		r, size := l.peekRune()
		if size == 0 {
			return "", l.errorf(pos, start, "unterminated %s", what)
		}
		if r == utf8.RuneError && size == 1 {
			return "", l.errorf(l.char+1, l.off, "invalid UTF-8")
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
