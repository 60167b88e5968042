package feed

import (
	"fmt"
	"iter"
)

// tracked counts a read as running from its first step to its last: its
// sequence is running while the caller ranges over it, and ends when the
// caller stops or the sequence ends.
func (e *Engine) tracked(seq iter.Seq2[Batch, error]) iter.Seq2[Batch, error] {
	return func(yield func(Batch, error) bool) {
		e.reads.Add(1)
		defer e.reads.Add(-1)
		seq(yield)
	}
}

// Close reports reads still running: a sequence of Read or ReadState that
// a caller still ranges over, or whose goroutine has not returned (a leak
// in the caller: each must be ranged to its end or broken out of). It
// frees nothing: an Engine holds no resource beyond its reads, and may be
// used again. Tests call it at their end; the daemon at shutdown, after
// its reads have drained.
func (e *Engine) Close() error {
	if n := e.reads.Load(); n != 0 {
		return fmt.Errorf("%w: %d reads still running", ErrLeakedReads, n)
	}
	if n := e.budget.inUse(); n != 0 {
		return fmt.Errorf("%w: %d bytes of the memory budget still held", ErrLeakedReads, n)
	}
	return nil
}
