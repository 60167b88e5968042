package feed

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/compute"

	"github.com/sluicefeed/sluice/lake"
)

// StrategyCoalesced is the strategy of a stream's window whose commits
// expired between the snapshot the stream stands at and the current one,
// while that snapshot itself stayed readable (a protected consumer's tag
// keeps it): its changes are the net changes from the state at the one to
// the state at the other, attributed to the current snapshot.
const StrategyCoalesced = "coalesced"

// Coalesced describes the changes of a coalesced window (StrategyCoalesced)
// on the StreamChanges events that carry them.
type Coalesced struct {
	// From is the snapshot the stream stood at: its state is the start.
	From int64
	// To is the current snapshot: its state is the end, and the changes
	// are attributed to it.
	To int64
	// Reason says why the commits between them were coalesced.
	Reason string
}

// errNotCoalescible marks why a gap's changes cannot be coalesced: the
// stream then reports the gap (see streamer.gap).
var errNotCoalescible = errors.New("feed: the gap cannot be coalesced")

// coalescedPlan is the read of a coalesced window: the net plan of the
// current snapshot, whose one snapshot plan is the coalesced window, and
// the live files of the two states.
type coalescedPlan struct {
	p             *Plan
	from          Snapshot
	before, after lake.LiveFiles
	info          Coalesced
}

// planCoalesced plans the changes of a stream's table from the state at
// snapshot from, which is readable though the commits after it expired,
// to the state at snapshot to: the net changes of the two states, paired
// as net changes are (by identity columns, else whole rows as a
// multiset), filtered, projected and folded as the request says. It fails
// with errNotCoalescible when from is not readable, or the two states do
// not read in one schema.
func (e *Engine) planCoalesced(ctx context.Context, shape Request, tbl Table, from int64, to Snapshot) (*coalescedPlan, error) {
	if from == to.ID || !tbl.HasCommit(from) {
		return nil, fmt.Errorf("%w: snapshot %d is not retained", errNotCoalescible, from)
	}
	fromLineage := tbl.History(&from).Commits
	if n := len(fromLineage); n == 0 || fromLineage[n-1].ID != from {
		return nil, fmt.Errorf("%w: snapshot %d has no retained lineage", errNotCoalescible, from)
	}
	fromSnap := fromLineage[len(fromLineage)-1]
	// The empty window (to, to] with net changes resolves the columns, the
	// wide images, identity, filter and layout as a net window ending at
	// the current snapshot does.
	req := shape
	req.FromSnapshot, req.ToSnapshot, req.NetChanges = &to.ID, &to.ID, true
	p, _, err := e.resolve(ctx, req)
	if err != nil {
		return nil, err
	}
	if p.routed {
		return nil, fmt.Errorf("%w: table %s is served through its window backend", errNotCoalescible, p.Table)
	}
	fromSchema, err := tbl.Schema(ctx, &fromSnap)
	if err != nil {
		return nil, err
	}
	got, err := changeSchema(fromSchema, p.wideNames())
	if err == nil && p.Lineage {
		got = withRowID(got)
	}
	if err != nil || !imagesMatch(got, p.wide) {
		return nil, fmt.Errorf("%w: the schema of snapshot %d does not read as the current one's", errNotCoalescible,
			from)
	}
	pairing := PairingNone
	if len(p.Identity) > 0 {
		pairing = PairingIdentity
	}
	info := Coalesced{From: from, To: to.ID, Reason: fmt.Sprintf("the commits between snapshot %d and snapshot %d "+
		"are gone (they expired, or the history was rewritten) while snapshot %d stayed readable: their changes "+
		"are coalesced into the net changes from its state to the state at snapshot %d", from, to.ID, from, to.ID)}
	p.From = &info.From
	p.Pairing = pairing
	p.Snapshots = []SnapshotPlan{{Snapshot: to, Strategy: StrategyCoalesced, Reason: info.Reason, Pairing: pairing}}
	opts := lake.StateOptions{Table: p.Table, Columns: p.scanFields, Concurrency: e.opts.ReadConcurrency}
	cp := &coalescedPlan{p: p, from: fromSnap, info: info}
	if cp.before, err = tbl.State(ctx, opts, fromSnap); err != nil {
		return nil, err
	}
	if cp.after, err = tbl.State(ctx, opts, to); err != nil {
		return nil, err
	}
	for _, fs := range []lake.LiveFiles{cp.before, cp.after} {
		files, bytes, records := fs.Size()
		p.FilesRead, p.BytesRead, p.RecordsRead = p.FilesRead+files, p.BytesRead+bytes, p.RecordsRead+records
	}
	sp := &p.Snapshots[0]
	sp.BytesRead, sp.RecordsRead = p.BytesRead, p.RecordsRead
	return cp, nil
}

