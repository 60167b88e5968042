package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/testkit/testsvc"
)

// netExpected is the net change from the oracle's state at index from to
// its state at index to, every change attributed to snapshot to: what a
// coalesced window holds for tables without identity (the rows of one
// state and not the other).
func (o *s3Oracle) netExpected(from, to int) []s3Change {
	prev, cur := o.multiset(from), o.multiset(to)
	id := o.Snapshots[to].ID
	var out []s3Change
	for r, n := range prev {
		for range n - cur[r] {
			out = append(out, s3Change{snapshot: id, op: "delete", image: r})
		}
	}
	for r, n := range cur {
		for range n - prev[r] {
			out = append(out, s3Change{snapshot: id, op: "insert", image: r})
		}
	}
	return out
}

// TestProtectedConsumerAcrossExpiredCommits: a real flightd with
// --protect-consumers on a REST catalog. A protected consumer acknowledges
// snapshot 1 (its tag pins it), an unprotected one snapshot 0; then
// pyiceberg expires every snapshot but the head (what
// expire_snapshots(older_than=now, retain_last=1) leaves) and the orphan
// files are deleted. The protected consumer resumes exactly: one window
// marked coalesced_from its snapshot, whose changes applied to its state
// give the head's state as pyiceberg scans it; after its next ack it
// follows the next commit as usual. The unprotected consumer, whose
// snapshot expired, gets the resync event, then FAILED_PRECONDITION.
func TestProtectedConsumerAcrossExpiredCommits(t *testing.T) {
	python(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cat, table, o, c := protectedTable(t, ctx, "coalesce")
	snap := func(i int) int64 { return o.Snapshots[i].ID }
	last := len(o.Snapshots) - 1

	protected, plain := testsvc.UniqueName("kept"), testsvc.UniqueName("plain")
	if p, err := c.Ack(ctx, protected, table, snap(1), sluice.WithProtect()); err != nil || !p.Protected {
		t.Fatalf("ack with protect: %+v %v", p, err)
	}
	if _, err := c.Ack(ctx, plain, table, snap(0)); err != nil {
		t.Fatal(err)
	}

	// Every snapshot before the head expires but the tagged one, and the
	// files only expired snapshots reached are deleted.
	e := cat.expire(t, ctx, table, snap(last))
	retained := slices.Clone(e.Retained)
	slices.Sort(retained)
	want := []int64{snap(1), snap(last)}
	slices.Sort(want)
	if !slices.Equal(retained, want) || len(e.Removed) == 0 {
		t.Fatalf("expiry %+v: want only the tagged snapshot %d and the head %d retained, orphan files removed",
			e, snap(1), snap(last))
	}
	t.Logf("expired %d snapshots, removed %d orphan files", len(e.Expired), len(e.Removed))

	t.Run("the protected consumer resumes exactly", func(t *testing.T) {
		s := followS3(t, ctx, c, sluice.SubscribeRequest{Table: table, Consumer: protected, NoFollow: true}, o.Columns)
		var got []s3Change
		for done := false; !done; {
			var b subBatch
			select {
			case b = <-s.batches:
			case err := <-s.done:
				t.Fatalf("the stream ended before the head completed: %v", err)
			case <-ctx.Done():
				t.Fatal(ctx.Err())
			}
			if b.meta.Heartbeat {
				continue
			}
			if b.meta.Resync || !b.meta.Coalesced || b.meta.CoalescedFrom != snap(1) || b.meta.Snapshot != snap(last) {
				t.Fatalf("batch %+v: want the coalesced window from %d to %d", b.meta, snap(1), snap(last))
			}
			got = append(got, b.changes...)
			done = b.meta.SnapshotComplete
		}
		if d := sameChanges(got, o.netExpected(1, last)); d != "" {
			t.Fatalf("the coalesced window: %s", d)
		}
		// The consumer's copy: its state at snapshot 1 with the window
		// applied is pyiceberg's scan of the head.
		sink := o.multiset(1)
		for _, ch := range got {
			if ch.op == "delete" || ch.op == "update_before" {
				sink[ch.image]--
			} else {
				sink[ch.image]++
			}
		}
		for r, n := range o.multiset(last) {
			if sink[r] != n {
				t.Fatalf("the consumer's copy holds %s %d times, pyiceberg's scan of the head %d", r, sink[r], n)
			}
			delete(sink, r)
		}
		for r, n := range sink {
			if n != 0 {
				t.Fatalf("the consumer's copy holds %s %d times, pyiceberg's scan of the head none", r, n)
			}
		}
		if err := <-s.done; err != nil {
			t.Fatalf("the stream ended with %v", err)
		}

		// Acknowledged at the head, it follows the next commit as usual.
		if _, err := c.Ack(ctx, protected, table, snap(last), sluice.WithProtect()); err != nil {
			t.Fatal(err)
		}
		o2 := cat.write(t, ctx, "more", table, 4)
		n := len(o2.Snapshots) - 1
		f := followS3(t, ctx, c, sluice.SubscribeRequest{Table: table, Consumer: protected, NoFollow: true}, o.Columns)
		if d := sameChanges(f.until(t, o2.Snapshots[n].ID, time.Minute), o2.expected(n-1, n)); d != "" {
			t.Fatalf("the commit after the coalesced window: %s", d)
		}
	})

	t.Run("the unprotected consumer gets the resync event", func(t *testing.T) {
		s := followS3(t, ctx, c, sluice.SubscribeRequest{Table: table, Consumer: plain, NoFollow: true}, o.Columns)
		b := <-s.batches
		if !b.meta.Resync || b.meta.Coalesced || b.meta.Rows != 0 || b.meta.Snapshot != snap(0) {
			t.Fatalf("first batch %+v: want a 0-row resync of snapshot %d", b.meta, snap(0))
		}
		if err := <-s.done; sluice.Code(err) != codes.FailedPrecondition {
			t.Fatalf("after the resync event: %v, want FAILED_PRECONDITION", err)
		}
	})
}
