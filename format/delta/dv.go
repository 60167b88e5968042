package delta

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"

	"github.com/RoaringBitmap/roaring/v2"
)

// ErrBadDeletionVector is returned (wrapped, with the vector's file or
// storage type) when a deletion vector cannot be read: a descriptor that
// names no vector, a file that is missing or shorter than the descriptor
// says, a checksum, size or cardinality that disagrees, bytes that are not
// the protocol's RoaringBitmapArray, a row index Sluice cannot hold (2³² or
// more), or a storage type Sluice does not read yet (absolute paths, "p").
// When the file system failed, the error also wraps the file system's error
// (fs.ErrNotExist, ...).
var ErrBadDeletionVector = errors.New("delta: bad deletion vector")

// Deletion vector storage types ("Deletion Vector Descriptor Schema").
const (
	// dvRelative is a file beside the table named by a UUID ("u").
	dvRelative = "u"
	// dvInline is a vector held in the log, Z85-encoded ("i").
	dvInline = "i"
	// dvAbsolute is a file named by an absolute path ("p").
	dvAbsolute = "p"
)

const (
	// dvMagic starts a serialized RoaringBitmapArray, little-endian
	// ("Deletion Vector Format").
	dvMagic = 1681511377
	// dvFileVersion is the first byte of a deletion vector file
	// ("Deletion Vector File Storage Format").
	dvFileVersion = 1
	// dvUUIDLen is the length of the Z85-encoded UUID that ends a relative
	// vector's pathOrInlineDv.
	dvUUIDLen = 20
	// dvBucketMin is the least size of one bucket of the 64-bit portable
	// format: a 4-byte key and a 32-bit bitmap's cookie and size.
	dvBucketMin = 4 + 8
)

// ReadDeletionVector returns the rows dv deletes: the indexes, from 0, of
// rows in its data file. fsys is rooted at the table's root folder.
//
// Inline vectors ("i") are decoded from the descriptor; relative vectors
// ("u") are read from <prefix>/deletion_vector_<uuid>.bin in fsys, their
// size and CRC-32 checked. The decoded vector must delete exactly
// dv.Cardinality rows. Absolute vectors ("p") are not supported yet: fsys
// cannot tell whether an absolute URI lies under the table, so they fail
// with ErrBadDeletionVector.
//
// Sluice's deletion masks are 32-bit: a vector that deletes a row at index
// 2³² or more (a data file of more than 4 billion rows) fails with
// ErrBadDeletionVector rather than being truncated.
//
// Every error wraps ErrBadDeletionVector.
func ReadDeletionVector(fsys fs.FS, dv *DeletionVector) (*roaring.Bitmap, error) {
	if dv == nil {
		return nil, fmt.Errorf("%w: no descriptor", ErrBadDeletionVector)
	}
	if dv.Cardinality < 0 || dv.SizeInBytes < 0 {
		return nil, fmt.Errorf("%w: storage type %q: negative cardinality %d or size %d",
			ErrBadDeletionVector, dv.StorageType, dv.Cardinality, dv.SizeInBytes)
	}
	switch dv.StorageType {
	case dvInline:
		bm, err := readInlineDV(dv)
		if err != nil {
			return nil, fmt.Errorf("%w: inline: %w", ErrBadDeletionVector, err)
		}
		return bm, nil
	case dvRelative:
		if fsys == nil {
			return nil, fmt.Errorf("%w: %q: no file system to read it from", ErrBadDeletionVector, dv.PathOrInlineDv)
		}
		name, err := dvFileName(dv.PathOrInlineDv)
		if err != nil {
			return nil, fmt.Errorf("%w: path %q: %w", ErrBadDeletionVector, dv.PathOrInlineDv, err)
		}
		bm, err := readDVFile(fsys, name, dv)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrBadDeletionVector, name, err)
		}
		return bm, nil
	case dvAbsolute:
		return nil, fmt.Errorf("%w: %q: absolute deletion vector paths are not supported yet",
			ErrBadDeletionVector, dv.PathOrInlineDv)
	default:
		return nil, fmt.Errorf("%w: unknown storage type %q", ErrBadDeletionVector, dv.StorageType)
	}
}

// readInlineDV decodes an inline vector.
func readInlineDV(dv *DeletionVector) (*roaring.Bitmap, error) {
	data, err := decodeZ85(dv.PathOrInlineDv)
	if err != nil {
		return nil, err
	}
	if len(data) != int(dv.SizeInBytes) {
		return nil, fmt.Errorf("%d bytes, the descriptor says %d", len(data), dv.SizeInBytes)
	}
	return decodeBitmapArray(data, dv.Cardinality)
}

