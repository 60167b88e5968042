package delta

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

func TestCheckProtocol(t *testing.T) {
	for _, tc := range []struct {
		name    string
		p       Protocol
		refused []string // named in the error; nil when readable
	}{
		{name: "reader 1", p: Protocol{MinReaderVersion: 1, MinWriterVersion: 2}},
		{name: "reader 1, writer features", p: Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{"inCommitTimestamp", "someFutureWriterFeature"}}},
		{name: "reader 2 (column mapping)", p: Protocol{MinReaderVersion: 2, MinWriterVersion: 5}},
		{name: "reader 3, supported features", p: Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
			ReaderFeatures: []string{"deletionVectors", "columnMapping", "timestampNtz", "v2Checkpoint", "typeWidening", "typeWidening-preview", "vacuumProtocolCheck"}}},
		{name: "reader 3, no features", p: Protocol{MinReaderVersion: 3, MinWriterVersion: 7}},
		{name: "variant (its columns are refused by the schema)", p: Protocol{MinReaderVersion: 3, ReaderFeatures: []string{"deletionVectors", "variantType"}}},
		{name: "catalog managed", p: Protocol{MinReaderVersion: 3, ReaderFeatures: []string{"deletionVectors", "catalogManaged"}}, refused: []string{"catalogManaged"}},
		{name: "several unknown", p: Protocol{MinReaderVersion: 3, ReaderFeatures: []string{"catalogManaged", "deletionVectors", "variantType-preview", "catalogManaged"}},
			refused: []string{"catalogManaged, variantType-preview"}},
		{name: "reader 4", p: Protocol{MinReaderVersion: 4}, refused: []string{"minReaderVersion 4"}},
		{name: "reader 0", p: Protocol{}, refused: []string{"minReaderVersion 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckProtocol(tc.p)
			if tc.refused == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantErr(t, err, ErrUnsupportedFeature, tc.refused...)
			err = (&Table{name: "orders"}).CheckProtocol(tc.p)
			wantErr(t, err, ErrUnsupportedFeature, append(tc.refused, `"orders"`)...)
		})
	}
}

// TestCheckProtocolFeatureList keeps the supported reader features to the
// list Sluice was reviewed against.
func TestCheckProtocolFeatureList(t *testing.T) {
	for _, f := range []string{"deletionVectors", "columnMapping", "timestampNtz", "v2Checkpoint", "typeWidening",
		"typeWidening-preview", "vacuumProtocolCheck", "inCommitTimestamp", "rowTracking", "domainMetadata",
		"changeDataFeed", "checkConstraints", "generatedColumns", "identityColumns", "invariants", "appendOnly",
		"allowColumnDefaults", "icebergCompatV1", "icebergCompatV2", "clustering"} {
		if err := CheckProtocol(Protocol{MinReaderVersion: 3, ReaderFeatures: []string{f}}); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	for _, f := range []string{"variantType-preview", "variantShredding-preview", "catalogManaged", "catalogOwned-preview", "geospatial", ""} {
		if err := CheckProtocol(Protocol{MinReaderVersion: 3, ReaderFeatures: []string{f}}); err == nil {
			t.Errorf("%q accepted", f)
		}
	}
	if len(supportedReaderFeatures) != 21 {
		t.Errorf("%d supported reader features, want 21", len(supportedReaderFeatures))
	}
}

// TestSnapshotRefusesUnsupportedFeature upgrades a copy of a table to a
// protocol with a reader feature Sluice does not read: its snapshots from
// then on are refused, naming the table, the version and the feature;
// Metadata still answers (the engine checks the protocol with it).
func TestSnapshotRefusesUnsupportedFeature(t *testing.T) {
	ctx := context.Background()
	dir := copyTestTable(t, "table-with-dv-small")
	mustWrite(t, logPath(dir, "00000000000000000002.json"), strings.Join([]string{
		`{"commitInfo":{"timestamp":1677811200000,"operation":"UPGRADE PROTOCOL"}}`,
		`{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors","catalogManaged"],"writerFeatures":["deletionVectors","catalogManaged"]}}`,
	}, "\n"))
	mustWrite(t, logPath(dir, "00000000000000000003.json"), `{"commitInfo":{"timestamp":1677811300000,"operation":"WRITE"}}`)
	// One Table reads version after version (from its caches), the others
	// one version each.
	follower := openDir(t, dir, "dv-variant")
	if _, err := follower.Snapshot(ctx, 1); err != nil {
		t.Fatalf("Snapshot(1): %v", err)
	}
	for v := int64(2); v <= 3; v++ {
		for _, tbl := range []*Table{follower, openDir(t, dir, "dv-variant"), openDir(t, dir, "dv-variant")} {
			p, _, err := tbl.Metadata(ctx, v)
			if err != nil {
				t.Fatal(err)
			}
			wantErr(t, tbl.CheckProtocol(p), ErrUnsupportedFeature, "catalogManaged", `"dv-variant"`)
			_, err = tbl.Snapshot(ctx, v)
			wantErr(t, err, ErrUnsupportedFeature, `"dv-variant"`, fmt.Sprintf("version %d", v), "catalogManaged")
		}
	}
}
