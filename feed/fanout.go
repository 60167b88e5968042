package feed

import (
	"context"
	"errors"
	"iter"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sluicefeed/sluice/lake"
)

// fanItem is a batch one read of readInOrder sent (with its side), or the
// error that ended that read.
type fanItem struct {
	side int
	rec  arrow.RecordBatch
	err  error
}

// readInOrder runs read(ctx, i, send) for i in [0, n), up to concurrency
// at once, each in a goroutine of its own (guarded: a panic ends the whole
// read with ErrInternal), and hands what they send to fn strictly in order
// of i, each read's batches in the order it sent them. A read running
// ahead of the one fn is taking holds at most two batches, so memory stays
// bounded however large the files. fn takes over each batch; on any error
// or stop, the reads are cancelled, waited for, and what they queued is
// released.
func readInOrder(ctx context.Context, n, concurrency int,
	read func(ctx context.Context, i int, send func(side int, rec arrow.RecordBatch) error) error,
	fn func(side int, rec arrow.RecordBatch) error) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	chans := make([]chan fanItem, n)
	started := 0
	defer func() {
		cancel()
		for _, ch := range chans[:started] {
			for it := range ch {
				if it.rec != nil {
					it.rec.Release()
				}
			}
		}
		wg.Wait()
	}()
	start := func(i int) {
		ch := make(chan fanItem, 2)
		chans[i] = ch
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(ch)
			send := func(it fanItem) error {
				select {
				case ch <- it:
					return nil
				case <-ctx.Done():
					if it.rec != nil {
						it.rec.Release()
					}
					return ctx.Err()
				}
			}
			err := guard(func() error {
				return read(ctx, i, func(side int, rec arrow.RecordBatch) error {
					return send(fanItem{side: side, rec: rec})
				})
			})
			if err != nil && ctx.Err() == nil {
				_ = send(fanItem{err: err})
			}
		}()
	}
	for i := range n {
		for started < n && started < i+max(1, concurrency) {
			start(started)
			started++
		}
		for it := range chans[i] {
			if it.err != nil {
				return it.err
			}
			if err := fn(it.side, it.rec); err != nil {
				return err
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// liveRows streams the rows of files, every one live, reading up to
// r.Concurrency files at once (readInOrder), and yields their batches in
// file order. The caller releases each batch.
func liveRows(ctx context.Context, r *lake.Read, commit int64, files lake.LiveFiles) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		err := readInOrder(ctx, files.Len(), r.Concurrency,
			func(ctx context.Context, i int, send func(side int, rec arrow.RecordBatch) error) error {
				return files.Read(ctx, r, commit, i, func(rec arrow.RecordBatch) error { return send(0, rec) })
			},
			func(_ int, rec arrow.RecordBatch) error {
				if !yield(rec, nil) {
					return errStop
				}
				return nil
			})
		if err != nil && !errors.Is(err, errStop) {
			yield(nil, err)
		}
	}
}
