// Package kernelctx gives Arrow compute kernels the context they run
// under: the caller's values and allocator, without its cancellation.
//
// arrow-go (v18) leaks when a nested kernel's context is cancelled while
// it runs: a take of a struct array takes each child under the caller's
// context, and when one child's take fails with the cancellation, the
// struct kernel returns the error and the executor drops the output it had
// allocated (the struct's validity bitmap and the children already taken)
// without releasing it. A read abandoned mid-window cancels its context
// while its read-ahead goroutines are taking, and so left a few hundred
// bytes of the engine's allocator unreleased. Kernels over arrays already
// in memory are bounded work: running them to their end, and checking the
// caller's context between them, costs at most one batch's kernel.
package kernelctx
