package paimon

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// fixtureRoot holds the tables Paimon's own writers wrote and what their
// reads returned (testdata/paimon/README.md).
const fixtureRoot = "../../testdata/paimon"

// fixtureTable is expected/<db>/<table>/table.json.
type fixtureTable struct {
	Table     string `json:"table"`
	Writer    string `json:"writer"`
	Snapshots []struct {
		ID         int64  `json:"id"`
		CommitKind string `json:"commitKind"`
		SchemaID   int64  `json:"schemaId"`
		Rows       int    `json:"rows"`
		Changes    bool   `json:"changes"`
		Expired    bool   `json:"expired"`
	} `json:"snapshots"`
	Tags []string `json:"tags"`
}

type fixture struct {
	db, name, expected string
	meta               fixtureTable
}

func fixtures(t *testing.T) []fixture {
	t.Helper()
	metas, err := filepath.Glob(filepath.Join(fixtureRoot, "expected", "*", "*", "table.json"))
	if err != nil || len(metas) == 0 {
		t.Fatalf("no fixtures under %s: %v", fixtureRoot, err)
	}
	var out []fixture
	for _, m := range metas {
		dir := filepath.Dir(m)
		f := fixture{db: filepath.Base(filepath.Dir(dir)), name: filepath.Base(dir), expected: dir}
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &f.meta); err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		out = append(out, f)
	}
	return out
}

func (f fixture) open(t *testing.T, mem memory.Allocator) *Table {
	t.Helper()
	root := filepath.Join(fixtureRoot, "warehouse", f.db+".db", f.name)
	tbl, err := Open(context.Background(), os.DirFS(root), f.db+"."+f.name, WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func readLines(t *testing.T, p string) []string {
	t.Helper()
	fh, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out []string
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, normalize(t, sc.Bytes()))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// refusedEngine is the merge engine a fixture's table uses that the
// package refuses, if any.
func refusedEngine(t *testing.T, tbl *Table) string {
	t.Helper()
	ids, err := tbl.SchemaIDs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s, err := tbl.Schema(context.Background(), ids[len(ids)-1])
	if err != nil {
		t.Fatal(err)
	}
	o, err := s.TableOptions()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.PrimaryKeys) > 0 && o.MergeEngine == MergeFirstRow {
		return o.MergeEngine
	}
	return ""
}

// TestFixtureStates reads every snapshot of every fixture table and
// compares its full state with what the writer's own read returned.
func TestFixtureStates(t *testing.T) {
	checked := 0
	for _, f := range fixtures(t) {
		t.Run(f.db+"."+f.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			tbl := f.open(t, mem)
			ctx := context.Background()
			engine := refusedEngine(t, tbl)
			for _, s := range f.meta.Snapshots {
				snap, err := tbl.Snapshot(ctx, s.ID)
				if s.Expired {
					if !errors.Is(err, ErrSnapshotExpired) {
						t.Errorf("snapshot %d: got %v, want ErrSnapshotExpired", s.ID, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("snapshot %d: %v", s.ID, err)
				}
				if snap.CommitKind != s.CommitKind || snap.SchemaID != s.SchemaID {
					t.Errorf("snapshot %d: %s schema %d, want %s schema %d", s.ID, snap.CommitKind, snap.SchemaID, s.CommitKind, s.SchemaID)
				}
				var batches []arrow.RecordBatch
				err = tbl.ReadSnapshot(ctx, snap, func(b arrow.RecordBatch) error {
					batches = append(batches, b)
					return nil
				})
				got := canonRows(t, batches, false)
				for _, b := range batches {
					b.Release()
				}
				if engine != "" {
					if !errors.Is(err, ErrUnsupportedMergeEngine) {
						t.Fatalf("snapshot %d: got %v, want ErrUnsupportedMergeEngine for %s", s.ID, err, engine)
					}
					continue
				}
				if err != nil {
					t.Fatalf("snapshot %d: %v", s.ID, err)
				}
				want := readLines(t, filepath.Join(f.expected, "state", strconv.FormatInt(s.ID, 10)+".jsonl"))
				if d := diffLines(got, want); d != "" {
					t.Errorf("snapshot %d (%s): state differs from %s's read:\n%s", s.ID, s.CommitKind, f.meta.Writer, d)
				}
				checked++
			}
		})
	}
	t.Logf("%d snapshot states checked", checked)
}

// diffLines describes how two sorted multisets of lines differ (empty
// when equal).
func diffLines(got, want []string) string {
	var extra, missing []string
	i, j := 0, 0
	for i < len(got) || j < len(want) {
		switch {
		case j == len(want) || (i < len(got) && got[i] < want[j]):
			extra = append(extra, got[i])
			i++
		case i == len(got) || want[j] < got[i]:
			missing = append(missing, want[j])
			j++
		default:
			i++
			j++
		}
	}
	if len(extra) == 0 && len(missing) == 0 {
		return ""
	}
	const show = 5
	s := strconv.Itoa(len(got)) + " rows read, " + strconv.Itoa(len(want)) + " expected\n"
	for k, l := range extra {
		if k == show {
			break
		}
		s += "  unexpected " + l + "\n"
	}
	for k, l := range missing {
		if k == show {
			break
		}
		s += "  missing    " + l + "\n"
	}
	return s
}
