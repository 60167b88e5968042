package arrowpool

import (
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"

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
	// buffer is at most 1/subClasses larger than asked for (Go's own
	// allocator rounds a large buffer up to 8 KiB pages).
	subClassBits = 3
	subClasses   = 1 << subClassBits
	// DefaultLimit is the most memory a pool holds in freed buffers, unless
	// SetLimit says otherwise.
	DefaultLimit = 32 << 20
)

// numClasses covers the sizes from minClass to maxPooled.
var numClasses = classOf(maxPooled) + 1

// Allocator reuses freed buffers of the sizes it pools (4 KiB to 64 MiB,
// in eight size classes per power of two). Smaller and larger requests go
// to arrow-go's Go allocator. Memory it returns is zeroed, as the Go
// allocator's is. Safe for concurrent use.
//
// The freed buffers it holds are bounded twice: they come to at most its
// limit (DefaultLimit, or SetLimit's), past which a freed buffer goes to
// the garbage collector; and each collection drops those that stayed
// unused since the one before (as a sync.Pool does), so that a burst of
// one size does not hold memory after it. What it holds is live memory to
// the collector: a process with a soft memory limit has that much less for
// the rest.
//
// A buffer must not be used once it is freed (an arrow.Array released for
// the last time): the pool gives it to the next request. With the Go
// allocator such a use reads what was there; here it reads another batch's
// data. Tests can Poison freed buffers to make such a use show.
type Allocator struct {
	classes  []freeList
	held     atomic.Int64
	limit    atomic.Int64
	fallback *memory.GoAllocator
	poison   bool
	// min is the smallest request pooled: minPooled, or 1 when poisoned.
	min int
}

// freeList holds the freed buffers of one size class, the last freed on
// top.
type freeList struct {
	mu   sync.Mutex
	bufs [][]byte
	// low is the fewest buffers the list held since the last collection:
	// the ones below it stayed unused.
	low int
}

// New returns an empty pool.
func New() *Allocator {
	a := &Allocator{classes: make([]freeList, numClasses), fallback: memory.NewGoAllocator(), min: minPooled}
	a.limit.Store(DefaultLimit)
	armTrim(weak.Make(a))
	return a
}

// trimSentinel is an object made only to be collected: its cleanup trims
// the pool at each collection. It holds a pointer, so that the runtime
// does not pack it beside other small objects (which would delay it).
type trimSentinel struct {
	_ *byte
	_ [2]uintptr
}

// armTrim trims the pool at the next collection, and after it at the
// next, as long as the pool is reachable.
func armTrim(w weak.Pointer[Allocator]) {
	runtime.AddCleanup(new(trimSentinel), func(w weak.Pointer[Allocator]) {
		if a := w.Value(); a != nil {
			a.trim()
			armTrim(w)
		}
	}, w)
}

// trim drops the buffers that stayed unused since the last trim.
func (a *Allocator) trim() {
	for c := range a.classes {
		l := &a.classes[c]
		l.mu.Lock()
		drop := l.low
		if drop > 0 {
			clear(l.bufs[:drop])
			l.bufs = append(l.bufs[:0], l.bufs[drop:]...)
			clear(l.bufs[len(l.bufs):cap(l.bufs)])
			a.held.Add(-int64(drop * classSize(c)))
		}
		l.low = len(l.bufs)
		l.mu.Unlock()
	}
}

var shared = New()

// Shared returns the process's pool: flightd's engine and server allocate
// from it, so that the buffers of a batch decoded by one serve the next
// whichever encodes it.
func Shared() *Allocator { return shared }

// SetLimit sets the most memory the pool holds in freed buffers (0: none,
// so every buffer goes back to the collector).
func (a *Allocator) SetLimit(bytes int64) { a.limit.Store(max(bytes, 0)) }

// Held returns the memory the pool holds in freed buffers.
func (a *Allocator) Held() int64 { return a.held.Load() }

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
	if b := a.take(c); b != nil {
		b = b[:size:size]
		clear(b)
		return b
	}
	return a.fresh(classSize(c))[:size:size]
}

// take returns a freed buffer of class c, or nil.
func (a *Allocator) take(c int) []byte {
	l := &a.classes[c]
	l.mu.Lock()
	n := len(l.bufs)
	if n == 0 {
		l.mu.Unlock()
		return nil
	}
	b := l.bufs[n-1]
	l.bufs[n-1] = nil
	l.bufs = l.bufs[:n-1]
	l.low = min(l.low, n-1)
	l.mu.Unlock()
	a.held.Add(-int64(cap(b)))
	return b
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
	if a.held.Add(int64(n)) > a.limit.Load() {
		a.held.Add(-int64(n))
		return
	}
	if a.poison {
		b[0] = 0xA5
		for i := 1; i < n; i *= 2 {
			copy(b[i:], b[:i])
		}
	}
	l := &a.classes[c]
	l.mu.Lock()
	l.bufs = append(l.bufs, b)
	l.mu.Unlock()
}

var _ memory.Allocator = (*Allocator)(nil)
