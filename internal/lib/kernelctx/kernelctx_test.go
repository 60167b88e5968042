package kernelctx_test

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/internal/lib/kernelctx"
)

// structs builds a struct array of n rows (an int and a string child) and
// indices that reverse it.
func structs(mem memory.Allocator, n int) (arrow.Array, arrow.Array) {
	st := arrow.StructOf(arrow.Field{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true})
	b := array.NewStructBuilder(mem, st)
	defer b.Release()
	idx := array.NewInt32Builder(mem)
	defer idx.Release()
	for i := range n {
		b.Append(true)
		b.FieldBuilder(0).(*array.Int64Builder).Append(int64(i))
		b.FieldBuilder(1).(*array.StringBuilder).Append("row")
		idx.Append(int32(n - 1 - i))
	}
	return b.NewArray(), idx.NewArray()
}

// TestCancelledTakeLeaks pins the arrow-go behaviour this package works
// around: a struct take under a cancelled context fails and leaves its
// output's buffers allocated. If it stops failing this way (arrow-go fixed
// the leak), the workaround may go.
func TestCancelledTakeLeaks(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	vals, idx := structs(mem, 8)
	ctx, cancel := context.WithCancel(compute.WithAllocator(context.Background(), mem))
	cancel()
	out, err := compute.TakeArray(ctx, vals, idx)
	if err == nil {
		out.Release()
		t.Skip("a struct take under a cancelled context succeeded: arrow-go no longer fails it")
	}
	vals.Release()
	idx.Release()
	if mem.CurrentAlloc() == 0 {
		t.Skip("a failed struct take released its output: arrow-go no longer leaks it")
	}
	t.Logf("a struct take under a cancelled context failed (%v) and left %d bytes allocated", err, mem.CurrentAlloc())
}

// TestForRunsKernelsToTheirEnd: under For, a struct take whose caller's
// context is cancelled completes, keeps the caller's allocator, and
// releases everything once its result is released.
func TestForRunsKernelsToTheirEnd(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	vals, idx := structs(mem, 8)
	defer vals.Release()
	defer idx.Release()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	before := mem.CurrentAlloc()
	out, err := compute.TakeArray(kernelctx.For(ctx, mem), vals, idx)
	if err != nil {
		t.Fatalf("take under For of a cancelled context: %v", err)
	}
	defer out.Release()
	if mem.CurrentAlloc() == before {
		t.Error("the take did not allocate from the allocator For was given")
	}
	if got := out.(*array.Struct).Field(0).(*array.Int64).Value(0); got != 7 {
		t.Errorf("first taken row %d, want 7", got)
	}
	if ctx.Err() == nil || kernelctx.For(ctx, mem).Err() != nil {
		t.Error("For must drop the cancellation and only it")
	}
}
