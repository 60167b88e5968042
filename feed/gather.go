package feed

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/internal/lib/kernelctx"
)

// gatherRows builds, in order, the n rows that ref names (a source and a
// row of it). The references that run through one source take one slice of
// it (consecutive rows) or one take, and the runs are concatenated: rows
// referenced in (source, row) order cost a copy at most once. image gives a
// source's rows as an array, a new reference gatherRows releases. n must
// not be 0.
func gatherRows(ctx context.Context, mem memory.Allocator, n int, ref func(i int) (src int, row int32),
	image func(src int) (arrow.Array, error)) (arrow.Array, error) {
	var parts []arrow.Array
	defer func() {
		for _, a := range parts {
			a.Release()
		}
	}()
	ctx = kernelctx.For(ctx, mem)
	for i := 0; i < n; {
		src, first := ref(i)
		j, last, consecutive := i+1, first, true
		for ; j < n; j++ {
			s, r := ref(j)
			if s != src {
				break
			}
			consecutive = consecutive && r == last+1
			last = r
		}
		img, err := image(src)
		if err != nil {
			return nil, err
		}
		var part arrow.Array
		if consecutive {
			part = array.NewSlice(img, int64(first), int64(last)+1) // consecutive rows
		} else {
			idx := array.NewInt32Builder(mem)
			for k := i; k < j; k++ {
				_, r := ref(k)
				idx.Append(r)
			}
			indices := idx.NewArray()
			idx.Release()
			part, err = compute.TakeArray(ctx, img, indices)
			indices.Release()
		}
		img.Release()
		if err != nil {
			return nil, fmt.Errorf("gather rows: %w", err)
		}
		parts = append(parts, part)
		i = j
	}
	if len(parts) == 1 {
		parts[0].Retain()
		return parts[0], nil
	}
	out, err := array.Concatenate(parts, mem)
	if err != nil {
		return nil, fmt.Errorf("concatenate gathered rows: %w", err)
	}
	return out, nil
}
