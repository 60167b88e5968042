package paimon

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"path"

	"github.com/RoaringBitmap/roaring/v2"
)

// IndexDeletionVectors is the index type of deletion vector files.
const IndexDeletionVectors = "DELETION_VECTORS"

// IndexEntry is one entry of an index manifest: an index file of a
// partition's bucket.
type IndexEntry struct {
	// Kind is KindAdd or KindDelete.
	Kind FileKind
	// PartitionBytes is the serialized partition.
	PartitionBytes []byte
	// Bucket is the bucket.
	Bucket int
	// IndexType is DELETION_VECTORS or HASH.
	IndexType string
	// FileName names the file in index/.
	FileName string
	// FileSize is its size in bytes.
	FileSize int64
	// RowCount counts its entries.
	RowCount int64
	// DeletionVectors are, for a deletion vector file, where each data
	// file's vector lies in it.
	DeletionVectors []DeletionVectorMeta
}

// DeletionVectorMeta says where a data file's deletion vector lies in a
// deletion vector index file.
type DeletionVectorMeta struct {
	// DataFile names the data file the vector applies to.
	DataFile string
	// Offset is where the vector's length starts in the index file.
	Offset int64
	// Length is the vector's length in bytes (magic number and bitmap).
	Length int64
	// Cardinality is the number of deleted rows, -1 when unknown.
	Cardinality int64
}

