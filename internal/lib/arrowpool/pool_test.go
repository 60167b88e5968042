package arrowpool

import (
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Every pooled size maps to the smallest class that holds it, and the
// classes are at most a quarter larger than the sizes they serve.
func TestClasses(t *testing.T) {
	prev := 0
	for c := range numClasses {
		n := classSize(c)
		if n <= prev || classOf(n) != c || (prev > 0 && classOf(prev+1) != c) {
			t.Fatalf("class %d: size %d after %d, classOf(size) %d, classOf(prev+1) %d", c, n, prev, classOf(n), classOf(prev+1))
		}
		if prev > 0 && float64(n)/float64(prev+1) > 1.25 {
			t.Fatalf("class %d: %d bytes for a request of %d", c, n, prev+1)
		}
		prev = n
	}
	if classSize(0) != minClass || classSize(numClasses-1) != maxPooled {
		t.Fatalf("classes span %d to %d", classSize(0), classSize(numClasses-1))
	}
}

// A buffer is zeroed and aligned whether new or reused, a freed buffer is
// given to the next request of its class, and buffers of other sizes and
// owners are left alone.
func TestReuse(t *testing.T) {
	a := New()
	a.Poison()
	for _, size := range []int{1, 100, minPooled - 1, minPooled, 5000, 100 << 10, maxPooled, maxPooled + 1} {
		for round := range 3 {
			b := a.Allocate(size)
			if len(b) != size || cap(b) != size || uintptr(unsafe.Pointer(unsafe.SliceData(b)))%alignment != 0 {
				t.Fatalf("size %d round %d: len %d at %p", size, round, len(b), unsafe.SliceData(b))
			}
			for i, v := range b[:cap(b)] {
				if v != 0 {
					t.Fatalf("size %d round %d: byte %d is %#x", size, round, i, v)
				}
			}
			for i := range b {
				b[i] = byte(i + 1)
			}
			a.Free(b)
		}
	}
	b := a.Allocate(100 << 10)
	p := unsafe.SliceData(b)
	a.Free(b)
	if c := a.Allocate(100<<10 - 7); unsafe.SliceData(c) != p {
		t.Fatalf("the freed buffer was not reused")
	}
	a.Free(make([]byte, 8<<10))   // not aligned to a class: dropped
	a.Free(make([]byte, 1, 5000)) // no class size
	grown := a.Reallocate(200<<10, a.Allocate(10<<10))
	if len(grown) != 200<<10 {
		t.Fatalf("reallocated to %d bytes", len(grown))
	}
}

// A buffer grown in place shows zeros past its old length, as arrow-go's
// builders and Parquet decoders expect: a reused buffer's capacity is what
// was asked for, so that growing it takes a fresh, zeroed one, never the
// dirty rest of its class (which once made a 10M-row copy-on-write window
// hold 1,004 changes instead of 1,000).
func TestGrowZeroes(t *testing.T) {
	a := New()
	dirty := a.Allocate(5120)
	for i := range dirty {
		dirty[i] = 0xFF
	}
	a.Free(dirty)
	for range 100 { // the pool may drop the buffer; try until it is reused
		b := a.Allocate(4500)
		reused := unsafe.SliceData(b) == unsafe.SliceData(dirty)
		g := a.Reallocate(5100, b)
		for i, v := range g {
			if v != 0 {
				t.Fatalf("byte %d of the grown buffer is %#x (reused: %v)", i, v, reused)
			}
		}
		if reused {
			return
		}
		dirty = a.Allocate(5120)
		for i := range dirty {
			dirty[i] = 0xFF
		}
		a.Free(dirty)
	}
}

// Arrow arrays built, released and built again from the pool hold their
// own values, with the checked allocator seeing every buffer freed.
func TestArrays(t *testing.T) {
	pool := New()
	pool.Poison()
	mem := memory.NewCheckedAllocator(pool)
	defer mem.AssertSize(t, 0)
	for round := range 4 {
		bld := array.NewStringBuilder(mem)
		ib := array.NewInt64Builder(mem)
		for i := range 20000 {
			if i%7 == round {
				bld.AppendNull()
			} else {
				bld.Append(string(rune('a' + (i+round)%26)))
			}
			ib.Append(int64(i * round))
		}
		s, n := bld.NewStringArray(), ib.NewInt64Array()
		bld.Release()
		ib.Release()
		for i := range 20000 {
			if s.IsNull(i) != (i%7 == round) || (!s.IsNull(i) && s.Value(i) != string(rune('a'+(i+round)%26))) ||
				n.Value(i) != int64(i*round) {
				t.Fatalf("round %d row %d: %q %d", round, i, s.Value(i), n.Value(i))
			}
		}
		s.Release()
		n.Release()
	}
}

// A poisoned pool makes a string kept past its array's last release read
// garbage: what the engine's kept values must be copied against
// (strings.Clone), and what the poisoned test runs of the feed and the
// server would show.
func TestPoisonShowsKeptString(t *testing.T) {
	pool := New()
	pool.Poison()
	b := array.NewStringBuilder(pool)
	b.Append("data/file-0001.parquet")
	arr := b.NewStringArray()
	b.Release()
	kept, copied := arr.Value(0), strings.Clone(arr.Value(0))
	arr.Release()
	if copied != "data/file-0001.parquet" {
		t.Fatalf("the copy reads %q", copied)
	}
	if kept == copied {
		t.Fatalf("a string over a freed, poisoned buffer still reads %q", kept)
	}
}

// The pool holds at most its limit in freed buffers; past it a freed
// buffer goes to the collector, and a limit of 0 pools nothing.
func TestLimit(t *testing.T) {
	a := New()
	a.SetLimit(1 << 20)
	var bufs [][]byte
	for range 40 {
		bufs = append(bufs, a.Allocate(100<<10))
	}
	for _, b := range bufs {
		a.Free(b)
	}
	size := int64(classSize(classOf(100 << 10)))
	if got, want := a.Held(), (1<<20)/size*size; got != want {
		t.Fatalf("holds %d bytes after 40 frees of %d; want %d (the limit's worth)", got, size, want)
	}
	for range 40 {
		a.Allocate(100 << 10)
	}
	if a.Held() != 0 {
		t.Fatalf("holds %d bytes after taking all back", a.Held())
	}
	a.SetLimit(0)
	a.Free(a.Allocate(100 << 10))
	if a.Held() != 0 {
		t.Fatalf("a pool limited to 0 holds %d bytes", a.Held())
	}
}

// Each collection drops the freed buffers that stayed unused since the
// one before; buffers taken and freed again in between are kept.
func TestTrimAtCollection(t *testing.T) {
	a := New()
	idle := a.Allocate(1 << 20)
	busy := a.Allocate(64 << 10)
	a.Free(idle)
	a.Free(busy)
	waitHeld := func(want int64) {
		t.Helper()
		for range 50 {
			runtime.GC()
			if a.Held() == want {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("holds %d bytes after collections; want %d", a.Held(), want)
	}
	busySize := int64(classSize(classOf(64 << 10)))
	// The busy buffer is taken and freed between collections; the idle one
	// is not, so it goes.
	for range 50 {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
		a.Free(a.Allocate(64 << 10))
		if a.Held() == busySize {
			break
		}
	}
	if a.Held() != busySize {
		t.Fatalf("holds %d bytes; want only the busy buffer's %d", a.Held(), busySize)
	}
	waitHeld(0)
}
