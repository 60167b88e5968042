package catalog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
)

// ConsumerTagPrefix starts the tag that pins a protected consumer's
// snapshot in an Iceberg table: "sluice-consumer-<consumer id>".
const ConsumerTagPrefix = "sluice-consumer-"

// ConsumerTag is the name of the tag of a consumer of the table's main
// branch.
func ConsumerTag(consumer string) string { return ConsumerTagPrefix + consumer }

// ConsumerRefSeparator separates a consumer's id from the branch or tag it
// follows in the name of its tag. Consumer ids cannot hold it, so the
// first one in a tag's name ends the id.
const ConsumerRefSeparator = "#"

// ConsumerTagOn is the name of the tag of a consumer of the table's branch
// or tag ref: "sluice-consumer-<consumer>#<ref>", or ConsumerTag's for the
// main branch (ref "").
func ConsumerTagOn(consumer, ref string) string {
	if ref == "" {
		return ConsumerTag(consumer)
	}
	return ConsumerTagPrefix + consumer + ConsumerRefSeparator + ref
}

// tagAttempts bounds the commits of one tag write that lose to concurrent
// commits (each reloads the table and tries again).
const tagAttempts = 4

// SetTag points the tag of the table name at snapshot, with max-ref-age-ms
// maxRefAge (none when 0): Iceberg's snapshot expiry keeps a tagged
// snapshot (and the files it needs) until the tag is older than that. The
// update is committed through the catalog with two requirements, the
// table's UUID and the tag where it was read (absent, or its snapshot), so
// that it never overwrites a concurrent change of the tag; a commit that
// loses to a concurrent one is tried again on the reloaded table. A tag
// already there is left alone; a branch of the name is an error.
func (c *Catalog) SetTag(ctx context.Context, name, tag string, snapshot int64, maxRefAge time.Duration) error {
	return c.commitRef(ctx, name, tag, func(md table.Metadata, cur *table.SnapshotRef) ([]table.Update, error) {
		if md.SnapshotByID(snapshot) == nil {
			return nil, fmt.Errorf("%w: %s has no snapshot %d to tag %s", ErrTableNotFound, name, snapshot, tag)
		}
		ageMs := maxRefAge.Milliseconds()
		if cur != nil && cur.SnapshotID == snapshot && sameAge(cur.MaxRefAgeMs, ageMs) {
			return nil, nil
		}
		return []table.Update{table.NewSetSnapshotRefUpdate(tag, snapshot, table.TagRef, ageMs, 0, 0)}, nil
	})
}

// DropTag removes the tag of the table name; none is no error.
func (c *Catalog) DropTag(ctx context.Context, name, tag string) error {
	return c.commitRef(ctx, name, tag, func(_ table.Metadata, cur *table.SnapshotRef) ([]table.Update, error) {
		if cur == nil {
			return nil, nil
		}
		return []table.Update{table.NewRemoveSnapshotRefUpdate(tag)}, nil
	})
}

// sameAge reports whether a ref's max-ref-age-ms is ms (0: none).
func sameAge(cur *int64, ms int64) bool {
	if cur == nil {
		return ms <= 0
	}
	return *cur == ms
}

// commitRef commits the updates plan makes of the tag (nil: nothing to
// commit), with the table's UUID and the tag's snapshot as requirements.
func (c *Catalog) commitRef(ctx context.Context, name, tag string,
	plan func(md table.Metadata, cur *table.SnapshotRef) ([]table.Update, error)) error {
	ident, err := ParseName(name)
	if err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		ice, err := c.current(ctx)
		if err != nil {
			return err
		}
		tbl, err := ice.LoadTable(ctx, ident)
		if err != nil {
			return c.classify(name, err)
		}
		md := tbl.Metadata()
		var cur *table.SnapshotRef
		for n, ref := range md.Refs() {
			if n == tag {
				cur = &ref
			}
		}
		if cur != nil && cur.SnapshotRefType != table.TagRef {
			return fmt.Errorf("%w: %s has a branch named %s, which Sluice does not move", ErrReadOnly, name, tag)
		}
		updates, err := plan(md, cur)
		if err != nil || len(updates) == 0 {
			return err
		}
		var at *int64
		if cur != nil {
			id := cur.SnapshotID
			at = &id
		}
		reqs := []table.Requirement{table.AssertTableUUID(md.TableUUID()), table.AssertRefSnapshotID(tag, at)}
		_, _, err = ice.CommitTable(ctx, ident, reqs, updates)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, table.ErrCommitFailed) && attempt < tagAttempts:
			continue
		case errors.Is(err, table.ErrCommitFailed):
			return fmt.Errorf("%w: %s: tag %s: %d commits lost to concurrent ones: %v", ErrConflict, name, tag,
				attempt, err)
		case errors.Is(err, rest.ErrForbidden), errors.Is(err, rest.ErrUnauthorized):
			return fmt.Errorf("%w: %s: the catalog refused the commit of tag %s: %v", ErrReadOnly, name, tag, err)
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			return err
		default:
			return fmt.Errorf("%w: %s: commit tag %s: %v", ErrUnavailable, name, tag, err)
		}
	}
}

// CheckWritable reports what can be known at start of whether tags can be
// committed to the catalog: the SQLite file of an sql catalog and a local
// warehouse must be writable by this process (an error wrapping
// ErrReadOnly otherwise). A REST catalog is asked at the first commit.
func (c *Catalog) CheckWritable() error {
	if c.file != "" {
		f, err := os.OpenFile(c.file, os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("%w: catalog file %s: %v", ErrReadOnly, c.file, err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("%w: catalog file %s: %v", ErrReadOnly, c.file, err)
		}
	}
	if c.cfg.Type == TypeREST {
		return nil
	}
	if dir, ok := c.cfg.LocalWarehouse(); ok {
		f, err := os.CreateTemp(dir, ".sluice-write-check-*")
		if err != nil {
			return fmt.Errorf("%w: warehouse %s: %v", ErrReadOnly, dir, err)
		}
		return errors.Join(f.Close(), os.Remove(f.Name()))
	}
	return nil
}
