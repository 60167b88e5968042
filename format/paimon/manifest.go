package paimon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"time"
)

// FileKind says whether a manifest entry adds or deletes a file.
type FileKind int

// The kinds of manifest entries.
const (
	// KindAdd adds a file.
	KindAdd FileKind = 0
	// KindDelete removes a file an earlier entry added.
	KindDelete FileKind = 1
)

// FileSource says how a data file was written.
type FileSource int

// The sources of data files.
const (
	// SourceAppend is a file a write appended.
	SourceAppend FileSource = 0
	// SourceCompact is a file a compaction rewrote.
	SourceCompact FileSource = 1
	// SourceUnknown is a file of a manifest that does not say.
	SourceUnknown FileSource = -1
)

// ManifestFileMeta is one entry of a manifest list: a manifest file and
// what it holds.
type ManifestFileMeta struct {
	// FileName names the manifest in manifest/.
	FileName string
	// FileSize is its size in bytes.
	FileSize int64
	// NumAddedFiles and NumDeletedFiles count its entries by kind.
	NumAddedFiles, NumDeletedFiles int64
	// PartitionStats are the bounds of the partitions of its entries.
	PartitionStats Stats
	// SchemaID is the schema it was written with.
	SchemaID int64
}

// Stats are column statistics: binary rows of minimums and maximums and
// a null count per column (-1 when unknown).
type Stats struct {
	Min, Max   BinaryRow
	NullCounts []int64
}

// DataFile is a data (or changelog) file as a manifest describes it.
type DataFile struct {
	// FileName names the file in its bucket's folder.
	FileName string
	// FileSize is its size in bytes.
	FileSize int64
	// RowCount is its number of rows (records: +I, -U, +U and -D rows of
	// a primary-key table count alike).
	RowCount int64
	// MinKey and MaxKey bound its trimmed primary keys (primary-key
	// tables).
	MinKey, MaxKey BinaryRow
	// KeyStats and ValueStats are the statistics of its keys and values.
	KeyStats, ValueStats Stats
	// ValueStatsCols names the columns ValueStats covers, in order; nil
	// when it covers every column of the file's schema.
	ValueStatsCols []string
	// MinSequenceNumber and MaxSequenceNumber bound its sequence numbers.
	MinSequenceNumber, MaxSequenceNumber int64
	// SchemaID is the schema it was written with.
	SchemaID int64
	// Level is its level in the bucket's LSM tree (0 for new files).
	Level int
	// ExtraFiles are files stored alongside it (such as index files).
	ExtraFiles []string
	// CreationTime is when it was written, when the manifest says.
	CreationTime time.Time
	// DeleteRowCount counts its -U and -D rows, -1 when unknown.
	DeleteRowCount int64
	// Source is APPEND or COMPACT.
	Source FileSource
	// ExternalPath is the file's location outside the table folder, if
	// it has one.
	ExternalPath string
}

// ManifestEntry is one entry of a manifest: a file added or deleted in a
// partition's bucket.
type ManifestEntry struct {
	// Kind is KindAdd or KindDelete.
	Kind FileKind
	// Partition is the partition's values, a binary row of the partition
	// columns.
	Partition BinaryRow
	// PartitionBytes is the serialized partition, which identifies it.
	PartitionBytes []byte
	// Bucket is the file's bucket.
	Bucket int
	// TotalBuckets is the table's bucket count when the file was written.
	TotalBuckets int
	// File is the file.
	File DataFile
}

// identifier is what makes two entries name the same file.
type identifier struct {
	partition string
	bucket    int
	level     int
	file      string
}

func (e *ManifestEntry) id() identifier {
	return identifier{string(e.PartitionBytes), e.Bucket, e.File.Level, e.File.FileName}
}

