package filter_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/sluicefeed/sluice/filter"
)

// lexAll returns the tokens of src up to and with EOF, as "kind:text@pos/off-end".
func lexAll(lx *filter.Lexer) ([]string, error) {
	var out []string
	for {
		t, err := lx.Next()
		if err != nil {
			return out, err
		}
		out = append(out, fmt.Sprintf("%d:%s@%d/%d-%d", t.Kind, t.Text, t.Pos, t.Off, t.End))
		if t.Kind == filter.TokenEOF {
			return out, nil
		}
	}
}

func TestLexer(t *testing.T) {
	k := func(kind filter.TokenKind) string { return fmt.Sprint(int(kind)) }
	for _, tc := range []struct {
		name string
		sql  bool
		in   string
		want []string
	}{
		{"filter", false, "é <> 'a''b' AND `x`>=.5",
			[]string{k(filter.TokenIdent) + ":é@1/0-2", k(filter.TokenOp) + ":!=@3/3-5", k(filter.TokenString) + ":a'b@6/6-12",
				k(filter.TokenIdent) + ":AND@13/13-16", k(filter.TokenQuotedIdent) + ":x@17/17-20", k(filter.TokenOp) + ":>=@20/20-22",
				k(filter.TokenNumber) + ":.5@22/22-24", k(filter.TokenEOF) + ":@24/24-24"}},
		{"filter list", false, "a IN(1,-2e+3)",
			[]string{k(filter.TokenIdent) + ":a@1/0-1", k(filter.TokenIdent) + ":IN@3/2-4", k(filter.TokenLParen) + ":(@5/4-5",
				k(filter.TokenNumber) + ":1@6/5-6", k(filter.TokenComma) + ":,@7/6-7", k(filter.TokenNumber) + ":-2e+3@8/7-12",
				k(filter.TokenRParen) + ":)@13/12-13", k(filter.TokenEOF) + ":@14/13-13"}},
		{"sql", true, "-- c\nf(x => 1x, *);",
			[]string{k(filter.TokenIdent) + ":f@6/5-6", k(filter.TokenLParen) + ":(@7/6-7", k(filter.TokenIdent) + ":x@8/7-8",
				k(filter.TokenPunct) + ":=>@10/9-11", k(filter.TokenNumber) + ":1x@13/12-14", k(filter.TokenComma) + ":,@15/14-15",
				k(filter.TokenPunct) + ":*@17/16-17", k(filter.TokenRParen) + ":)@18/17-18", k(filter.TokenPunct) + ":;@19/18-19",
				k(filter.TokenEOF) + ":@20/19-19"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lx := filter.NewLexer(tc.in)
			if tc.sql {
				lx = filter.NewSQLLexer(tc.in)
			}
			got, err := lexAll(lx)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("tokens\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestLexerErrors(t *testing.T) {
	for _, tc := range []struct {
		sql      bool
		in       string
		pos, off int
		msg      string
	}{
		{false, "a ; b", 3, 2, "unexpected character ';'"},
		{false, "1abc", 1, 0, `invalid number "1abc"`},
		{false, "é 'x", 3, 3, "unterminated string"},
		{true, `é "x`, 3, 3, "unterminated quoted identifier"},
		{false, `""`, 1, 0, "empty quoted column name"},
		{true, `""`, 1, 0, "empty quoted identifier"},
		{true, "'a\xff'", 3, 2, "invalid UTF-8"},
		{false, "a !b", 3, 2, "unexpected '!' (did you mean '!='?)"},
	} {
		_, err := lexAll(func() *filter.Lexer {
			if tc.sql {
				return filter.NewSQLLexer(tc.in)
			}
			return filter.NewLexer(tc.in)
		}())
		var se *filter.SyntaxError
		if !errors.As(err, &se) || !errors.Is(err, filter.ErrInvalidFilter) {
			t.Errorf("%q: %v, want a SyntaxError", tc.in, err)
			continue
		}
		if se.Pos != tc.pos || se.Off != tc.off || se.Msg != tc.msg {
			t.Errorf("%q: %+v, want position %d, offset %d, %q", tc.in, *se, tc.pos, tc.off, tc.msg)
		}
	}
}
