package cli

import "testing"

// TestSummaryRows: the ROWS of 'sluice snapshots' from a snapshot's
// summary, for each kind of snapshot: copy-on-write, position deletes and
// deletion vectors, equality deletes, and a Delta version whose removes
// have no statistics.
func TestSummaryRows(t *testing.T) {
	for _, tt := range []struct {
		name    string
		summary map[string]string
		want    string
	}{
		{"append", map[string]string{"added-data-files": "1", "added-records": "5"}, "+5"},
		{"copy-on-write", map[string]string{"added-records": "3", "deleted-data-files": "1", "deleted-records": "4"}, "+3 -4"},
		{"position deletes", map[string]string{"added-delete-files": "1", "added-position-deletes": "2"}, "-2"},
		{"merge-on-read update", map[string]string{"added-records": "2", "added-position-deletes": "2"}, "+2 -2"},
		{"equality deletes", map[string]string{"added-delete-files": "1", "added-equality-deletes": "3"}, "-3 keys"},
		{"both deletes", map[string]string{"added-position-deletes": "1", "added-equality-deletes": "2"}, "-1 -2 keys"},
		{"removes without statistics", map[string]string{"added-data-files": "1", "added-records": "1",
			"deleted-data-files": "1"}, "+1 -?"},
		{"adds without statistics", map[string]string{"added-data-files": "2"}, "+?"},
		{"nothing", nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := summaryRows(tt.summary); got != tt.want {
				t.Fatalf("summaryRows(%v) = %q, want %q", tt.summary, got, tt.want)
			}
		})
	}
}
