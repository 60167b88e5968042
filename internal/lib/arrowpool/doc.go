// Package arrowpool is an Arrow memory.Allocator that reuses the buffers
// freed to it.
//
// arrow-go's Go allocator makes every buffer anew and leaves freed ones to
// the garbage collector. Decoding a Parquet file makes a few large buffers
// per column per batch, so a feed allocates its whole decoded volume again
// and again: a profile of flightd serving a full-width read shows about a
// tenth of its CPU in clearing fresh memory (mostly page faults on memory
// the runtime just got back from the OS) and more in the collector that
// frees it. The buffers of one batch are released once it is encoded, so
// the next batch can take them over.
//
// The price is a rule for everything that allocates from the pool: nothing
// may point into an array's buffers once the array is released for the
// last time. arrow-go's String.Value and Binary.Value return a string or a
// slice over the array's bytes, not a copy; with the Go allocator a kept
// value keeps its bytes alive, with the pool the bytes go to the next
// batch. Code that keeps such a value past its batch (a map key, a
// statistic, a parsed action) copies it first (strings.Clone). Tests of the
// packages that allocate from the pool Poison it, so that a use after the
// last release reads garbage the oracles see.
package arrowpool
