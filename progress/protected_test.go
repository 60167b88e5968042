package progress_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicefeed/sluice/progress"
)

// TestProtected: a checkpoint keeps whether its ack asked for protection;
// ListProtected lists the protected ones of every table, and an ack
// without protection takes it away.
func TestProtected(t *testing.T) {
	for name, dsn := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, err := progress.Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			at := time.UnixMilli(1_800_000_000_000)
			for _, c := range []progress.Checkpoint{
				{Table: "p.t", Consumer: "kept", Snapshot: 1, AckedAt: at, Protected: true},
				{Table: "p.t", Consumer: "plain", Snapshot: 2, AckedAt: at},
				{Table: "p.u", Consumer: "kept", Snapshot: 3, AckedAt: at, Protected: true},
				{Table: "p.u", Consumer: "dropped", Snapshot: 4, AckedAt: at, Protected: true},
				{Table: "p.u", Consumer: "dropped", Snapshot: 5, AckedAt: at},
			} {
				if err := s.Put(ctx, c); err != nil {
					t.Fatal(err)
				}
			}
			got, err := s.ListProtected(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, c := range got {
				if c.Table[:2] == "p." {
					names = append(names, fmt.Sprintf("%s/%s@%d", c.Table, c.Consumer, c.Snapshot))
				}
			}
			if fmt.Sprint(names) != "[p.t/kept@1 p.u/kept@3]" {
				t.Fatalf("protected: %v", names)
			}
			c, err := s.Get(ctx, key("p.t", "kept"))
			if err != nil || !c.Protected {
				t.Fatalf("get: %+v %v, want protected", c, err)
			}
			list, err := s.List(ctx, "p.u")
			if err != nil || len(list) != 2 || list[0].Protected || !list[1].Protected {
				t.Fatalf("list: %+v %v, want dropped unprotected, kept protected", list, err)
			}
		})
	}
}
