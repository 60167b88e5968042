package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// What sluice prints for a person never carries a control character that
// came from a table, the server or the command line: a value such as
// "\x1b]0;pwned\a\x1b[2J" would retitle the terminal and clear it. Three
// places guarantee it, so that no call site has to remember:
//
//   - every cell of a table (changes -o table, tables, snapshots, status,
//     explain) and every value, name and label of tail's diff goes
//     through termValue, which Go-quotes a value that holds one;
//   - stderr is a terminalWriter from the start of Main: errors,
//     warnings and notices have their control characters escaped in
//     place (only the progress line, which draws with \r and an erase
//     sequence of its own, writes to the raw stream, and quotes the file
//     name it prints);
//   - ANSI colors are added by the painter after quoting.
//
// The machine outputs (jsonl, csv, parquet, arrow, -o json) carry values
// exactly, as their formats encode them.

// isControl reports a control character: C0 (below U+0020), DEL, C1
// (U+0080 to U+009F, which some terminals take as ESC sequences), and the
// Unicode bidirectional controls, which reorder what follows them on the
// line ("Trojan Source", CVE-2021-42574): a value could make the row or
// the message after it read other than it is.
func isControl(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || isBidiControl(r)
}

// isBidiControl reports the bidirectional formatting characters: the
// Arabic letter mark, the left-to-right and right-to-left marks, the
// embeddings, overrides and their pop (U+202A to U+202E) and the
// isolates (U+2066 to U+2069).
func isBidiControl(r rune) bool {
	return r == 0x061c || r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// unsafeText reports whether s holds a control character other than the
// allowed one (a line feed in messages; -1 for none), or bytes that are
// not UTF-8 (a lone byte 0x9b is CSI to a terminal that reads Latin-1).
func unsafeText(s string, allowed rune) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || (isControl(r) && r != allowed) {
			return true
		}
		i += n
	}
	return false
}

// termValue is a value, name or label as a person sees it: as it is, or
// Go-quoted when it holds a control character or is not UTF-8, as tail
// quotes a value: "\x1b]0;pwned\a\x1b[2J".
func termValue(s string) string {
	if unsafeText(s, -1) {
		return strconv.Quote(s)
	}
	return s
}

// termText is prose, a message, with each control character but a line
// feed escaped in place as Go writes it in a quoted string (\x1b, \a,
// \u0085, and \x9b for a byte that is not UTF-8), without quotes around.
func termText(s string) string {
	if !unsafeText(s, '\n') {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case isControl(r) && r != '\n':
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// terminalWriter writes messages through termText. Each Write is escaped
// on its own: a message goes out in one Write (fmt.Fprintf) so that a
// character is never split between two.
type terminalWriter struct{ w io.Writer }

func (t terminalWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(t.w, termText(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
