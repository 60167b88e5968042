package server_test

import (
	"context"
	"testing"

	"github.com/apache/iceberg-go/table"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sluicev1 "github.com/sluicefeed/sluice/gen/sluice/v1"
	"github.com/sluicefeed/sluice/server"
)

// commitRef commits one ref update of the fixture's table through the
// catalog.
func (f *fixture) commitRef(t *testing.T, u table.Update) {
	t.Helper()
	if _, _, err := f.cat.Iceberg().CommitTable(context.Background(), f.tbl.Identifier(), nil,
		[]table.Update{u}); err != nil {
		t.Fatal(err)
	}
}

// TestConsumerRefs: a consumer's progress is per ref. Its ack must be on
// the ref's lineage, "main" is the main branch, an unknown ref is
// NOT_FOUND and a malformed one INVALID_ARGUMENT; the protection of a
// branch's consumer is the branch's; once the branch is dropped its
// consumer is listed as expired, on its ref, and a reset releases its
// protection without knowing the ref's kind.
func TestConsumerRefs(t *testing.T) {
	g := &fakeGuard{pins: map[string]int64{}}
	f := startWith(t, 3, 2, 0, nil, func(o *server.Options) { o.Guard = g })
	ctx := context.Background()
	s := f.snapshots
	f.commitRef(t, table.NewSetSnapshotRefUpdate("b", s[1], table.BranchRef, 0, 0, 0))
	ack := func(ref string, snap int64, protect bool) (*sluicev1.ConsumerProgress, error) {
		return f.control.Ack(ctx, &sluicev1.AckRequest{Consumer: "c", Table: tableName, Snapshot: snap, Ref: ref,
			Protect: protect})
	}
	p, err := ack("b", s[1], true)
	if err != nil || p.GetRef() != "b" || p.GetLagCommits() != 0 || !p.GetProtected() {
		t.Fatalf("a protected ack on branch b: %v %v", p, err)
	}
	if got := g.pins[tableName+"/c@b:branch"]; got != s[1] {
		t.Fatalf("the guard's pins %v: want the branch consumer's at %d", g.pins, s[1])
	}
	if p, err := ack("main", s[2], false); err != nil || p.GetRef() != "" || p.GetLagCommits() != 0 {
		t.Fatalf("an ack on ref main is the main branch's: %v %v", p, err)
	}
	for _, tt := range []struct {
		ref  string
		snap int64
		code codes.Code
	}{
		{"b", s[2], codes.InvalidArgument}, // on main only
		{"nope", s[1], codes.NotFound},
		{" b", s[1], codes.InvalidArgument},
	} {
		if _, err := ack(tt.ref, tt.snap, false); status.Code(err) != tt.code {
			t.Errorf("ack on ref %q of snapshot %d: %v, want %s", tt.ref, tt.snap, err, tt.code)
		}
	}
	main, err := f.control.GetConsumerProgress(ctx, &sluicev1.ConsumerProgressRequest{Consumer: "c", Table: tableName})
	if err != nil || main.GetSnapshot() != s[2] || main.GetRef() != "" || main.GetProtected() {
		t.Fatalf("main's consumer: %v %v", main, err)
	}

	// The branch dropped: its consumer stays listed, expired, on its ref.
	f.commitRef(t, table.NewRemoveSnapshotRefUpdate("b"))
	list, err := f.control.ListConsumers(ctx, &sluicev1.ListConsumersRequest{Table: tableName})
	if err != nil || len(list.GetConsumers()) != 2 {
		t.Fatalf("list after the branch was dropped: %v %v", list, err)
	}
	if c := list.GetConsumers()[1]; c.GetRef() != "b" || !c.GetExpired() || c.GetSnapshot() != s[1] {
		t.Fatalf("the dropped branch's consumer: %v, want expired on ref b", c)
	}
	if c := list.GetConsumers()[0]; c.GetRef() != "" || c.GetExpired() {
		t.Fatalf("main's consumer: %v", c)
	}
	res, err := f.control.ResetConsumer(ctx, &sluicev1.ResetConsumerRequest{Consumer: "c", Table: tableName, Ref: "b"})
	if err != nil || !res.GetRemoved() {
		t.Fatalf("reset of the dropped branch's consumer: %v %v", res, err)
	}
	if n := len(g.released); n == 0 || g.released[n-1] != tableName+"/c@b" {
		t.Fatalf("released %v: want the branch consumer's, of unknown kind", g.released)
	}
	if _, err := f.control.GetConsumerProgress(ctx, &sluicev1.ConsumerProgressRequest{Consumer: "c", Table: tableName,
		Ref: "b"}); status.Code(err) != codes.NotFound {
		t.Fatalf("the reset branch consumer: %v, want NotFound", err)
	}
	if p, err := f.control.GetConsumerProgress(ctx, &sluicev1.ConsumerProgressRequest{Consumer: "c",
		Table: tableName}); err != nil || p.GetSnapshot() != s[2] {
		t.Fatalf("main's consumer after the branch's reset: %v %v", p, err)
	}
}
