package delta

import "fmt"

// Z85 (ZeroMQ RFC 32) is the base-85 encoding of inline deletion vectors
// and of the UUIDs that name deletion vector files ("Deletion Vector
// Descriptor Schema"). Plain Z85 encodes 4 bytes as 5 characters and so
// only whole multiples of 4 bytes. Inline vectors are rarely that long:
// writers built on the Rust z85 crate (delta-kernel-rs, delta-rs) pad the
// last chunk their own way, which decodeZ85 also reads.

// z85Alphabet holds the Z85 digits: digit i is z85Alphabet[i].
const z85Alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"

// z85Pad is the padding character of the z85 crate's padded variant; it is
// also the highest digit (84).
const z85Pad = '#'

// z85Invalid marks a byte that is not a Z85 digit in z85Digits.
const z85Invalid = 0xff

// z85Digits maps a character to its digit value, or to z85Invalid.
var z85Digits = func() (d [256]byte) {
	for i := range d {
		d[i] = z85Invalid
	}
	for i := 0; i < len(z85Alphabet); i++ {
		d[z85Alphabet[i]] = byte(i)
	}
	return d
}()

// decodeZ85 decodes s, which must be a whole number of 5-character chunks.
// Every chunk but the last is plain Z85 (5 digits, a big-endian uint32).
// The last chunk may instead be the z85 crate's padded tail: k '#'
// characters (1 <= k <= 3) and then 5-k digits holding the last 4-k bytes,
// big-endian. Plain Z85 never starts a chunk with '#' (84·85⁴ is more than
// 2³²-1), so the two readings cannot be confused. For example the
// 34-byte inline vector of cdf-table-with-dv ends in "##093": two bytes,
// 0*85² + 9*85 + 3 = 0x0300.
//
// The errors do not wrap a sentinel; the callers add ErrBadDeletionVector.
func decodeZ85(s string) ([]byte, error) {
	if len(s)%5 != 0 {
		return nil, fmt.Errorf("z85: length %d is not a multiple of 5", len(s))
	}
	out := make([]byte, 0, len(s)/5*4)
	for i := 0; i < len(s); i += 5 {
		chunk := s[i : i+5]
		pad := 0
		if i+5 == len(s) {
			for pad < len(chunk) && chunk[pad] == z85Pad {
				pad++
			}
			if pad > 3 {
				return nil, fmt.Errorf("z85: the last chunk %q has %d padding characters (at most 3)", chunk, pad)
			}
		}
		var v uint64
		for j := pad; j < len(chunk); j++ {
			d := z85Digits[chunk[j]]
			if d == z85Invalid {
				return nil, fmt.Errorf("z85: byte %#02x at %d is not a Z85 digit", chunk[j], i+j)
			}
			v = v*85 + uint64(d)
		}
		n := 4 - pad
		if v>>(8*n) != 0 {
			return nil, fmt.Errorf("z85: chunk %q at %d does not fit in %d bytes", chunk, i, n)
		}
		for k := n - 1; k >= 0; k-- {
			out = append(out, byte(v>>(8*k)))
		}
	}
	return out, nil
}
