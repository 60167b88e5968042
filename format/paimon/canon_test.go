package paimon

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sluicefeed/sluice/internal/testkit/paimonfx"
)

// The canonical row encoding of testdata/paimon/README.md, as package
// paimonfx renders it (the engine's tests share it).

// canonRows renders the rows of batches as canonical lines, sorted; kinds
// adds each row's _row_kind from the batch's _VALUE_KIND column, which is
// then left out with _SEQUENCE_NUMBER.
func canonRows(t *testing.T, batches []arrow.RecordBatch, kinds bool) []string {
	t.Helper()
	out, err := paimonfx.Rows(batches, kinds)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// diffLines describes how two sorted multisets of lines differ (empty
// when equal).
func diffLines(got, want []string) string { return paimonfx.Diff(got, want) }