// IndexManifest reads snapshot s's index manifest: its live index files
// (an index manifest holds them all, not only the snapshot's changes).
func (t *Table) IndexManifest(ctx context.Context, s *Snapshot) ([]IndexEntry, error) {
	if s.IndexManifest == nil || *s.IndexManifest == "" {
		return nil, nil
	}
	var all []IndexEntry
	err := t.readMeta(ctx, manifestDir, *s.IndexManifest, func(r record) error {
		e, err := decodeIndexEntry(r)
		all = append(all, e)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot %d: %w", s.ID, err)
	}
	type key struct {
		partition, typ, file string
		bucket               int
	}
	live := map[key]int{}
	var out []IndexEntry
	for _, e := range all {
		k := key{string(e.PartitionBytes), e.IndexType, e.FileName, e.Bucket}
		if e.Kind == KindAdd {
			live[k] = len(out)
			out = append(out, e)
		} else if i, ok := live[k]; ok {
			out[i].Kind = -1
			delete(live, k)
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

// DecodeIndexManifest decodes the bytes of an index manifest (untrusted).
func DecodeIndexManifest(data []byte) ([]IndexEntry, error) {
	var out []IndexEntry
	err := readAvro(data, func(r record) error {
		e, err := decodeIndexEntry(r)
		out = append(out, e)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%w: index manifest: %w", ErrCorrupt, err)
	}
	return out, nil
}

func decodeIndexEntry(r record) (e IndexEntry, err error) {
	kind, err := r.int("_KIND")
	if err != nil {
		return e, err
	}
	if kind != int(KindAdd) && kind != int(KindDelete) {
		return e, fmt.Errorf("index entry kind %d", kind)
	}
	e.Kind = FileKind(kind)
	if e.PartitionBytes, err = r.bytes("_PARTITION"); err != nil {
		return e, err
	}
	if _, err = DecodeBinaryRow(e.PartitionBytes); err != nil {
		return e, err
	}
	if e.Bucket, err = r.int("_BUCKET"); err != nil {
		return e, err
	}
	if e.IndexType, err = r.str("_INDEX_TYPE"); err != nil {
		return e, err
	}
	if e.FileName, err = r.str("_FILE_NAME"); err != nil {
		return e, err
	}
	if !plainName(e.FileName) || e.FileName == "" {
		return e, fmt.Errorf("index file name %q is not a plain name", e.FileName)
	}
	if e.FileSize, err = r.long("_FILE_SIZE"); err != nil {
		return e, err
	}
	if e.RowCount, err = r.long("_ROW_COUNT"); err != nil {
		return e, err
	}
	if ext, _ := r.optStr("_EXTERNAL_PATH"); ext != "" {
		return e, fmt.Errorf("%w: index file %s at external path %s", ErrUnsupported, e.FileName, ext)
	}
	ranges, ok := r["_DELETIONS_VECTORS_RANGES"].([]any)
	if r["_DELETIONS_VECTORS_RANGES"] != nil && !ok {
		return e, fmt.Errorf("_DELETIONS_VECTORS_RANGES: %T is not an array", r["_DELETIONS_VECTORS_RANGES"])
	}
	for i, x := range ranges {
		m, ok := x.(map[string]any)
		if !ok {
			return e, fmt.Errorf("_DELETIONS_VECTORS_RANGES[%d]: %T is not a record", i, x)
		}
		rr := record(m)
		var dv DeletionVectorMeta
		if dv.DataFile, err = rr.str("f0"); err != nil {
			return e, err
		}
		if dv.Offset, err = rr.long("f1"); err != nil {
			return e, err
		}
		if dv.Length, err = rr.long("f2"); err != nil {
			return e, err
		}
		if dv.Cardinality, err = rr.optLong("_CARDINALITY", -1); err != nil {
			return e, err
		}
		if dv.Offset < 0 || dv.Length < 4 {
			return e, fmt.Errorf("deletion vector of %s at [%d, +%d)", dv.DataFile, dv.Offset, dv.Length)
		}
		e.DeletionVectors = append(e.DeletionVectors, dv)
	}
	return e, nil
}

// Magic numbers of the deletion vector formats.
const (
	dvMagic32 = 1581511376
	dvMagic64 = 1581511377
)

// ReadDeletionVector reads a data file's deletion vector from the index
// file indexFile (a name in index/): at its offset a big-endian int32
// length, then that many bytes (magic number and a portable 32-bit
// roaring bitmap of the deleted row positions), then their CRC-32.
func (t *Table) ReadDeletionVector(ctx context.Context, indexFile string, dv DeletionVectorMeta) (*roaring.Bitmap, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !plainName(indexFile) || indexFile == "" {
		return nil, fmt.Errorf("%w: table %q: index file name %q", ErrCorrupt, t.name, indexFile)
	}
	f, err := t.fsys.Open(path.Join(indexDir, indexFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: table %q: index file %s is missing", ErrSnapshotExpired, t.name, indexFile)
	}
	if err != nil {
		return nil, fmt.Errorf("table %q: index file %s: %w", t.name, indexFile, err)
	}
	defer f.Close()
	frame := make([]byte, 4+dv.Length+4)
	if ra, ok := f.(io.ReaderAt); ok {
		_, err = ra.ReadAt(frame, dv.Offset)
	} else {
		if _, err = io.CopyN(io.Discard, f, dv.Offset); err == nil {
			_, err = io.ReadFull(f, frame)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: table %q: index file %s: deletion vector of %s at %d: %w", ErrCorrupt, t.name, indexFile, dv.DataFile, dv.Offset, err)
	}
	bm, err := DecodeDeletionVector(frame)
	if err != nil {
		return nil, fmt.Errorf("table %q: index file %s: deletion vector of %s: %w", t.name, indexFile, dv.DataFile, err)
	}
	return bm, nil
}

// DecodeDeletionVector decodes one deletion vector frame (untrusted): the
// big-endian length, the magic number and bitmap, the CRC-32.
func DecodeDeletionVector(frame []byte) (*roaring.Bitmap, error) {
	if len(frame) < 12 {
		return nil, fmt.Errorf("%w: deletion vector of %d bytes", ErrCorrupt, len(frame))
	}
	n := int64(binary.BigEndian.Uint32(frame))
	if n != int64(len(frame)-8) {
		return nil, fmt.Errorf("%w: deletion vector length %d, expected %d", ErrCorrupt, n, len(frame)-8)
	}
	body := frame[4 : 4+n]
	if crc := binary.BigEndian.Uint32(frame[4+n:]); crc != crc32.ChecksumIEEE(body) {
		return nil, fmt.Errorf("%w: deletion vector checksum mismatch", ErrCorrupt)
	}
	switch magic := binary.BigEndian.Uint32(body); magic {
	case dvMagic32:
	case dvMagic64:
		return nil, fmt.Errorf("%w: 64-bit deletion vectors", ErrUnsupported)
	default:
		return nil, fmt.Errorf("%w: deletion vector magic number %d", ErrCorrupt, magic)
	}
	bm := roaring.New()
	if err := safeUnmarshal(bm, body[4:]); err != nil {
		return nil, fmt.Errorf("%w: deletion vector bitmap: %w", ErrCorrupt, err)
	}
	return bm, nil
}

// safeUnmarshal decodes a portable roaring bitmap, turning a panic of the
// decoder on malformed bytes into an error.
func safeUnmarshal(bm *roaring.Bitmap, b []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("decoder failed: %v", p)
		}
	}()
	_, err = bm.FromUnsafeBytes(append([]byte(nil), b...))
	if err == nil {
		err = bm.Validate()
	}
	return err
}
