package kernelctx

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// For returns the context to run compute kernels under: ctx's values
// (compute's execution context among them), mem as the kernels'
// allocator, and no cancellation, so that a kernel is never cut short
// and never drops its output unreleased. The caller checks ctx between
// kernels.
func For(ctx context.Context, mem memory.Allocator) context.Context {
	return compute.WithAllocator(context.WithoutCancel(ctx), mem)
}
