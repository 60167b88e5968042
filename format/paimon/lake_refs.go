package paimon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"

	"github.com/sluicefeed/sluice/lake"
)

// branchDir and branchPrefix name the folders of a table's branches:
// branch/branch-NAME, each with its own snapshot/, schema/ and tag/.
const (
	branchDir    = "branch"
	branchPrefix = "branch-"
)

// Ref returns the table's main branch, or one of its tags (tag/tag-NAME)
// and the table as seen on it: the lineage up to the tag's snapshot. A tag
// whose snapshot has expired from snapshot/ keeps its files, but no longer
// the state before it, so its changes cannot be read: ErrResyncRequired.
// Branches other than main (branch/branch-NAME) are not read yet:
// ErrUnsupported names them.
func (t *lakeTable) Ref(ctx context.Context, name string) (lake.Ref, lake.Table, error) {
	tbl := t.src.tbl
	if name == lake.MainBranch {
		ref := lake.Ref{Name: name, Kind: lake.RefBranch}
		if n := len(t.lineage); n > 0 {
			head := t.lineage[n-1].ID
			ref.Head = &head
		}
		return ref, t, nil
	}
	s, err := tbl.Tag(ctx, name)
	if errors.Is(err, ErrSnapshotNotFound) {
		if plainName(name) {
			if _, serr := fs.Stat(tbl.fsys, path.Join(branchDir, branchPrefix+name)); serr == nil {
				return lake.Ref{}, nil, fmt.Errorf("%w: table %s: %q is a Paimon branch, and Sluice reads the main "+
					"branch and tags of Paimon tables only", lake.ErrUnsupported, tbl.name, name)
			}
		}
		return lake.Ref{}, nil, fmt.Errorf("%w: table %s has no tag %q (Paimon tables are read on their main "+
			"branch and tags)", lake.ErrRefNotFound, tbl.name, name)
	}
	if err != nil {
		return lake.Ref{}, nil, lakeError(tbl.name, err)
	}
	head := s.ID
	ref := lake.Ref{Name: name, Kind: lake.RefTag, Head: &head}
	if !t.HasCommit(head) {
		return lake.Ref{}, nil, fmt.Errorf("%w: table %s: tag %q keeps snapshot %d, which has expired from its "+
			"snapshots (earliest %d): the tag's files remain, but not the history a window or stream reads",
			lake.ErrResyncRequired, tbl.name, name, head, t.first())
	}
	return ref, &tagTable{lakeTable: t, head: head}, nil
}

// tagTable is a Paimon table as seen on a tag: its history ends at the
// tag's snapshot.
type tagTable struct {
	*lakeTable
	head int64
}

func (t *tagTable) History(head *int64) lake.History {
	if head == nil {
		head = &t.head
	}
	return t.lakeTable.History(head)
}
