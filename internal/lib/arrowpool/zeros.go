package arrowpool

import (
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// minZeros is the least the shared zero region grows to, so that the first
// small requests do not each grow it.
const minZeros = 64 << 10

// zeros is the shared zero region: never written, only replaced by a larger
// one (arrays over the old one keep it alive).
var zeros atomic.Pointer[[]byte]

// Zeros returns a read-only buffer of n zero bytes, shared by every caller
// and owned by no allocator: releasing it frees nothing, so it never goes
// back to a pool, and building it costs neither an allocation nor a clear
// once the region is large enough. It is for arrays whose values are all
// zero and never written (the children and the validity bitmap of an
// all-null image); nothing may write to it. Its capacity is n, so an
// append to its bytes copies them.
func Zeros(n int) *memory.Buffer {
	p := zeros.Load()
	if p == nil || len(*p) < n {
		size := minZeros
		for size < n {
			size *= 2
		}
		b := make([]byte, size)
		// Another goroutine may have grown it meanwhile: either region is
		// zero, and the larger one is kept for the next request.
		for {
			cur := zeros.Load()
			if cur != nil && len(*cur) >= size {
				break
			}
			if zeros.CompareAndSwap(cur, &b) {
				break
			}
		}
		p = &b
	}
	return memory.NewBufferBytes((*p)[:n:n])
}
