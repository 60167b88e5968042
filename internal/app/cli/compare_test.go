package cli

import (
	"strings"
	"testing"
)

// TestWriteDifferences: the rows both reads have, in order, are not
// printed; the others are, - for Spark's side and + for the native one,
// in the order they came; a large window is compared as multisets.
func TestWriteDifferences(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b []string
		want string
		n    int
	}{
		{"same", []string{"x", "y"}, []string{"x", "y"}, "", 0},
		{"both empty", nil, nil, "", 0},
		{"one missing", []string{"x", "y", "z"}, []string{"x", "z"}, "- y\n", 1},
		{"one extra, one changed", []string{"x", "y"}, []string{"x", "Y", "z"}, "- y\n+ Y\n+ z\n", 3},
		{"swapped", []string{"x", "y"}, []string{"y", "x"}, "- x\n+ x\n", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			n := writeDifferences(&out, tc.a, tc.b)
			if n != tc.n || out.String() != tc.want {
				t.Fatalf("%d differ, printed %q; want %d, %q", n, out.String(), tc.n, tc.want)
			}
		})
	}
	big := make([]string, 3000)
	for i := range big {
		big[i] = strings.Repeat("r", i%7) + string(rune('a'+i%26))
	}
	other := append([]string{"new"}, big[1:]...)
	var out strings.Builder
	if n := writeDifferences(&out, big, other); n != 2 || !strings.Contains(out.String(), "+ new") {
		t.Fatalf("large: %d, %q", n, out.String())
	}
	swapped := append([]string{big[1], big[0]}, big[2:]...)
	out.Reset()
	if n := writeDifferences(&out, big, swapped); n != 2 || !strings.Contains(out.String(), "another order") {
		t.Fatalf("large, reordered: %d, %q", n, out.String())
	}
}
