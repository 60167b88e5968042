package iceberg

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/lake"
)

// Ref returns the branch or tag name of the table's metadata refs and the
// table as seen on it: its history is the lineage of the ref's head. The
// main branch of a table without snapshots (which the metadata names in no
// ref) is the table itself.
func (t *icebergTable) Ref(_ context.Context, name string) (lake.Ref, lake.Table, error) {
	for n, r := range t.meta.Refs() {
		if n != name {
			continue
		}
		kind := lake.RefBranch
		if r.SnapshotRefType == table.TagRef {
			kind = lake.RefTag
		}
		if t.meta.SnapshotByID(r.SnapshotID) == nil {
			return lake.Ref{}, nil, fmt.Errorf("%w: %s %q points at snapshot %d, which the metadata lacks",
				lake.ErrUnreadable, kind, name, r.SnapshotID)
		}
		head := r.SnapshotID
		return lake.Ref{Name: name, Kind: kind, Head: &head}, &icebergRef{icebergTable: t, head: head}, nil
	}
	if name == lake.MainBranch && t.meta.CurrentSnapshot() == nil {
		return lake.Ref{Name: name, Kind: lake.RefBranch}, t, nil
	}
	return lake.Ref{}, nil, fmt.Errorf("%w: the table has no branch or tag %q (it has %s)", lake.ErrRefNotFound,
		name, refNames(t.meta))
}

// refNames lists the table's refs for messages: "branch main, tag v1".
func refNames(meta table.Metadata) string {
	var out []string
	for n, r := range meta.Refs() {
		out = append(out, fmt.Sprintf("%s %q", r.SnapshotRefType, n))
	}
	if len(out) == 0 {
		return "none"
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// icebergRef is an Iceberg table as seen on one of its refs: its history
// is the lineage of the ref's head.
type icebergRef struct {
	*icebergTable
	head int64
}

func (r *icebergRef) History(head *int64) lake.History {
	if head == nil {
		head = &r.head
	}
	return icebergHistory(r.meta, head)
}