// imagesMatch reports whether two change schemas have the same images.
func imagesMatch(a, b *arrow.Schema) bool {
	return arrow.TypeEqual(imageType(a), imageType(b))
}

// readCoalesced streams the changes of a coalesced window: every live row
// of the start state as removed and every live row of the end state as
// added, netted (see readNet) into the window's one snapshot. Rows in both
// states cancel; the rest pair by identity columns, or are deletes and
// inserts. Memory is bounded by the engine's budget: the net spills.
func (e *Engine) readCoalesced(ctx context.Context, cp *coalescedPlan) iter.Seq2[Batch, error] {
	p := cp.p
	return e.tracked(e.flattened(ctx, p, func(yield func(Batch, error) bool) {
		e.readNet(ctx, p, e.stateChanges(ctx, cp), yield)
	}))
}

// stateChanges yields the rows of the two states of a coalesced window as
// change batches of its snapshot, in the plan's wide schema: the start
// state's as deletes, then the end state's as inserts.
func (e *Engine) stateChanges(ctx context.Context, cp *coalescedPlan) iter.Seq2[Batch, error] {
	return func(yield func(Batch, error) bool) {
		p := cp.p
		ctx := compute.WithAllocator(ctx, e.opts.Allocator)
		asm := newAssembler(e.opts.Allocator, p.wide, e.opts.MaxBatchRows, e.opts.MaxBatchBytes)
		defer asm.release()
		src := e.newRead(ctx, p)
		defer src.Close()
		snap := p.Snapshots[0].Snapshot
		sides := []struct {
			commit Snapshot
			files  lake.LiveFiles
			op     string
		}{{cp.from, cp.before, OpDelete}, {snap, cp.after, OpInsert}}
		for _, side := range sides {
			if side.files.Len() == 0 {
				continue
			}
			for rec, err := range liveRows(ctx, src, side.commit.ID, side.files) {
				if err != nil {
					yield(Batch{}, err)
					return
				}
				out, err := asm.rows(side.op, rec, snap)
				rec.Release()
				if err != nil {
					yield(Batch{}, err)
					return
				}
				for i, r := range out {
					if !yield(Batch{Record: r, Snapshot: snap}, nil) {
						for _, rest := range out[i+1:] {
							rest.Release()
						}
						return
					}
				}
			}
		}
	}
}

// coalesce streams the coalesced window from the snapshot lost to the
// current snapshot of the stream's history, when lost is still readable
// though the commits after it expired; ok is false (with a nil error) when
// it is not, and the stream reports the gap instead.
func (s *streamer) coalesce(ctx context.Context, lost *int64, hist History) (ok bool, err error) {
	n := len(hist.Snapshots)
	if lost == nil || n == 0 {
		return false, nil
	}
	cur := hist.Snapshots[n-1]
	// On a ref, the view reads the ref's lineage, whose head is the
	// current snapshot; the lost one need only be readable (a branch
	// consumer's tag sluice-consumer-<id>#<ref> keeps it).
	cp, err := s.e.planCoalesced(s.pin(ctx), s.shape(), s.view, *lost, cur)
	if errors.Is(err, errNotCoalescible) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if s.how == "" {
		s.how = "consumer progress, coalesced across expired commits"
	}
	if err := s.started(ctx, cp.p.Schema()); err != nil {
		return false, err
	}
	at := s.at
	if at.ID != *lost {
		at = cp.from
	}
	s.cursor, s.at = lost, at
	info := cp.info
	for b, err := range s.e.readCoalesced(ctx, cp) {
		if err != nil {
			return false, err
		}
		cursor := s.at
		if b.SnapshotComplete {
			cursor = b.Snapshot
		}
		if err := s.emit(ctx, StreamEvent{Kind: StreamChanges, Batch: b, Cursor: cursor, Coalesced: &info}); err != nil {
			return false, err
		}
	}
	s.advance(cur)
	return true, nil
}
