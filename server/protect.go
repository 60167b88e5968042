package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/lib/errclass"
	"github.com/sluicefeed/sluice/progress"
)

// ConsumerGuard keeps protected consumers' snapshots from the tables'
// expiry (flightd's --protect-consumers; *registry.Protector implements
// it). Protect pins the acknowledged snapshot of a consumer of the table's
// branch or tag ref (the zero Ref: the main branch), moving its pin, and
// returns how ("tag", "consumer-file", "lag-watch"); Release drops the pin
// (none is no error; a ref of unknown Kind, one dropped meanwhile, drops
// the pin of either kind); Retention returns how long a table whose
// versions nothing can pin (Delta) keeps its log and the files its commits
// removed, ok false for the others.
type ConsumerGuard interface {
	Protect(ctx context.Context, table, consumer string, ref feed.Ref, snapshot int64) (string, error)
	Release(ctx context.Context, table, consumer string, ref feed.Ref) error
	Retention(ctx context.Context, table string) (log, deletedFiles time.Duration, ok bool, err error)
}

// ErrNotProtecting reports an ack that asks for protection on a server
// that does not protect consumers.
var ErrNotProtecting = errclass.New(errclass.FailedPrecondition, "server: consumers are not protected")

// putProtected records a checkpoint of a consumer of ref (the checkpoint's
// Ref, resolved) with its protection: an ack that asks
// for it pins the snapshot first, once the caller is known to own the
// consumer (a failure records nothing, and the ack can be sent again); one
// that does not drops the pin the consumer's previous ack made.
func (s *Server) putProtected(ctx context.Context, store ProgressStore, cp progress.Checkpoint, ref feed.Ref) error {
	if cp.Protected {
		if s.guard == nil {
			return fmt.Errorf("%w: ack with protect: this server does not protect consumers' snapshots from "+
				"expiry (start flightd with --protect-consumers)", ErrNotProtecting)
		}
		// Only the consumer's owner moves its pin: claim it first (a no-op
		// for its owner, ErrNotOwner for another principal).
		if err := store.Claim(ctx, cp.Key(), cp.Owner); err != nil {
			return err
		}
		how, err := s.guard.Protect(ctx, cp.Table, cp.Consumer, ref, cp.Snapshot)
		if err != nil {
			return fmt.Errorf("protect %s at snapshot %d: %w", cp.Key(), cp.Snapshot, err)
		}
		s.log.DebugContext(ctx, "consumer protected", "table", clipName(cp.Table), "ref", clipName(cp.Ref),
			"consumer", cp.Consumer, "snapshot", cp.Snapshot, "by", how)
		return store.Put(ctx, cp) // the first ack claims the consumer
	}
	was, err := store.Get(ctx, cp.Key())
	if err != nil && !errors.Is(err, progress.ErrNotFound) {
		return err
	}
	if err := store.Put(ctx, cp); err != nil {
		return err
	}
	if was.Protected {
		return s.release(ctx, cp.Key(), ref)
	}
	return nil
}

// release drops the protection of the consumer k, whose ref is ref (Kind
// "" when not known), on a server that protects consumers.
func (s *Server) release(ctx context.Context, k progress.Key, ref feed.Ref) error {
	if s.guard == nil {
		return nil
	}
	if err := s.guard.Release(ctx, k.Table, k.Consumer, ref); err != nil {
		return fmt.Errorf("drop the protection of %s: %w", k, err)
	}
	return nil
}
