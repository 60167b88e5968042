package delta

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
)

// encodeZ85 is the inverse of decodeZ85, as the Rust z85 crate encodes:
// plain Z85 for whole 4-byte chunks, then for a tail of n bytes (1-3),
// 4-n '#' characters and the tail's big-endian value in n+1 digits.
func encodeZ85(b []byte) string {
	var s strings.Builder
	for len(b) > 0 {
		n := min(len(b), 4)
		var v uint64
		for _, c := range b[:n] {
			v = v<<8 | uint64(c)
		}
		digits := n + 1
		s.WriteString(strings.Repeat(string(rune(z85Pad)), 5-digits))
		var chunk [5]byte
		for i := digits - 1; i >= 0; i-- {
			chunk[i] = z85Alphabet[v%85]
			v /= 85
		}
		s.Write(chunk[:digits])
		b = b[n:]
	}
	return s.String()
}

func TestDecodeZ85(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     string // hex; "" with wantErr
		wantErr  bool
	}{
		// ZeroMQ RFC 32's test vector.
		{name: "rfc", in: "HelloWorld", want: "864fd26fb559f75b"},
		{name: "empty", in: "", want: ""},
		// The UUID of the table-with-dv-small vector file
		// (deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin).
		{name: "uuid", in: "vBn[lx{q8@P<9BNH/isA", want: "61d16c75699446b7a15b8b538852e50e"},
		// The z85 crate's padded tails: 3, 2 and 1 bytes.
		{name: "tail of 3", in: "#0rr9", want: "030303"},
		{name: "tail of 3 overflow", in: "#%nSc", wantErr: true},
		{name: "tail of 2", in: "##093", want: "0300"},
		{name: "tail of 1", in: "###00", want: "00"},
		{name: "tail of 1 max", in: "###30", want: "ff"},
		{name: "tail of 1 overflow", in: "###31", wantErr: true},
		{name: "tail of 0", in: "####0", wantErr: true},
		{name: "all padding", in: "#####", wantErr: true},
		{name: "plain overflow", in: "%nSc1", wantErr: true}, // 2^32
		{name: "plain max", in: "%nSc0", want: "ffffffff"},
		{name: "padding not last", in: "##093HelloWorld", wantErr: true},
		{name: "length", in: "Hello1", wantErr: true},
		{name: "not a digit", in: "Hel~o", wantErr: true},
		{name: "non-ASCII", in: "Hel\xc3\xa9", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeZ85(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("decodeZ85(%q) = %x, want an error", tc.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("decodeZ85(%q): %v", tc.in, err)
			}
			if hex.EncodeToString(got) != tc.want {
				t.Fatalf("decodeZ85(%q) = %x, want %s", tc.in, got, tc.want)
			}
			if enc := encodeZ85(got); enc != tc.in {
				t.Fatalf("encodeZ85(%x) = %q, want %q", got, enc, tc.in)
			}
		})
	}
}

// FuzzDecodeZ85 feeds arbitrary strings to the Z85 decoder: it never
// panics, what it accepts has exactly one encoding (the input), and every
// byte string encodes to a string it accepts.
func FuzzDecodeZ85(f *testing.F) {
	for _, s := range []string{
		"", "HelloWorld", "vBn[lx{q8@P<9BNH/isA", "##093", "###30", "###31", "#0rr9", "%nSc0", "%nSc1",
		"^Bg9^0rr910000000000iXQKl0rr91000005c8Xg##093", "####0", "abc",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := decodeZ85(s)
		if err == nil {
			if enc := encodeZ85(b); enc != s {
				t.Fatalf("decodeZ85(%q) = %x, which encodes to %q", s, b, enc)
			}
			if want := len(s) / 5 * 4; len(b) > want || len(b) < want-3 {
				t.Fatalf("decodeZ85(%q) gave %d bytes", s, len(b))
			}
		}
		raw := []byte(s)
		back, err := decodeZ85(encodeZ85(raw))
		if err != nil || !bytes.Equal(back, raw) {
			t.Fatalf("round trip of %x: %x, %v", raw, back, err)
		}
	})
}