// dvFileName is the file, relative to the table root, of a relative
// vector: pathOrInlineDv is an optional random prefix (a folder) and the
// 20-character Z85 encoding of a UUID, which names the file
// deletion_vector_<uuid>.bin in the canonical lowercase form.
func dvFileName(pathOrInlineDv string) (string, error) {
	if len(pathOrInlineDv) < dvUUIDLen {
		return "", fmt.Errorf("shorter than the %d characters of an encoded UUID", dvUUIDLen)
	}
	cut := len(pathOrInlineDv) - dvUUIDLen
	u, err := decodeZ85(pathOrInlineDv[cut:])
	if err != nil {
		return "", err
	}
	if len(u) != 16 {
		return "", fmt.Errorf("the encoded UUID has %d bytes, not 16", len(u))
	}
	name := fmt.Sprintf("deletion_vector_%x-%x-%x-%x-%x.bin", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
	if prefix := pathOrInlineDv[:cut]; prefix != "" {
		name = prefix + "/" + name
	}
	if !fs.ValidPath(name) {
		return "", fmt.Errorf("%q is not a path under the table", name)
	}
	return name, nil
}

// readDVFile reads a vector from its file: the file starts with its format
// version (1); at the vector's offset are its size (4 bytes, big-endian),
// the serialized RoaringBitmapArray and the CRC-32 (IEEE, big-endian) of
// those serialized bytes.
//
// An absent offset is taken as 1, the first vector after the version byte,
// as delta-kernel-rs does. (PROTOCOL.md says to read it as 0, which would
// be the version byte; writers always set it.)
func readDVFile(fsys fs.FS, name string, dv *DeletionVector) (*roaring.Bitmap, error) {
	offset := int64(1)
	if dv.Offset != nil {
		offset = int64(*dv.Offset)
	}
	if offset < 1 {
		return nil, fmt.Errorf("offset %d is not after the version byte", offset)
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := int64(dv.SizeInBytes)
	end := offset + 4 + size + 4
	if end > info.Size() {
		return nil, fmt.Errorf("offset %d: the vector and its checksum end at byte %d, the file has %d",
			offset, end, info.Size())
	}
	version, frame, err := readDVFrame(f, offset, 4+size+4)
	if err != nil {
		return nil, fmt.Errorf("offset %d: %w", offset, err)
	}
	if version != dvFileVersion {
		return nil, fmt.Errorf("format version %d, want %d", version, dvFileVersion)
	}
	if got := binary.BigEndian.Uint32(frame); int64(got) != size {
		return nil, fmt.Errorf("offset %d: the file says %d bytes, the descriptor says %d", offset, got, size)
	}
	data := frame[4 : 4+size]
	want := binary.BigEndian.Uint32(frame[4+size:])
	if got := crc32.ChecksumIEEE(data); got != want {
		return nil, fmt.Errorf("offset %d: CRC-32 %#08x, the file says %#08x", offset, got, want)
	}
	bm, err := decodeBitmapArray(data, dv.Cardinality)
	if err != nil {
		return nil, fmt.Errorf("offset %d: %w", offset, err)
	}
	return bm, nil
}

// readDVFrame returns the first byte of f and the n bytes at offset,
// reading at the offset when f is an io.ReaderAt and through the file
// otherwise.
func readDVFrame(f fs.File, offset, n int64) (byte, []byte, error) {
	var version [1]byte
	frame := make([]byte, n)
	if ra, ok := f.(io.ReaderAt); ok {
		if _, err := ra.ReadAt(version[:], 0); err != nil {
			return 0, nil, err
		}
		if _, err := ra.ReadAt(frame, offset); err != nil {
			return 0, nil, err
		}
		return version[0], frame, nil
	}
	if _, err := io.ReadFull(f, version[:]); err != nil {
		return 0, nil, err
	}
	if _, err := io.CopyN(io.Discard, f, offset-1); err != nil {
		return 0, nil, err
	}
	if _, err := io.ReadFull(f, frame); err != nil {
		return 0, nil, err
	}
	return version[0], frame, nil
}

// decodeBitmapArray decodes a serialized RoaringBitmapArray ("Deletion
// Vector Format"): the little-endian magic number 1681511377, then the
// "portable" 64-bit Roaring format, an int64 count of buckets and per
// bucket, in ascending order of keys, a uint32 key (the high 32 bits of its
// values) and a portable 32-bit Roaring bitmap (the low 32 bits). Only
// bucket 0 may hold values: Sluice's masks are 32-bit.
//
// The bitmap must delete cardinality rows; a negative cardinality skips
// that check (the fuzz tests use it). The roaring library trusts what it
// reads, so the bitmap is walked, checked and rebuilt (see rebuild), at a
// cost in proportion to the rows the vector deletes, which the caller reads
// anyway. (The library's own Validate is quadratic in the runs of a
// container, and it rejects run containers that are not smaller than an
// array, which Java's RoaringBitmap writes for three consecutive rows.)
//
// The errors do not wrap a sentinel; the callers add ErrBadDeletionVector.
func decodeBitmapArray(data []byte, cardinality int64) (*roaring.Bitmap, error) {
	if len(data) < 4+8 {
		return nil, fmt.Errorf("%d bytes: too short for the magic number and the bucket count", len(data))
	}
	if magic := binary.LittleEndian.Uint32(data); magic != dvMagic {
		return nil, fmt.Errorf("magic number %d, want %d", magic, dvMagic)
	}
	count := binary.LittleEndian.Uint64(data[4:])
	rest := data[12:]
	if count > uint64(len(rest)/dvBucketMin) {
		return nil, fmt.Errorf("%d buckets in %d bytes", count, len(rest))
	}
	bm := roaring.New()
	r := bytes.NewReader(rest)
	var prev uint64
	for i := uint64(0); i < count; i++ {
		var key [4]byte
		if _, err := io.ReadFull(r, key[:]); err != nil {
			return nil, fmt.Errorf("bucket %d: key: %w", i, err)
		}
		k := uint64(binary.LittleEndian.Uint32(key[:]))
		if i > 0 && k <= prev {
			return nil, fmt.Errorf("bucket %d: key %d after %d (keys must ascend)", i, k, prev)
		}
		if k > math.MaxInt32 {
			return nil, fmt.Errorf("bucket %d: key %d has its most significant bit set", i, k)
		}
		prev = k
		b := roaring.New()
		if _, err := b.ReadFrom(r); err != nil {
			return nil, fmt.Errorf("bucket %d: %w", i, err)
		}
		if b.IsEmpty() {
			continue
		}
		if k != 0 {
			return nil, fmt.Errorf("bucket %d: row indexes of 2^32 and more (key %d): Sluice's deletion masks are 32-bit", i, k)
		}
		bm = b
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("%d bytes after the last bucket", r.Len())
	}
	if cardinality >= 0 && bm.GetCardinality() != uint64(cardinality) {
		return nil, fmt.Errorf("the vector deletes %d rows, the descriptor says %d", bm.GetCardinality(), cardinality)
	}
	return rebuild(bm)
}

// rebuild returns a bitmap the roaring library builds from the values of
// bm, after checking what roaring's deserializer does not: the values
// ascend strictly, each container holds only values under its own key
// (a run may not run past it), no container is empty, and there are as
// many values as the containers claim. Returning a rebuilt bitmap rather
// than bm means no claim bm's containers make (a bitmap container's
// cardinality, say) reaches the callers' bitmap operations.
func rebuild(bm *roaring.Bitmap) (*roaring.Bitmap, error) {
	claimed := bm.GetCardinality()
	out := roaring.New()
	var seen, groups uint64
	var last uint32
	buf := make([]uint32, 4096)
	it := bm.ManyIterator()
	for {
		n := it.NextMany(buf)
		if n == 0 {
			break
		}
		for _, v := range buf[:n] {
			if seen > 0 && v <= last {
				return nil, fmt.Errorf("row %d after row %d: the bitmap is not sorted", v, last)
			}
			if seen == 0 || v>>16 != last>>16 {
				// The first value under a key must be in that key's
				// container: a run of the previous container that went
				// past its key would come first.
				if !bm.Contains(v) {
					return nil, fmt.Errorf("row %d is not in its container: a run goes past its container", v)
				}
				groups++
			}
			last = v
			seen++
			if seen > claimed {
				return nil, fmt.Errorf("the bitmap holds more rows than the %d its containers claim", claimed)
			}
		}
		out.AddMany(buf[:n])
	}
	if seen != claimed {
		return nil, fmt.Errorf("the bitmap holds %d rows, its containers claim %d", seen, claimed)
	}
	if containers := bm.Stats().Containers; containers != groups {
		return nil, fmt.Errorf("the bitmap has %d containers, %d hold rows", containers, groups)
	}
	out.RunOptimize()
	return out, nil
}
