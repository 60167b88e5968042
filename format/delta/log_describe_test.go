package delta

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzSummary: parseCommitSummary never panics, and describes every
// commit file parseCommit reads as parseCommit's commit is described: the
// same time, operation and summary.
func FuzzSummary(f *testing.F) {
	files, err := filepath.Glob(filepath.Join(testTables, "*", logDir, "*.json"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no commit files under %s: %v", testTables, err)
	}
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"add":{"path":"a","stats":"{\"numRecords\":3}","deletionVector":{"cardinality":1}}}` + "\n" +
		`{"remove":{"path":"a","stats":"{\"numRecords\":3}"}}` + "\n" +
		`{"commitInfo":{"timestamp":5,"inCommitTimestamp":7,"operation":"DELETE","operationMetrics":{"x":"1"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, serr := parseCommitSummary(1, data)
		c, err := parseCommit(1, data)
		if err != nil {
			return // the summary reads fewer fields, and may read what parseCommit refuses
		}
		if serr != nil {
			t.Fatalf("parseCommit reads %q, parseCommitSummary fails: %v", data, serr)
		}
		if got, want := describeCommit(s), describeCommit(c); !reflect.DeepEqual(got, want) {
			t.Fatalf("%q is described as %+v, want %+v", data, got, want)
		}
	})
}
