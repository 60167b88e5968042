package paimon

import (
	"errors"
	"math/big"
	"testing"
	"time"
)

func TestKeyRangeOverlaps(t *testing.T) {
	r := func(lo, hi []any) keyRange { return keyRange{lo: lo, hi: hi} }
	day := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		a, b keyRange
		want bool
	}{
		{r([]any{int32(1)}, []any{int32(5)}), r([]any{int32(5)}, []any{int32(9)}), true},
		{r([]any{int32(1)}, []any{int32(4)}), r([]any{int32(5)}, []any{int32(9)}), false},
		{r([]any{int64(-3)}, []any{int64(3)}), r([]any{int64(0)}, []any{int64(0)}), true},
		// Strings by bytes: "Z" < "a" < "é".
		{r([]any{"a"}, []any{"b"}), r([]any{"Z"}, []any{"Z"}), false},
		{r([]any{"a"}, []any{"é"}), r([]any{"c"}, []any{"d"}), true},
		// Two-column keys order by the first column, then the second.
		{r([]any{int32(1), "b"}, []any{int32(1), "d"}), r([]any{int32(1), "e"}, []any{int32(2), "a"}), false},
		{r([]any{int32(1), "b"}, []any{int32(2), "a"}), r([]any{int32(1), "e"}, []any{int32(1), "f"}), true},
		{r([]any{big.NewRat(1, 10)}, []any{big.NewRat(2, 10)}), r([]any{big.NewRat(3, 10)}, []any{big.NewRat(4, 10)}), false},
		{r([]any{day}, []any{day.Add(time.Hour)}), r([]any{day.Add(time.Minute)}, []any{day.Add(time.Minute)}), true},
	} {
		got, err := c.a.overlaps(c.b)
		if err != nil || got != c.want {
			t.Errorf("%v overlaps %v = %v, %v; want %v", c.a, c.b, got, err, c.want)
		}
		if back, _ := c.b.overlaps(c.a); back != got {
			t.Errorf("overlaps is not symmetric for %v and %v", c.a, c.b)
		}
	}
	if _, err := r([]any{int32(1)}, []any{int32(2)}).overlaps(r([]any{"a"}, []any{"b"})); !errors.Is(err, ErrUnsupported) {
		t.Errorf("keys of two types: %v, want ErrUnsupported", err)
	}
}
