package delta

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// serializeArray serializes bitmaps as a RoaringBitmapArray with the
// portable 64-bit format, as Delta writers do.
func serializeArray(t testing.TB, bm *roaring64.Bitmap) []byte {
	t.Helper()
	var b bytes.Buffer
	b.Write(binary.LittleEndian.AppendUint32(nil, dvMagic))
	if _, err := bm.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// dvFileOf lays out a deletion vector file holding vectors, returning the
// file and each vector's offset.
func dvFileOf(vectors ...[]byte) ([]byte, []int32) {
	file := []byte{dvFileVersion}
	var offsets []int32
	for _, v := range vectors {
		offsets = append(offsets, int32(len(file)))
		file = binary.BigEndian.AppendUint32(file, uint32(len(v)))
		file = append(file, v...)
		file = binary.BigEndian.AppendUint32(file, crc32.ChecksumIEEE(v))
	}
	return file, offsets
}

// TestReadDeletionVectorExamples decodes the vectors of PROTOCOL.md and of
// delta-kernel-rs's tests.
func TestReadDeletionVectorExamples(t *testing.T) {
	file, err := os.ReadFile(filepath.Join(fixtures, "table-with-dv-small", "deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin"))
	if err != nil {
		t.Fatal(err)
	}
	// PROTOCOL.md's example 1: the random prefix "ab" is a folder.
	fsys := fstest.MapFS{"ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin": {Data: file}}
	one := int32(1)
	bm, err := ReadDeletionVector(fsys, &DeletionVector{StorageType: "u", PathOrInlineDv: "ab^-aqEH.-t@S}K{vb[*k^", Offset: &one, SizeInBytes: 36, Cardinality: 2})
	if err != nil || !slices.Equal(bm.ToArray(), []uint32{0, 9}) {
		t.Fatalf("prefixed vector: %v, %v", bm, err)
	}
	// PROTOCOL.md's example 3 is in Delta Spark's older "native" layout,
	// magic 1681511376 written big-endian, which no reader takes (Spark
	// reads the native layout little-endian; kernel refuses it). This is
	// kernel's corrected copy in the portable layout.
	bm, err = ReadDeletionVector(nil, &DeletionVector{StorageType: "i", PathOrInlineDv: "^Bg9^0rr910000000000iXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", SizeInBytes: 44, Cardinality: 6})
	if err != nil || !slices.Equal(bm.ToArray(), []uint32{3, 4, 7, 11, 18, 29}) {
		t.Fatalf("kernel's inline vector: %v, %v", bm, err)
	}
	_, err = ReadDeletionVector(nil, &DeletionVector{StorageType: "i", PathOrInlineDv: "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", SizeInBytes: 40, Cardinality: 6})
	if !errors.Is(err, ErrBadDeletionVector) || !strings.Contains(err.Error(), "magic") {
		t.Fatalf("PROTOCOL.md's inline example: %v, want a bad magic number", err)
	}
}

// TestReadDeletionVectorErrors: every way a vector can be wrong fails with
// ErrBadDeletionVector and says where.
func TestReadDeletionVectorErrors(t *testing.T) {
	const name = "deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin"
	const encoded = "vBn[lx{q8@P<9BNH/isA"
	good := serializeArray(t, roaring64.BitmapOf(0, 9))
	badMagic := slices.Clone(good)
	badMagic[0] ^= 1
	file, offsets := dvFileOf(serializeArray(t, roaring64.BitmapOf(1)), good, badMagic)
	high := serializeArray(t, roaring64.BitmapOf(1<<32))
	i32 := func(v int32) *int32 { return &v }
	fileDV := func(offset *int32, size int32, card int64) *DeletionVector {
		return &DeletionVector{StorageType: "u", PathOrInlineDv: encoded, Offset: offset, SizeInBytes: size, Cardinality: card}
	}
	with := func(edit func(b []byte)) fs.FS {
		b := slices.Clone(file)
		edit(b)
		return fstest.MapFS{name: {Data: b}}
	}
	fsys := with(func([]byte) {})
	at := offsets[1]
	size := int32(len(good))
	for _, tc := range []struct {
		name string
		fsys fs.FS
		dv   *DeletionVector
		want string // in the message
	}{
		{"no descriptor", fsys, nil, "no descriptor"},
		{"no file system", nil, fileDV(&at, size, 2), "no file system"},
		{"flipped bitmap byte", with(func(b []byte) { b[at+4+20] ^= 0x10 }), fileDV(&at, size, 2), "CRC-32"},
		{"flipped checksum byte", with(func(b []byte) { b[int(at)+4+int(size)] ^= 1 }), fileDV(&at, size, 2), "CRC-32"},
		{"wrong magic", fsys, fileDV(&offsets[2], size, 2), "magic number"},
		{"version", with(func(b []byte) { b[0] = 2 }), fileDV(&at, size, 2), "format version 2"},
		{"size disagrees", fsys, fileDV(&at, size-1, 2), "the descriptor says"},
		{"cardinality disagrees", fsys, fileDV(&at, size, 3), name + ": offset"},
		{"past the end", fsys, fileDV(i32(int32(len(file))-4), size, 2), "the file has"},
		{"offset 0", fsys, fileDV(i32(0), size, 2), "version byte"},
		{"negative size", fsys, fileDV(&at, -1, 2), "negative"},
		{"missing file", fstest.MapFS{}, fileDV(&at, size, 2), name},
		{"bad encoded uuid", fsys, &DeletionVector{StorageType: "u", PathOrInlineDv: "vBn[lx{q8@P<9BNH/is~"}, "Z85"},
		{"short path", fsys, &DeletionVector{StorageType: "u", PathOrInlineDv: "vBn[l"}, "shorter"},
		{"padded uuid", fsys, &DeletionVector{StorageType: "u", PathOrInlineDv: "vBn[lx{q8@P<9BN##000"}, "not 16"},
		{"prefix leaves the table", fsys, &DeletionVector{StorageType: "u", PathOrInlineDv: ".." + encoded}, "not a path under the table"},
		{"absolute", fsys, &DeletionVector{StorageType: "p", PathOrInlineDv: "s3://mytable/" + name, Offset: &at, SizeInBytes: size, Cardinality: 2}, "not supported yet"},
		{"storage type", fsys, &DeletionVector{StorageType: "x"}, `unknown storage type "x"`},
		{"inline size", nil, &DeletionVector{StorageType: "i", PathOrInlineDv: encodeZ85(good), SizeInBytes: size + 1, Cardinality: 2}, "the descriptor says"},
		{"inline cardinality", nil, &DeletionVector{StorageType: "i", PathOrInlineDv: encodeZ85(good), SizeInBytes: size, Cardinality: 1}, "deletes 2 rows, the descriptor says 1"},
		{"inline z85", nil, &DeletionVector{StorageType: "i", PathOrInlineDv: "abc", SizeInBytes: 2}, "multiple of 5"},
		{"inline magic", nil, &DeletionVector{StorageType: "i", PathOrInlineDv: encodeZ85(badMagic), SizeInBytes: size, Cardinality: 2}, "magic number"},
		{"row 2^32", nil, &DeletionVector{StorageType: "i", PathOrInlineDv: encodeZ85(high), SizeInBytes: int32(len(high)), Cardinality: 1}, "32-bit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bm, err := ReadDeletionVector(tc.fsys, tc.dv)
			if !errors.Is(err, ErrBadDeletionVector) {
				t.Fatalf("got %v, %v; want ErrBadDeletionVector", bm, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
		})
	}
	t.Run("missing file wraps fs.ErrNotExist", func(t *testing.T) {
		_, err := ReadDeletionVector(fstest.MapFS{}, fileDV(&at, size, 2))
		if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("good offsets", func(t *testing.T) {
		for i, want := range [][]uint32{{1}, {0, 9}} {
			for _, f := range []fs.FS{fsys, readerOnly{fsys}} {
				bm, err := ReadDeletionVector(f, fileDV(&offsets[i], int32(offsets[i+1]-offsets[i]-8), int64(len(want))))
				if err != nil || !slices.Equal(bm.ToArray(), want) {
					t.Fatalf("vector %d: %v, %v; want %v", i, bm, err, want)
				}
			}
		}
	})
	t.Run("no offset is the first vector", func(t *testing.T) {
		bm, err := ReadDeletionVector(fsys, fileDV(nil, int32(offsets[1]-offsets[0]-8), 1))
		if err != nil || !slices.Equal(bm.ToArray(), []uint32{1}) {
			t.Fatalf("%v, %v", bm, err)
		}
	})
}

// readerOnly hides the io.ReaderAt of its files, so that the vector is
// read through the file.
type readerOnly struct{ fsys fs.FS }

func (r readerOnly) Open(name string) (fs.File, error) {
	f, err := r.fsys.Open(name)
	if err != nil {
		return nil, err
	}
	return struct{ fs.File }{f}, nil
}

// TestDecodeBitmapArray covers the layouts the 64-bit portable format
// allows: empty, sparse keys, containers of every kind, and the damage the
// roaring library does not check.
func TestDecodeBitmapArray(t *testing.T) {
	dense := roaring64.New()
	dense.AddRange(100, 70_000) // a run container and a full one
	for i := uint64(0); i < 5000; i++ {
		dense.Add(200_000 + 2*i) // a bitmap container
	}
	dense.RunOptimize()
	emptyHigh := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint32(nil, dvMagic), 1)
	emptyHigh = binary.LittleEndian.AppendUint32(emptyHigh, 7)  // bucket key 7, no containers
	emptyHigh = append(emptyHigh, 0x3a, 0x30, 0, 0, 0, 0, 0, 0) // no-run cookie, 0 containers
	// A 32-bit portable bitmap with one run container of three values
	// (5, 6, 7), as Java's RoaringBitmap writes for add(5, 8): roaring's
	// own Validate rejects it because an array would be as small.
	run3 := []byte{
		0x3b, 0x30, 0, 0, // run cookie, one container
		1,          // container 0 is a run container
		0, 0, 2, 0, // key 0, cardinality-1 2
		1, 0, 5, 0, 2, 0, // one run: start 5, length-1 2
	}
	arrayOf := func(card uint16, values ...uint16) []byte {
		b := []byte{0x3a, 0x30, 0, 0, 1, 0, 0, 0, 0, 0}
		b = binary.LittleEndian.AppendUint16(b, card-1)
		b = binary.LittleEndian.AppendUint32(b, 16) // offset of container 0
		for _, v := range values {
			b = binary.LittleEndian.AppendUint16(b, v)
		}
		return b
	}
	bucket0 := func(bitmap []byte) []byte {
		b := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint32(nil, dvMagic), 1)
		return append(binary.LittleEndian.AppendUint32(b, 0), bitmap...)
	}
	two := serializeArray(t, roaring64.BitmapOf(3, 5))
	runs := func(iv ...uint16) []byte {
		b := []byte{0x3b, 0x30, 0, 0, 1, 0, 0, 0, 0}
		b = binary.LittleEndian.AppendUint16(b, uint16(len(iv)/2))
		for _, v := range iv {
			b = binary.LittleEndian.AppendUint16(b, v)
		}
		return b
	}
	bitmapClaiming := func(card uint16) []byte {
		b := []byte{0x3a, 0x30, 0, 0, 1, 0, 0, 0, 0, 0}
		b = binary.LittleEndian.AppendUint16(b, card-1)
		b = binary.LittleEndian.AppendUint32(b, 16)
		words := make([]byte, 8192)
		words[0] = 1
		return append(b, words...)
	}
	// Container 0 is a run of 65534..65537, past its key; container 1 holds
	// 65546: the values ascend and two keys hold values.
	runInto := []byte{
		0x3b, 0x30, 1, 0, // run cookie, two containers
		1,          // container 0 is a run container
		0, 0, 3, 0, // key 0, cardinality-1 3
		1, 0, 0, 0, // key 1, cardinality-1 0
		1, 0, 0xfe, 0xff, 3, 0, // one run: start 65534, length-1 3
		10, 0, // container 1: an array of 10
	}
	// Two bitmap containers of 5000 values each, one claiming 4999 and the
	// other 5001: the total is right, the containers are not.
	var cancelling []byte
	var cancellingRows []uint32
	{
		cancelling = []byte{0x3a, 0x30, 0, 0, 2, 0, 0, 0}
		cancelling = append(cancelling, 0, 0)
		cancelling = binary.LittleEndian.AppendUint16(cancelling, 4999-1)
		cancelling = append(cancelling, 1, 0)
		cancelling = binary.LittleEndian.AppendUint16(cancelling, 5001-1)
		cancelling = binary.LittleEndian.AppendUint32(cancelling, 8+8+8)
		cancelling = binary.LittleEndian.AppendUint32(cancelling, 8+8+8+8192)
		for key := range 2 {
			words := make([]byte, 8192)
			for i := range 5000 {
				words[i/8] |= 1 << (i % 8)
				cancellingRows = append(cancellingRows, uint32(key<<16|i))
			}
			cancelling = append(cancelling, words...)
		}
	}
	for _, tc := range []struct {
		name    string
		data    []byte
		want    []uint32 // nil with wantErr
		wantErr string
	}{
		{name: "empty", data: serializeArray(t, roaring64.New()), want: []uint32{}},
		{name: "two", data: two, want: []uint32{3, 5}},
		{name: "dense", data: serializeArray(t, dense), want: func() []uint32 {
			var w []uint32
			for _, v := range dense.ToArray() {
				w = append(w, uint32(v))
			}
			return w
		}()},
		{name: "empty high bucket", data: emptyHigh, want: []uint32{}},
		{name: "java run of three", data: bucket0(run3), want: []uint32{5, 6, 7}},
		{name: "array", data: bucket0(arrayOf(2, 4, 8)), want: []uint32{4, 8}},
		{name: "run past 65535", data: bucket0(runs(65534, 3)), wantErr: "goes past its container"},
		{name: "run into the next container", data: bucket0(runInto), wantErr: "goes past its container"},
		{name: "bitmap claims cancel out", data: bucket0(cancelling), want: cancellingRows},
		{name: "overlapping runs", data: bucket0(runs(5, 3, 6, 1)), wantErr: "not sorted"},
		{name: "empty run container", data: bucket0(runs()), wantErr: "containers"},
		{name: "bitmap container claims more", data: bucket0(bitmapClaiming(5000)), wantErr: "claim 5000"},
		{name: "unsorted array", data: bucket0(arrayOf(2, 8, 4)), wantErr: "not sorted"},
		{name: "repeated value", data: bucket0(arrayOf(2, 4, 4)), wantErr: "not sorted"},
		{name: "high bucket", data: serializeArray(t, roaring64.BitmapOf(1, 1<<32+1)), wantErr: "32-bit"},
		{name: "key with its top bit", data: serializeArray(t, roaring64.BitmapOf(1<<63)), wantErr: "most significant bit"},
		{name: "short", data: two[:10], wantErr: "too short"},
		{name: "truncated", data: two[:len(two)-1], wantErr: "bucket 0"},
		{name: "trailing bytes", data: append(slices.Clone(two), 0), wantErr: "after the last bucket"},
		{name: "too many buckets", data: func() []byte {
			b := slices.Clone(two)
			binary.LittleEndian.PutUint64(b[4:], 1<<40)
			return b
		}(), wantErr: "buckets in"},
		{name: "keys descend", data: func() []byte {
			b := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint32(nil, dvMagic), 2)
			for _, k := range []uint32{3, 2} {
				b = binary.LittleEndian.AppendUint32(b, k)
				b = append(b, 0x3a, 0x30, 0, 0, 0, 0, 0, 0)
			}
			return b
		}(), wantErr: "keys must ascend"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bm, err := decodeBitmapArray(tc.data, -1)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, %v; want an error saying %q", bm, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := bm.ToArray(); !slices.Equal(got, tc.want) && len(got)+len(tc.want) > 0 {
				t.Fatalf("rows %v, want %v", got, tc.want)
			}
			if err := bm.Validate(); err != nil {
				t.Fatalf("the decoded bitmap is not valid: %v", err)
			}
			if bm.GetCardinality() != uint64(len(tc.want)) {
				t.Fatalf("cardinality %d, want %d", bm.GetCardinality(), len(tc.want))
			}
			if _, err := decodeBitmapArray(tc.data, int64(len(tc.want))+1); err == nil {
				t.Fatal("a wrong cardinality passed")
			}
		})
	}
}

