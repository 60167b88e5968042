package feed

import (
	"sync"
)

// budget is the memory the engine's reads may hold for the changes they
// must see whole before they emit any (carry-over cancellation and update
// pairing within a snapshot, net changes over a window). It is shared by
// every read of the engine: a read that cannot reserve more spills what it
// holds to disk, so the engine's memory stays bounded by configuration,
// whatever the windows' sizes and however many run at once.
type budget struct {
	limit int64
	// mu guards used.
	mu   sync.Mutex
	used int64
}

func newBudget(limit int64) *budget { return &budget{limit: limit} }

// reserve takes n bytes from the budget, or none when that would exceed it.
func (b *budget) reserve(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.limit {
		return false
	}
	b.used += n
	return true
}

// take takes n bytes whether or not the budget has them: memory a read
// cannot do without (one partition being processed).
func (b *budget) take(n int64) {
	b.mu.Lock()
	b.used += n
	b.mu.Unlock()
}

func (b *budget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// inUse returns the bytes reserved now.
func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// lease is one operation's share of the budget. It is not safe for
// concurrent use.
type lease struct {
	b    *budget
	held int64
}

func (b *budget) lease() *lease { return &lease{b: b} }

// grow reserves n more bytes; false when the budget has no room.
func (l *lease) grow(n int64) bool {
	if n <= 0 {
		return true
	}
	if !l.b.reserve(n) {
		return false
	}
	l.held += n
	return true
}

// force reserves n more bytes even past the budget.
func (l *lease) force(n int64) {
	if n > 0 {
		l.b.take(n)
		l.held += n
	}
}

// shrink returns n bytes.
func (l *lease) shrink(n int64) {
	n = min(n, l.held)
	l.b.release(n)
	l.held -= n
}

// free returns everything the lease holds.
func (l *lease) free() { l.shrink(l.held) }
