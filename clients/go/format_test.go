package sluice_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	sluice "github.com/sluicefeed/sluice/clients/go"
)

// TestStringShowsIDs prints the types that hold optional snapshot ids with
// every verb a user reaches for: the id shows, never a pointer's address,
// and every field is named (a field added later without its String fails
// here).
func TestStringShowsIDs(t *testing.T) {
	id, parent, from := int64(3055729675574597004), int64(-8), int64(1)
	plan := &sluice.Plan{Table: "a.b", FromSnapshot: &from, ToSnapshot: &id, Columns: []string{"id"},
		Snapshots: []sluice.SnapshotPlan{{Snapshot: id, Strategy: "append", Files: []sluice.FilePlan{{Path: "f.parquet"}}}},
		FilesRead: 1}
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"CommitSeq", sluice.CommitSeq{Table: "a.b", CommitSeq: 7, Snapshot: &id, TimestampMs: 1767225600000},
			"{Table:a.b CommitSeq:7 Snapshot:3055729675574597004 TimestampMs:1767225600000 Ref:<nil>}"},
		{"CommitSeq on a branch", sluice.CommitSeq{Table: "a.b", CommitSeq: 7, Snapshot: &id,
			Ref: &sluice.Ref{Name: "audit", Kind: "branch", Snapshot: &id}},
			"{Table:a.b CommitSeq:7 Snapshot:3055729675574597004 TimestampMs:0 Ref:{Name:audit Kind:branch " +
				"Snapshot:3055729675574597004}}"},
		{"Ref of an empty branch", sluice.Ref{Name: "audit", Kind: "branch"}, "{Name:audit Kind:branch Snapshot:<nil>}"},
		{"CommitSeq without snapshots", sluice.CommitSeq{Table: "a.b"},
			"{Table:a.b CommitSeq:0 Snapshot:<nil> TimestampMs:0 Ref:<nil>}"},
		{"TableInfo", sluice.TableInfo{Name: "a.b", Format: "iceberg", FormatVersion: 2, CurrentSnapshot: &id, CommitSeq: 3},
			"{Name:a.b Format:iceberg FormatVersion:2 CurrentSnapshot:3055729675574597004 CommitSeq:3 Backend:<nil>}"},
		{"TableInfo through Spark", sluice.TableInfo{Name: "a.b", Format: "delta", Backend: &sluice.BackendVerdict{
			Backend: "spark", Chosen: "spark_native", ServerVersion: "4.2.0", NativeExpected: true, NativeUsable: true}},
			"{Name:a.b Format:delta FormatVersion:0 CurrentSnapshot:<nil> CommitSeq:0 Backend:{Backend:spark Remote: " +
				"Chosen:spark_native ServerVersion:4.2.0 NativeExpected:true NativeUsable:true FellBack:false Reason:}}"},
		{"TableInfo without snapshots", sluice.TableInfo{Name: "a.b"},
			"{Name:a.b Format: FormatVersion:0 CurrentSnapshot:<nil> CommitSeq:0 Backend:<nil>}"},
		{"Snapshot", sluice.Snapshot{ID: id, Parent: &parent, SequenceNumber: 2, CommitSeq: 2, TimestampMs: 5,
			Operation: "append", Summary: map[string]string{"b": "2", "a": "1"}},
			"{ID:3055729675574597004 Parent:-8 SequenceNumber:2 CommitSeq:2 TimestampMs:5 Operation:append " +
				"Summary:map[a:1 b:2] SchemaID:0}"},
		{"first Snapshot", sluice.Snapshot{ID: 1},
			"{ID:1 Parent:<nil> SequenceNumber:0 CommitSeq:0 TimestampMs:0 Operation: Summary:map[] SchemaID:0}"},
		{"Plan", plan,
			"{Table:a.b FromSnapshot:1 ToSnapshot:3055729675574597004 Columns:[id] Identity:[] " +
				"Snapshots:[{Snapshot:3055729675574597004 SequenceNumber:0 CommitSeq:0 TimestampMs:0 Operation: " +
				"Strategy:append Files:[{Path:f.parquet Content: Role: RecordCount:0 FileSizeBytes:0}] FilesSkipped:0 " +
				"BytesRead:0 RecordsRead:0}] FilesRead:1 FilesSkipped:0 BytesRead:0 RecordsRead:0 Backend:<nil> Pairing: Ref:<nil>}"},
		{"Plan of the whole history", sluice.Plan{Table: "a.b"},
			"{Table:a.b FromSnapshot:<nil> ToSnapshot:<nil> Columns:[] Identity:[] Snapshots:[] FilesRead:0 " +
				"FilesSkipped:0 BytesRead:0 RecordsRead:0 Backend:<nil> Pairing: Ref:<nil>}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, verb := range []string{"%v", "%+v", "%s"} {
				if got := fmt.Sprintf(verb, tt.v); got != tt.want {
					t.Errorf("Sprintf(%q) = %s\nwant %s", verb, got, tt.want)
				}
			}
			if got := fmt.Sprint([]any{tt.v}); got != "["+tt.want+"]" {
				t.Errorf("in a slice: %s", got)
			}
			typ := reflect.Indirect(reflect.ValueOf(tt.v)).Type()
			for f := range typ.Fields() {
				if !strings.Contains(tt.want, f.Name+":") {
					t.Errorf("%s.String lacks the field %s", typ.Name(), f.Name)
				}
			}
		})
	}
}
