package paimon

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
)

// Split is the live data files of one partition's bucket in a snapshot,
// with their deletion vectors: the unit the merged state is read in.
type Split struct {
	// Partition is the partition's values as a binary row.
	Partition BinaryRow
	// PartitionBytes is the serialized partition.
	PartitionBytes []byte
	// Bucket is the bucket.
	Bucket int
	// Files are the live data files, in the order they were added.
	Files []ManifestEntry
	// DeletionVectors are the deletion vectors of the files that have
	// one, by data file name.
	DeletionVectors map[string]DeletionFile
}

// DeletionFile locates a data file's deletion vector.
type DeletionFile struct {
	// IndexFile names the deletion vector index file in index/.
	IndexFile string
	// Vector is where the vector lies in it.
	Vector DeletionVectorMeta
}

// Splits returns snapshot s's live data files grouped by partition and
// bucket, ordered by partition bytes and bucket, with the deletion
// vectors of its index manifest.
func (t *Table) Splits(ctx context.Context, s *Snapshot) ([]Split, error) {
	live, err := t.LiveFiles(ctx, s)
	if err != nil {
		return nil, err
	}
	index, err := t.IndexManifest(ctx, s)
	if err != nil {
		return nil, err
	}
	return splitsOf(live, index), nil
}

// splitsOf groups live data files by partition and bucket, ordered by
// partition bytes and bucket, with the deletion vectors of index.
func splitsOf(live []ManifestEntry, index []IndexEntry) []Split {
	type key struct {
		partition string
		bucket    int
	}
	dvs := map[key]map[string]DeletionFile{}
	for _, ie := range index {
		if ie.IndexType != IndexDeletionVectors {
			continue
		}
		k := key{string(ie.PartitionBytes), ie.Bucket}
		if dvs[k] == nil {
			dvs[k] = map[string]DeletionFile{}
		}
		for _, dv := range ie.DeletionVectors {
			dvs[k][dv.DataFile] = DeletionFile{IndexFile: ie.FileName, Vector: dv}
		}
	}
	byKey := map[key]int{}
	var splits []Split
	for _, e := range live {
		k := key{string(e.PartitionBytes), e.Bucket}
		i, ok := byKey[k]
		if !ok {
			i = len(splits)
			byKey[k] = i
			splits = append(splits, Split{Partition: e.Partition, PartitionBytes: e.PartitionBytes, Bucket: e.Bucket,
				DeletionVectors: map[string]DeletionFile{}})
		}
		splits[i].Files = append(splits[i].Files, e)
		if d, ok := dvs[k][e.File.FileName]; ok {
			splits[i].DeletionVectors[e.File.FileName] = d
		}
	}
	slices.SortFunc(splits, func(a, b Split) int {
		if c := cmp.Compare(string(a.PartitionBytes), string(b.PartitionBytes)); c != 0 {
			return c
		}
		return cmp.Compare(a.Bucket, b.Bucket)
	})
	return splits
}

// checkReadable refuses what ReadSplit does not implement for a table of
// schema s.
func (t *Table) checkReadable(s *Schema, opts Options) error {
	if len(s.PrimaryKeys) == 0 {
		return nil
	}
	switch opts.MergeEngine {
	case MergeDeduplicate:
	case MergePartialUpdate, MergeAggregation:
		if _, err := t.newFieldMerger(s, opts.MergeEngine); err != nil {
			return err
		}
	case MergeFirstRow:
		return fmt.Errorf("%w: table %q uses merge engine %s (deduplicate, partial-update and aggregation are read)", ErrUnsupportedMergeEngine, t.name, opts.MergeEngine)
	default:
		return fmt.Errorf("%w: table %q uses merge engine %q", ErrUnsupportedMergeEngine, t.name, opts.MergeEngine)
	}
	if len(opts.SequenceFields) > 0 {
		return fmt.Errorf("%w: table %q orders records by sequence.field %v", ErrUnsupported, t.name, opts.SequenceFields)
	}
	return nil
}

// deletionVector reads the deletion vector of data file name in split sp,
// nil when it has none.
func (t *Table) deletionVector(ctx context.Context, sp *Split, name string) (*roaring.Bitmap, error) {
	d, ok := sp.DeletionVectors[name]
	if !ok {
		return nil, nil
	}
	return t.ReadDeletionVector(ctx, d.IndexFile, d.Vector)
}

// ReadSnapshot reads the full state of snapshot s, in the snapshot's
// schema, split by split (see ReadSplit). fn takes each batch over and
// must release it.
func (t *Table) ReadSnapshot(ctx context.Context, s *Snapshot, fn func(arrow.RecordBatch) error) error {
	target, err := t.SnapshotSchema(ctx, s)
	if err != nil {
		return err
	}
	opts, err := target.TableOptions()
	if err != nil {
		return fmt.Errorf("table %q: %w", t.name, err)
	}
	if err := t.checkReadable(target, opts); err != nil {
		return err
	}
	splits, err := t.Splits(ctx, s)
	if err != nil {
		return err
	}
	for i := range splits {
		if err := t.ReadSplit(ctx, target, &splits[i], fn); err != nil {
			return fmt.Errorf("snapshot %d, bucket %d: %w", s.ID, splits[i].Bucket, err)
		}
	}
	return nil
}
