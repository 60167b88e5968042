package delta

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"

	"github.com/sluicefeed/sluice/internal/lib/storage"
)

// current returns the log's listing as it is now, without listing the
// whole log when the known listing (the last one made) can be brought up
// to date: a table's log only grows at its end, until log cleanup removes
// its oldest files or the table is deleted and created again.
//
//   - The known listing's oldest file (its origin) is looked up: when it is
//     gone, or is another file now (another size or modification time),
//     the history was rewritten and the log is listed whole.
//   - The commit file after the known latest version is looked up: when
//     there is none, the known listing is current.
//   - Otherwise only the log files from the known latest version on are
//     listed (from that key on object stores that can, see
//     storage.ReadDirAfter), and added to the known listing.
//
// A commit file written after a missing one is not seen until the missing
// one is there (writers write commits in order: it is on its way), where a
// whole listing would find the gap. So a table that did not change costs
// two lookups, and one that did a
// listing of its new files, whatever the length of its history. A
// checkpoint written since for a version already listed is found at the
// next whole listing; until then the state is read from an older one,
// which gives the same state. A listed checkpoint or commit that is gone
// when read makes its reader list the log whole and try again (see
// withListing).
func (t *Table) current(ctx context.Context) (*listing, error) {
	t.lmu.Lock()
	defer t.lmu.Unlock()
	l := t.known
	if l == nil || l.latest() < 0 || l.originName == "" {
		return t.listLocked(ctx)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	same, err := t.sameFile(path.Join(logDir, l.originName), l)
	if err != nil {
		return nil, err
	}
	if !same {
		return t.listLocked(ctx)
	}
	latest := l.latest()
	_, err = fs.Stat(t.fsys, commitFile(latest+1))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return l, nil
	case err != nil:
		return nil, fmt.Errorf("table %q: %s: %w", t.name, commitFile(latest+1), err)
	}
	// Every file of the latest version and after: a version's names all
	// start with its 20 digits.
	entries, err := storage.ReadDirAfter(t.fsys, logDir, fmt.Sprintf("%020d", latest))
	if errors.Is(err, fs.ErrNotExist) {
		return t.listLocked(ctx) // the folder is gone: say so as a whole listing does
	}
	if err != nil {
		return nil, fmt.Errorf("table %q: listing %s after version %d: %w", t.name, logDir, latest, err)
	}
	next, err := t.extend(l, entries)
	if err != nil {
		return nil, err
	}
	t.known = next
	return next, nil
}

// sameFile reports whether the log file name is still the origin of l
// (the same size and modification time).
func (t *Table) sameFile(name string, l *listing) (bool, error) {
	info, err := fs.Stat(t.fsys, name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("table %q: %s: %w", t.name, name, err)
	}
	return info.Size() == l.originSize && info.ModTime().Equal(l.originMod), nil
}

// extend returns l with the log files of entries added: the files of l's
// latest version and after, sorted by name. l itself is not changed
// (listings are shared).
func (t *Table) extend(l *listing, entries []fs.DirEntry) (*listing, error) {
	latest := l.latest()
	tail := &listing{origin: l.origin}
	if err := t.collect(tail, entries); err != nil {
		return nil, err
	}
	next := &listing{origin: l.origin, originName: l.originName, originSize: l.originSize, originMod: l.originMod}
	next.commits = slices.Clip(l.commits)
	for _, v := range tail.commits {
		if v > latest {
			next.commits = append(next.commits, v)
		}
	}
	// The latest version's checkpoint, listed again, replaces the known
	// one (a better one may have been written since).
	next.checkpoints = slices.Clip(l.checkpoints)
	if n := len(next.checkpoints); n > 0 && next.checkpoints[n-1].version == latest &&
		len(tail.checkpoints) > 0 && tail.checkpoints[0].version == latest {
		next.checkpoints = next.checkpoints[: n-1 : n-1]
	}
	next.checkpoints = append(next.checkpoints, tail.checkpoints...)
	return next, nil
}

// withListing calls fn with the current listing (see current). When fn
// fails because a file the listing names is gone (a checkpoint replaced,
// files removed by log cleanup since), it calls fn again with the log
// listed whole, which tells what is there now.
func (t *Table) withListing(ctx context.Context, fn func(l *listing) error) error {
	l, err := t.current(ctx)
	if err != nil {
		return err
	}
	err = fn(l)
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if l, err = t.list(ctx); err != nil {
		return err
	}
	return fn(l)
}
