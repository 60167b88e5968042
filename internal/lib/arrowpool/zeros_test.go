package arrowpool

import (
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Zeros gives n zero bytes of capacity n, growing the shared region when
// asked for more than it holds, and its buffers are owned by no allocator:
// an array over them released for the last time frees nothing.
func TestZeros(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, n := range []int{0, 1, 100, minZeros, minZeros + 1, 3 << 20} {
				b := Zeros(n + g)
				if b.Len() != n+g || cap(b.Bytes()) != n+g {
					t.Errorf("Zeros(%d): len %d cap %d", n+g, b.Len(), cap(b.Bytes()))
					return
				}
				for i, v := range b.Bytes() {
					if v != 0 {
						t.Errorf("Zeros(%d): byte %d is %#x", n+g, i, v)
						return
					}
				}
				b.Release()
			}
		}()
	}
	wg.Wait()

	// An array over it, sliced and released for the last time, leaves the
	// buffer as it was: an allocator's buffer would be freed and emptied.
	n := 5000
	buf := Zeros(n * 8)
	data := array.NewData(arrow.PrimitiveTypes.Int64, n, []*memory.Buffer{nil, buf}, nil, 0, 0)
	arr := array.NewInt64Data(data)
	data.Release()
	sl := array.NewSlice(arr, 10, 20)
	arr.Release()
	if v := sl.(*array.Int64).Value(3); v != 0 {
		t.Fatalf("value %d", v)
	}
	sl.Release()
	buf.Release()
	if buf.Len() != n*8 || buf.Bytes() == nil {
		t.Fatalf("released for the last time, the shared buffer holds %d bytes", buf.Len())
	}
}