// FuzzDecodeBitmapArray feeds arbitrary bytes to the RoaringBitmapArray
// decoder: it never panics, and a bitmap it accepts is well formed (its
// values ascend and it serializes back to a vector that decodes to it).
func FuzzDecodeBitmapArray(f *testing.F) {
	f.Add(serializeArray(f, roaring64.BitmapOf(0, 9)))
	f.Add(serializeArray(f, roaring64.BitmapOf(1<<32)))
	dense := roaring64.New()
	dense.AddRange(10, 5000)
	dense.RunOptimize()
	f.Add(serializeArray(f, dense))
	f.Add([]byte("\xd1\xd39d\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00;0\x00\x00\x01\x00\x00\x02\x00\x01\x00\x05\x00\x02\x00"))
	for _, s := range []string{
		"^Bg9^0rr910000000000iXQKl0rr91000935c8Xg000311onP9",
		"^Bg9^0rr910000000000iXQKl0rr91000315c8Xg000f5",
		"^Bg9^0rr910000000000iXQKl0rr91000005c8Xg##093",
	} {
		b, err := decodeZ85(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		bm, err := decodeBitmapArray(data, -1)
		if err != nil {
			return
		}
		values := bm.ToArray()
		if !slices.IsSorted(values) || uint64(len(values)) != bm.GetCardinality() {
			t.Fatalf("accepted a malformed bitmap: %d values, cardinality %d", len(values), bm.GetCardinality())
		}
		if len(values) < 100_000 {
			if err := bm.Validate(); err != nil {
				t.Fatalf("accepted a bitmap roaring says is malformed: %v", err)
			}
		}
		again := roaring64.New()
		for _, v := range values {
			again.Add(uint64(v))
		}
		back, err := decodeBitmapArray(serializeArray(t, again), int64(len(values)))
		if err != nil || !back.Equals(bm) {
			t.Fatalf("round trip: %v, %v", back, err)
		}
	})
}
