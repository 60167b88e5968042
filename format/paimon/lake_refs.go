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

// Ref returns the table's main branch, one of its branches
// (branch/branch-NAME) or one of its tags (tag/tag-NAME), and the table as
// seen on it. A branch is read from its own snapshots, schemas and tags,
// and the table's shared manifests and data files; its history starts at
// the snapshot it was created from (the one snapshot Paimon copies into
// it), so a window on it starts there at the earliest. A tag's lineage
// ends at its snapshot; a tag whose snapshot has expired from snapshot/
// keeps its files, but no longer the state before it, so its changes
// cannot be read: ErrResyncRequired.
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
	if plainName(name) {
		dir := path.Join(branchDir, branchPrefix+name)
		_, err := fs.Stat(tbl.fsys, dir)
		if err == nil {
			return t.branchRef(ctx, name, dir)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return lake.Ref{}, nil, lakeError(tbl.name, err)
		}
	}
	s, err := tbl.Tag(ctx, name)
	if errors.Is(err, ErrSnapshotNotFound) {
		return lake.Ref{}, nil, fmt.Errorf("%w: table %s has no branch or tag %q", lake.ErrRefNotFound, tbl.name, name)
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

// branchRef loads branch name, whose folder is dir.
func (t *lakeTable) branchRef(ctx context.Context, name, dir string) (lake.Ref, lake.Table, error) {
	src, err := t.src.branch(ctx, name, dir)
	if err != nil {
		return lake.Ref{}, nil, err
	}
	lt, err := src.Load(ctx)
	if err != nil {
		return lake.Ref{}, nil, err
	}
	ref := lake.Ref{Name: name, Kind: lake.RefBranch}
	if h := lt.History(nil).Commits; len(h) > 0 {
		head := h[len(h)-1].ID
		ref.Head = &head
	}
	return ref, lt, nil
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
