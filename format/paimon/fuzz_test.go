package paimon

import (
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"testing"
)

// seedFiles adds the fixture files matching pattern (under the fixture
// warehouse) to f's corpus.
func seedFiles(f *testing.F, pattern string, limit int) {
	f.Helper()
	files, err := filepath.Glob(filepath.Join(fixtureRoot, "warehouse", "*", "*", pattern))
	if err != nil {
		f.Fatal(err)
	}
	for i, p := range files {
		if i == limit {
			break
		}
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// mustClassify fails unless err is nil or wraps one of the package's
// sentinels (a decoder of untrusted bytes never fails otherwise).
func mustClassify(t *testing.T, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) {
		t.Fatalf("unclassified error: %v", err)
	}
}

func FuzzDecodeManifest(f *testing.F) {
	seedFiles(f, "manifest/manifest-[0-9a-f]*", 8)
	f.Fuzz(func(t *testing.T, data []byte) {
		es, err := DecodeManifest(data)
		mustClassify(t, err)
		for _, e := range es {
			if err == nil && e.File.FileName == "" {
				t.Fatal("entry without a file name")
			}
		}
	})
}

func FuzzDecodeManifestList(f *testing.F) {
	seedFiles(f, "manifest/manifest-list-*", 8)
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := DecodeManifestList(data)
		mustClassify(t, err)
	})
}

func FuzzDecodeIndexManifest(f *testing.F) {
	seedFiles(f, "manifest/index-manifest-*", 8)
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := DecodeIndexManifest(data)
		mustClassify(t, err)
	})
}

func FuzzParseSnapshot(f *testing.F) {
	seedFiles(f, "snapshot/snapshot-*", 8)
	seedFiles(f, "tag/tag-*", 2)
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := parseSnapshot(data)
		if err == nil && (s.ID <= 0 || !plainName(s.DeltaManifestList)) {
			t.Fatalf("accepted snapshot %+v", s)
		}
	})
}

func FuzzParsePaimonSchema(f *testing.F) {
	seedFiles(f, "schema/schema-*", 8)
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := parseSchema(data)
		if err != nil {
			return
		}
		if _, err := s.ArrowSchema(); err != nil {
			mustClassify(t, err)
		}
		if _, err := s.TableOptions(); err != nil {
			mustClassify(t, err)
		}
	})
}

func FuzzDecodeBinaryRow(f *testing.F) {
	f.Add([]byte("\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\n\x00\x00\x00\x10\x00\x00\x002026-01-01\x00\x00\x00\x00\x00\x00"))
	f.Add([]byte("\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00abc\x00\x00\x00\x00\x83"))
	types := []DataType{{Root: TypeVarChar}, {Root: TypeInt}, {Root: TypeBigInt}, {Root: TypeDecimal, Precision: 20, Scale: 4},
		{Root: TypeDecimal, Precision: 10, Scale: 2}, {Root: TypeTimestamp, Precision: 6}, {Root: TypeTimestamp, Precision: 3},
		{Root: TypeDate}, {Root: TypeVarBinary}, {Root: TypeDouble}, {Root: TypeBoolean}}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeBinaryRow(data)
		mustClassify(t, err)
		if err != nil {
			return
		}
		for i := range min(r.Arity(), 64) {
			for _, ty := range types {
				v, err := r.Value(i, ty)
				mustClassify(t, err)
				if d, ok := v.(*big.Rat); ok && d == nil {
					t.Fatal("nil decimal")
				}
			}
		}
	})
}

func FuzzDecodeDeletionVector(f *testing.F) {
	f.Add([]byte("\x00\x00\x00\x18^C\xf2\xd0:0\x00\x00\x01\x00\x00\x00\x00\x00\x01\x00\x10\x00\x00\x00\x01\x00\x03\x00\xda-Y\xd3"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := DecodeDeletionVector(data)
		mustClassify(t, err)
	})
}
