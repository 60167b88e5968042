package registry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/lake"
)

// Ways a consumer's snapshot is protected, as Protect reports them.
const (
	// ProtectTag: an Iceberg tag (catalog.ConsumerTag) on the snapshot.
	ProtectTag = "tag"
	// ProtectConsumerFile: a Paimon consumer file whose nextSnapshot is
	// the snapshot itself: a stream resumes from the acknowledged
	// snapshot's lineage, which Paimon's expiry then keeps.
	ProtectConsumerFile = "consumer-file"
	// ProtectLagWatch: nothing can pin a Delta version; the consumer's lag
	// is watched against the table's retention.
	ProtectLagWatch = "lag-watch"
)

// Protector keeps protected consumers' snapshots from the expiry of the
// tables of a Tables, each table by its format's own means. It is safe for
// concurrent use.
type Protector struct {
	tables *Tables
	// maxRefAge is the max-ref-age-ms of the Iceberg tags.
	maxRefAge time.Duration
}

// Protector returns the protector of the tables' consumers, whose
// Iceberg tags have max-ref-age-ms maxRefAge (0: none, the tag then
// lives until the consumer is reset).
func (s *Tables) Protector(maxRefAge time.Duration) *Protector {
	return &Protector{tables: s, maxRefAge: maxRefAge}
}

// CheckWritable reports, at start, storage and catalogs that protection
// cannot write to (errors wrapping catalog.ErrReadOnly): the Iceberg
// catalog's local file or warehouse, the Paimon warehouse. Delta tables
// are never written to.
func (p *Protector) CheckWritable() error {
	if err := p.tables.CheckWritable(); err != nil {
		return err
	}
	if p.tables.paimon != nil {
		return p.tables.paimon.CheckWritable()
	}
	return nil
}

// Protect pins the acknowledged snapshot of a consumer of the table
// name's branch or tag ref (the zero Ref: the main branch) and returns how
// (ProtectTag, ProtectConsumerFile, ProtectLagWatch): an Iceberg table's
// tag (catalog.ConsumerTagOn) is moved onto it, a Paimon table's consumer
// file names it (in the branch's consumer folder for a branch), a Delta
// table's lag is watched (see Retention).
func (p *Protector) Protect(ctx context.Context, name, consumer string, ref lake.Ref, snapshot int64) (string,
	error) {
	t := p.tables
	switch {
	case t.paimon != nil && t.paimon.Has(name):
		branch, id := paimonConsumer(consumer, ref)
		return ProtectConsumerFile, t.paimon.SetConsumer(ctx, name, branch, id, snapshot)
	case t.delta != nil && t.delta.Has(name):
		if ref.Name != "" {
			return "", fmt.Errorf("%w: %s: a Delta table has no branches or tags (ref %q)", lake.ErrNoRefs, name,
				ref.Name)
		}
		return ProtectLagWatch, nil
	}
	return ProtectTag, t.SetTag(ctx, name, catalog.ConsumerTagOn(consumer, ref.Name), snapshot, p.maxRefAge)
}

// Release drops the protection of a consumer of the table name's branch
// or tag ref (its tag or consumer file); none is no error. A ref whose
// kind is not known (a dropped ref: Kind "") drops the consumer file of
// either kind.
func (p *Protector) Release(ctx context.Context, name, consumer string, ref lake.Ref) error {
	t := p.tables
	switch {
	case t.paimon != nil && t.paimon.Has(name):
		if ref.Name != "" && ref.Kind == "" {
			return errors.Join(
				t.paimon.DropConsumer(ctx, name, ref.Name, consumer),
				t.paimon.DropConsumer(ctx, name, "", consumer+catalog.ConsumerRefSeparator+ref.Name))
		}
		branch, id := paimonConsumer(consumer, ref)
		return t.paimon.DropConsumer(ctx, name, branch, id)
	case t.delta != nil && t.delta.Has(name):
		return nil
	}
	err := t.DropTag(ctx, name, catalog.ConsumerTagOn(consumer, ref.Name))
	if errors.Is(err, catalog.ErrTableNotFound) {
		return nil // a dropped table keeps nothing
	}
	return err
}

// paimonConsumer is where a Paimon table keeps the consumer file of a
// consumer of ref: the branch's own consumer folder for a branch; for a
// tag, whose snapshots are the main branch's, the main folder, under the
// id "<consumer>#<tag>".
func paimonConsumer(consumer string, ref lake.Ref) (branch, id string) {
	switch {
	case ref.Name == "" || ref.Name == lake.MainBranch:
		return "", consumer
	case ref.Kind == lake.RefTag:
		return "", consumer + catalog.ConsumerRefSeparator + ref.Name
	}
	return ref.Name, consumer
}

// Retention returns how long the Delta table name keeps its log entries
// and the files its commits removed (delta.logRetentionDuration,
// delta.deletedFileRetentionDuration); ok is false for the tables of other
// formats, whose protection pins snapshots.
func (p *Protector) Retention(ctx context.Context, name string) (log, deletedFiles time.Duration, ok bool,
	err error) {
	t := p.tables
	if t.delta == nil || !t.delta.Has(name) || (t.paimon != nil && t.paimon.Has(name)) {
		return 0, 0, false, nil
	}
	src, err := t.deltaSource(ctx, name)
	if err != nil {
		return 0, 0, false, err
	}
	r, err := src.Retention(ctx)
	if err != nil {
		return 0, 0, false, fmt.Errorf("the retention of %s: %w", name, err)
	}
	return r.Log, r.DeletedFiles, true, nil
}