// readMeta reads an Avro file of dir (manifest/) and calls fn with each
// record; a missing file is ErrSnapshotExpired, one that does not decode
// ErrCorrupt.
func (t *Table) readMeta(ctx context.Context, dir, name string, fn func(record) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !plainName(name) || name == "" {
		return fmt.Errorf("%w: table %q: file name %q", ErrCorrupt, t.name, name)
	}
	data, err := fs.ReadFile(t.fsys, path.Join(dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: table %q: %s/%s is missing (expired?)", ErrSnapshotExpired, t.name, dir, name)
	}
	if err != nil {
		return fmt.Errorf("table %q: %s/%s: %w", t.name, dir, name, err)
	}
	if err := readAvro(data, fn); err != nil {
		if errors.Is(err, ErrCorrupt) {
			return fmt.Errorf("table %q: %s/%s: %w", t.name, dir, name, err)
		}
		return fmt.Errorf("%w: table %q: %s/%s: %w", ErrCorrupt, t.name, dir, name, err)
	}
	return nil
}

// ManifestList reads a manifest list of manifest/.
func (t *Table) ManifestList(ctx context.Context, name string) ([]ManifestFileMeta, error) {
	var out []ManifestFileMeta
	err := t.readMeta(ctx, manifestDir, name, func(r record) error {
		m, err := decodeManifestFileMeta(r)
		if err != nil {
			return err
		}
		out = append(out, m)
		return nil
	})
	return out, err
}

// DecodeManifestList decodes the bytes of a manifest list (untrusted).
func DecodeManifestList(data []byte) ([]ManifestFileMeta, error) {
	var out []ManifestFileMeta
	err := readAvro(data, func(r record) error {
		m, err := decodeManifestFileMeta(r)
		out = append(out, m)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%w: manifest list: %w", ErrCorrupt, err)
	}
	return out, nil
}

func decodeManifestFileMeta(r record) (m ManifestFileMeta, err error) {
	if m.FileName, err = r.str("_FILE_NAME"); err != nil {
		return m, err
	}
	if !plainName(m.FileName) {
		return m, fmt.Errorf("manifest name %q is not a plain name", m.FileName)
	}
	if m.FileSize, err = r.long("_FILE_SIZE"); err != nil {
		return m, err
	}
	if m.NumAddedFiles, err = r.long("_NUM_ADDED_FILES"); err != nil {
		return m, err
	}
	if m.NumDeletedFiles, err = r.long("_NUM_DELETED_FILES"); err != nil {
		return m, err
	}
	if m.SchemaID, err = r.long("_SCHEMA_ID"); err != nil {
		return m, err
	}
	ps, err := r.rec("_PARTITION_STATS")
	if err != nil {
		return m, err
	}
	m.PartitionStats, err = decodeStats(ps)
	return m, err
}

func decodeStats(r record) (s Stats, err error) {
	minB, err := r.bytes("_MIN_VALUES")
	if err != nil {
		return s, err
	}
	maxB, err := r.bytes("_MAX_VALUES")
	if err != nil {
		return s, err
	}
	if s.Min, err = DecodeBinaryRow(minB); err != nil {
		return s, err
	}
	if s.Max, err = DecodeBinaryRow(maxB); err != nil {
		return s, err
	}
	s.NullCounts, err = r.optLongs("_NULL_COUNTS")
	return s, err
}

// Manifest reads a manifest of manifest/.
func (t *Table) Manifest(ctx context.Context, name string) ([]ManifestEntry, error) {
	var out []ManifestEntry
	err := t.readMeta(ctx, manifestDir, name, func(r record) error {
		e, err := decodeManifestEntry(r)
		if err != nil {
			return err
		}
		out = append(out, e)
		return nil
	})
	return out, err
}

// DecodeManifest decodes the bytes of a manifest (untrusted).
func DecodeManifest(data []byte) ([]ManifestEntry, error) {
	var out []ManifestEntry
	err := readAvro(data, func(r record) error {
		e, err := decodeManifestEntry(r)
		out = append(out, e)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%w: manifest: %w", ErrCorrupt, err)
	}
	return out, nil
}

func decodeManifestEntry(r record) (e ManifestEntry, err error) {
	kind, err := r.int("_KIND")
	if err != nil {
		return e, err
	}
	if kind != int(KindAdd) && kind != int(KindDelete) {
		return e, fmt.Errorf("entry kind %d", kind)
	}
	e.Kind = FileKind(kind)
	if e.PartitionBytes, err = r.bytes("_PARTITION"); err != nil {
		return e, err
	}
	if e.Partition, err = DecodeBinaryRow(e.PartitionBytes); err != nil {
		return e, err
	}
	if e.Bucket, err = r.int("_BUCKET"); err != nil {
		return e, err
	}
	if e.TotalBuckets, err = r.int("_TOTAL_BUCKETS"); err != nil {
		return e, err
	}
	f, err := r.rec("_FILE")
	if err != nil {
		return e, err
	}
	e.File, err = decodeDataFile(f)
	return e, err
}

func decodeDataFile(r record) (d DataFile, err error) {
	if d.FileName, err = r.str("_FILE_NAME"); err != nil {
		return d, err
	}
	if !plainName(d.FileName) || d.FileName == "" {
		return d, fmt.Errorf("data file name %q is not a plain name", d.FileName)
	}
	for _, f := range []struct {
		name string
		to   *int64
	}{{"_FILE_SIZE", &d.FileSize}, {"_ROW_COUNT", &d.RowCount}, {"_MIN_SEQUENCE_NUMBER", &d.MinSequenceNumber},
		{"_MAX_SEQUENCE_NUMBER", &d.MaxSequenceNumber}, {"_SCHEMA_ID", &d.SchemaID}} {
		if *f.to, err = r.long(f.name); err != nil {
			return d, err
		}
	}
	if d.RowCount < 0 || d.SchemaID < 0 {
		return d, fmt.Errorf("data file %s: negative row count or schema id", d.FileName)
	}
	if d.Level, err = r.int("_LEVEL"); err != nil {
		return d, err
	}
	minKey, err := r.bytes("_MIN_KEY")
	if err != nil {
		return d, err
	}
	maxKey, err := r.bytes("_MAX_KEY")
	if err != nil {
		return d, err
	}
	if d.MinKey, err = DecodeBinaryRow(minKey); err != nil {
		return d, err
	}
	if d.MaxKey, err = DecodeBinaryRow(maxKey); err != nil {
		return d, err
	}
	for _, s := range []struct {
		name string
		to   *Stats
	}{{"_KEY_STATS", &d.KeyStats}, {"_VALUE_STATS", &d.ValueStats}} {
		sr, err := r.rec(s.name)
		if err != nil {
			return d, err
		}
		if *s.to, err = decodeStats(sr); err != nil {
			return d, err
		}
	}
	if d.ExtraFiles, err = r.strs("_EXTRA_FILES"); err != nil {
		return d, err
	}
	if ct, ok := r["_CREATION_TIME"].(time.Time); ok {
		d.CreationTime = ct.UTC()
	}
	if d.DeleteRowCount, err = r.optLong("_DELETE_ROW_COUNT", -1); err != nil {
		return d, err
	}
	src, err := r.optLong("_FILE_SOURCE", int64(SourceUnknown))
	if err != nil {
		return d, err
	}
	d.Source = FileSource(src)
	if d.ValueStatsCols, err = r.strs("_VALUE_STATS_COLS"); err != nil {
		return d, err
	}
	d.ExternalPath, err = r.optStr("_EXTERNAL_PATH")
	return d, err
}

// entries reads every entry of the manifests of a manifest list.
func (t *Table) entries(ctx context.Context, list string) ([]ManifestEntry, error) {
	metas, err := t.ManifestList(ctx, list)
	if err != nil {
		return nil, err
	}
	var out []ManifestEntry
	for _, m := range metas {
		es, err := t.Manifest(ctx, m.FileName)
		if err != nil {
			return nil, err
		}
		out = append(out, es...)
	}
	return out, nil
}

// mergeEntries applies entries in order: a DELETE cancels the ADD of the
// same file; what is left are the live files, in the order they were
// added.
func mergeEntries(entries []ManifestEntry) ([]ManifestEntry, error) {
	live := map[identifier]int{}
	var out []ManifestEntry
	for _, e := range entries {
		id := e.id()
		switch e.Kind {
		case KindAdd:
			if _, dup := live[id]; dup {
				return nil, fmt.Errorf("%w: file %s added twice", ErrCorrupt, e.File.FileName)
			}
			live[id] = len(out)
			out = append(out, e)
		case KindDelete:
			i, ok := live[id]
			if !ok {
				// Paimon drops a DELETE whose ADD is in a manifest that a
				// full compaction of the manifests already merged away.
				continue
			}
			out[i].Kind = -1
			delete(live, id)
		}
	}
	kept := out[:0]
	for _, e := range out {
		if e.Kind == KindAdd {
			kept = append(kept, e)
		}
	}
	return kept, nil
}

// LiveFiles returns the data files live in snapshot s: the entries of its
// base and delta manifest lists, merged.
func (t *Table) LiveFiles(ctx context.Context, s *Snapshot) ([]ManifestEntry, error) {
	base, err := t.entries(ctx, s.BaseManifestList)
	if err != nil {
		return nil, fmt.Errorf("snapshot %d: %w", s.ID, err)
	}
	delta, err := t.entries(ctx, s.DeltaManifestList)
	if err != nil {
		return nil, fmt.Errorf("snapshot %d: %w", s.ID, err)
	}
	live, err := mergeEntries(append(base, delta...))
	if err != nil {
		return nil, fmt.Errorf("table %q: snapshot %d: %w", t.name, s.ID, err)
	}
	return live, nil
}

// Delta returns the entries of snapshot s's delta manifest list: the data
// files it added (KindAdd) and removed (KindDelete).
func (t *Table) Delta(ctx context.Context, s *Snapshot) ([]ManifestEntry, error) {
	es, err := t.entries(ctx, s.DeltaManifestList)
	if err != nil {
		return nil, fmt.Errorf("snapshot %d: %w", s.ID, err)
	}
	return es, nil
}

// Changelog returns snapshot s's changelog files (changelog-producer
// input, lookup or full-compaction); none when it has no changelog
// manifest list.
func (t *Table) Changelog(ctx context.Context, s *Snapshot) ([]ManifestEntry, error) {
	if s.ChangelogManifestList == nil || *s.ChangelogManifestList == "" {
		return nil, nil
	}
	es, err := t.entries(ctx, *s.ChangelogManifestList)
	if err != nil {
		return nil, fmt.Errorf("snapshot %d: changelog: %w", s.ID, err)
	}
	return es, nil
}

// ValueStatsFields are the fields of fileSchema (the schema d was written
// with) that d.ValueStats covers, in order: those ValueStatsCols names, or
// every field when it names none (null in the manifest). An empty but
// present ValueStatsCols means the file has no value statistics.
func (d *DataFile) ValueStatsFields(fileSchema *Schema) ([]Field, error) {
	if d.ValueStatsCols == nil {
		return fileSchema.Fields, nil
	}
	out := make([]Field, 0, len(d.ValueStatsCols))
	for _, n := range d.ValueStatsCols {
		f, ok := fileSchema.FieldByName(n)
		if !ok {
			return nil, fmt.Errorf("%w: data file %s: statistics of column %q the schema lacks", ErrCorrupt, d.FileName, n)
		}
		out = append(out, f)
	}
	return out, nil
}
