package arrowpool

import (
	"math/bits"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

const (
	// alignment is that of every buffer, as arrow-go's Go allocator gives.
	alignment = 64
	// minPooled is the smallest request served from the pool: smaller
	// ones cost the runtime little and would only fill the pool.
	minPooled = 4 << 10
	// minClass is the smallest size class: Poison pools requests down to
	// it, so that tests of small batches exercise the pool.
	minClass = 64
	// maxPooled is the largest: a larger buffer is rare and goes to the
	// runtime and back.
	maxPooled = 64 << 20
	// subClasses is the number of size classes per power of two: a
	// buffer is at most 1/subClasses larger than asked for.
	subClassBits = 2
	subClasses   = 1 << subClassBits
)

// numClasses covers the sizes from minClass to maxPooled.
var numClasses = classOf(maxPooled) + 1

// Allocator reuses freed buffers of the sizes it pools (4 KiB to 64 MiB,
// in four size classes per power of two), holding them in sync.Pools, which
// the garbage collector empties when they stay unused. Smaller and larger
// requests go to arrow-go's Go allocator. Memory it returns is zeroed, as
// the Go allocator's is. Safe for concurrent use.
//
// A buffer must not be used once it is freed (an arrow.Array released for
// the last time): the pool gives it to the next request. With the Go
// allocator such a use reads what was there; here it reads another batch's
// data. Tests can Poison freed buffers to make such a use show.
type Allocator struct {
	pools    []sync.Pool
	fallback *memory.GoAllocator
	poison   bool
	// min is the smallest request pooled: minPooled, or 1 when poisoned.
	min int
}

// New returns an empty pool.
func New() *Allocator {
	return &Allocator{pools: make([]sync.Pool, numClasses), fallback: memory.NewGoAllocator(), min: minPooled}
}

var shared = New()

// Shared returns the process's pool: flightd's engine and server allocate
// from it, so that the buffers of a batch decoded by one serve the next
// whichever encodes it.
func Shared() *Allocator { return shared }

// Poison makes Free fill each pooled buffer with 0xA5 bytes before it goes
// back to the pool, so that a use after free reads garbage, and pools every
// request however small. Tests of the packages that allocate from the pool
// call it on the shared pool before they run. Not safe to call once the
// pool is in use.
func (a *Allocator) Poison() { a.poison, a.min = true, 1 }

// classOf returns the size class of a request of size bytes (at most
// maxPooled): the smallest class whose size is at least size.
func classOf(size int) int {
	// Classes: for each power of two p from minClass, the sizes
	// p·(1 + k/subClasses) for k = 0..subClasses-1.
	n := uint(size - 1)
	exp := bits.Len(n) - 1 // the highest set bit of size-1
	if exp < subClassBits {
		return 0
	}
	sub := int(n>>(uint(exp)-subClassBits)) & (subClasses - 1)
	base := bits.Len(minClass-1) - 1
	c := (exp-base)*subClasses + sub + 1 - subClasses
	return max(c, 0)
}

// classSize returns the size of class c.
func classSize(c int) int {
	base := bits.Len(minClass-1) - 1
	c += subClasses - 1
	exp, sub := base+c/subClasses, c%subClasses
	return (1 << exp) + (sub+1)<<(exp-subClassBits)
}

// Allocate returns a zeroed, 64-byte aligned buffer of size bytes.
func (a *Allocator) Allocate(size int) []byte {
	if size < a.min || size > maxPooled {
		return a.fallback.Allocate(size)
	}
	// The buffer's capacity is its size, as the Go allocator's is: arrow-go
	// grows a buffer in place when its capacity allows and takes the
	// bytes it grows over to be zero, which a reused buffer's are not.
	c := classOf(size)
	if p, ok := a.pools[c].Get().(*[]byte); ok {
		b := (*p)[:size:size]
		clear(b)
		return b
	}
	return a.fresh(classSize(c))[:size:size]
}

// fresh makes a buffer of exactly n bytes of capacity (a class size),
// aligned.
func (a *Allocator) fresh(n int) []byte {
	buf := make([]byte, n+alignment)
	shift := 0
	if r := int(uintptr(unsafe.Pointer(unsafe.SliceData(buf)))) % alignment; r != 0 {
		shift = alignment - r
	}
	return buf[shift : shift+n : shift+n]
}

// Reallocate returns a buffer of size bytes holding b's bytes: b itself
// when its capacity allows (the bytes beyond its length then are what they
// were), else a new one. The old one is left to the garbage collector, as
// arrow-go's Go allocator leaves it, not pooled: arrow-go's Parquet
// decoders may still read it (a value slice taken before the buffer grew).
func (a *Allocator) Reallocate(size int, b []byte) []byte {
	if cap(b) >= size {
		return b[:size]
	}
	nb := a.Allocate(size)
	copy(nb, b)
	return nb
}

// Free takes back a buffer Allocate or Reallocate returned (arrow-go frees
// a buffer with the allocator that made it); its class is that of its
// capacity, the size it was allocated with.
func (a *Allocator) Free(b []byte) {
	n := cap(b)
	if n < a.min || n > maxPooled || uintptr(unsafe.Pointer(unsafe.SliceData(b)))%alignment != 0 {
		return
	}
	c := classOf(n)
	n = classSize(c)
	b = unsafe.Slice(unsafe.SliceData(b), n)
	if a.poison {
		b[0] = 0xA5
		for i := 1; i < n; i *= 2 {
			copy(b[i:], b[:i])
		}
	}
	a.pools[c].Put(&b)
}

var _ memory.Allocator = (*Allocator)(nil)
