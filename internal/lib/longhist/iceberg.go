package longhist

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// IcebergParams shape a long Iceberg history: Snapshots commits that add
// Files data files between them (spread evenly), with the manifests merged
// every MergeEvery snapshots, as Java's manifest merge keeps a table's
// manifest lists short. The last commit is an overwrite that replaces one
// data file of the first snapshot (a copy-on-write rewrite), the others
// are appends.
type IcebergParams struct {
	Snapshots  int `json:"snapshots"`
	Files      int `json:"files"`
	MergeEvery int `json:"merge_every"`
}

// DefaultMergeEvery is how many snapshots' manifests a merge joins when
// IcebergParams.MergeEvery is 0 (Java's commit.manifest.min-count-to-merge
// is 100).
const DefaultMergeEvery = 100

// IcebergTable is the name of the generated Iceberg table.
const IcebergTable = "long.history"

// Iceberg is a written long Iceberg history.
type Iceberg struct {
	IcebergParams
	// IDs are the snapshot ids, in commit order.
	IDs []int64 `json:"ids"`
	// Metadata is the table's metadata file.
	Metadata string `json:"metadata"`
}

// LastAppend is the one-commit window of the last append: its parent and
// itself.
func (h *Iceberg) LastAppend() (from, to int64) {
	n := len(h.IDs)
	return h.IDs[n-3], h.IDs[n-2]
}

// LastOverwrite is the one-commit window of the closing overwrite.
func (h *Iceberg) LastOverwrite() (from, to int64) {
	n := len(h.IDs)
	return h.IDs[n-2], h.IDs[n-1]
}

// Validate checks that the parameters make a history.
func (p IcebergParams) Validate() error {
	if p.Snapshots < 3 || p.Files < p.Snapshots-1 || p.MergeEvery < 0 {
		return fmt.Errorf("%w: %d snapshots of %d files, merged every %d: want at least 3 snapshots and a file "+
			"per append", ErrInvalidParams, p.Snapshots, p.Files, p.MergeEvery)
	}
	return nil
}

// WriteIceberg writes the long history of p into cat (a local warehouse)
// as the table IcebergTable. Manifests and manifest lists are real Avro
// files written with iceberg-go; the data files they name are not written
// (planning reads no data file).
func WriteIceberg(ctx context.Context, cat *catalog.Catalog, p IcebergParams) (*Iceberg, error) {
	if p.MergeEvery == 0 {
		p.MergeEvery = DefaultMergeEvery
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	sc := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "v", Type: iceberg.PrimitiveTypes.String})
	tbl, err := tablewrite.CreateTable(ctx, cat, IcebergTable, sc,
		icecatalog.WithProperties(iceberg.Properties{"format-version": "2"}))
	if err != nil {
		return nil, err
	}
	w, err := newIcebergWriter(tbl, p)
	if err != nil {
		return nil, err
	}
	updates, err := w.write()
	if err != nil {
		return nil, err
	}
	ident, err := catalog.ParseName(IcebergTable)
	if err != nil {
		return nil, err
	}
	_, loc, err := cat.Iceberg().CommitTable(ctx, ident,
		[]table.Requirement{table.AssertTableUUID(tbl.Metadata().TableUUID())}, updates)
	if err != nil {
		return nil, fmt.Errorf("commit the history of %s: %w", IcebergTable, err)
	}
	return &Iceberg{IcebergParams: p, IDs: w.ids, Metadata: loc}, nil
}

// icebergWriter writes the manifests and manifest lists of a history.
type icebergWriter struct {
	p      IcebergParams
	spec   iceberg.PartitionSpec
	schema *iceberg.Schema
	// meta is the folder of the metadata files, data the prefix of the
	// data files' locations.
	meta, data string
	ids        []int64
	// created is the table's creation time; snapshot k commits k
	// milliseconds after it.
	created int64
	// merged are the manifests that merges wrote, recent the snapshots'
	// own manifests since the last merge, each with its live entries.
	merged, recent               []iceberg.ManifestFile
	mergedEntries, recentEntries [][]iceberg.ManifestEntry
	// first are the entries of the first snapshot (the overwrite replaces
	// one of its files).
	first []iceberg.ManifestEntry
}

func newIcebergWriter(tbl *table.Table, p IcebergParams) (*icebergWriter, error) {
	u, err := url.Parse(tbl.Location())
	if err != nil {
		return nil, err
	}
	loc := tbl.Location()
	if u.Scheme == "file" || u.Scheme == "" {
		loc = u.Path
	}
	w := &icebergWriter{p: p, spec: tbl.Spec(), schema: tbl.Schema(), meta: filepath.Join(loc, "metadata"),
		data: strings.TrimSuffix(tbl.Location(), "/") + "/data/", created: tbl.Metadata().LastUpdatedMillis()}
	return w, os.MkdirAll(w.meta, 0o755)
}

func (w *icebergWriter) write() ([]table.Update, error) {
	var updates []table.Update
	appends := w.p.Snapshots - 1
	written, live := 0, 0
	for k := 1; k <= w.p.Snapshots; k++ {
		id := int64(1000 + k)
		seq := int64(k)
		var parent *int64
		if k > 1 {
			prev := w.ids[len(w.ids)-1]
			parent = &prev
		}
		var (
			own     []iceberg.ManifestEntry
			summary table.Summary
		)
		if k <= appends {
			n := (k*w.p.Files)/appends - written
			written += n
			for i := range n {
				df, err := w.dataFile(k, i)
				if err != nil {
					return nil, err
				}
				own = append(own, iceberg.NewManifestEntryBuilder(iceberg.EntryStatusADDED, &id, df).
					SequenceNum(seq).FileSequenceNum(seq).Build())
			}
			live += n
			summary = table.Summary{Operation: table.OpAppend, Properties: iceberg.Properties{
				"added-data-files": strconv.Itoa(n), "added-records": strconv.Itoa(n * fileRecords)}}
		} else {
			// The overwrite: the first snapshot's first file out, a new one in.
			gone := w.first[0]
			df, err := w.dataFile(k, 0)
			if err != nil {
				return nil, err
			}
			firstSeq := int64(1)
			own = []iceberg.ManifestEntry{
				iceberg.NewManifestEntryBuilder(iceberg.EntryStatusDELETED, &id, gone.DataFile()).
					SequenceNum(firstSeq).FileSequenceNum(firstSeq).Build(),
				iceberg.NewManifestEntryBuilder(iceberg.EntryStatusADDED, &id, df).
					SequenceNum(seq).FileSequenceNum(seq).Build(),
			}
			summary = table.Summary{Operation: table.OpOverwrite, Properties: iceberg.Properties{
				"added-data-files": "1", "deleted-data-files": "1", "added-records": strconv.Itoa(fileRecords),
				"deleted-records": strconv.Itoa(fileRecords)}}
		}
		// The totals every writer records (the planner reads
		// total-delete-files).
		summary.Properties["total-data-files"] = strconv.Itoa(live)
		summary.Properties["total-records"] = strconv.Itoa(live * fileRecords)
		summary.Properties["total-delete-files"] = "0"
		summary.Properties["total-position-deletes"] = "0"
		summary.Properties["total-equality-deletes"] = "0"
		if k == 1 {
			w.first = own
		}
		list, err := w.manifests(k, id, seq, own)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(w.meta, fmt.Sprintf("snap-%d-list.avro", id))
		var buf bytes.Buffer
		if err := iceberg.WriteManifestList(2, &buf, id, parent, &seq, 0, list); err != nil {
			return nil, err
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			return nil, err
		}
		schemaID := w.schema.ID
		snap := table.Snapshot{SnapshotID: id, ParentSnapshotID: parent, SequenceNumber: seq,
			TimestampMs: w.created + int64(k), ManifestList: path, Summary: &summary, SchemaID: &schemaID}
		updates = append(updates, table.NewAddSnapshotUpdate(&snap))
		w.ids = append(w.ids, id)
	}
	last := w.ids[len(w.ids)-1]
	updates = append(updates, table.NewSetSnapshotRefUpdate(table.MainBranch, last, table.BranchRef, -1, -1, -1))
	return updates, nil
}

// fileRecords is the record count every data file claims.
const fileRecords = 100

func (w *icebergWriter) dataFile(k, i int) (iceberg.DataFile, error) {
	b, err := iceberg.NewDataFileBuilder(w.spec, iceberg.EntryContentData,
		fmt.Sprintf("%sf-%06d-%04d.parquet", w.data, k, i), iceberg.ParquetFile, nil, nil, nil, fileRecords, 1024)
	if err != nil {
		return nil, err
	}
	return b.Build(), nil
}

// manifests writes snapshot k's own manifest and returns its manifest
// list. Every MergeEvery snapshots the manifest also holds the files the
// snapshots since the last merge added, as existing entries, and replaces
// their manifests in the list; the overwrite rewrites the manifest that
// held the file it removes.
func (w *icebergWriter) manifests(k int, id, seq int64, own []iceberg.ManifestEntry) ([]iceberg.ManifestFile, error) {
	entries := own
	var replaced []iceberg.ManifestEntry
	switch {
	case k == w.p.Snapshots:
		// The first manifest of the list holds the removed file.
		if len(w.merged) > 0 {
			replaced, w.merged, w.mergedEntries = w.mergedEntries[0], w.merged[1:], w.mergedEntries[1:]
		} else {
			replaced, w.recent, w.recentEntries = w.recentEntries[0], w.recent[1:], w.recentEntries[1:]
		}
		gone := own[0].DataFile().FilePath()
		for _, e := range replaced {
			if e.DataFile().FilePath() != gone {
				entries = append(entries, existing(e))
			}
		}
	case k%w.p.MergeEvery == 0:
		for _, es := range w.recentEntries {
			for _, e := range es {
				entries = append(entries, existing(e))
			}
		}
		w.recent, w.recentEntries = nil, nil
	}
	path := filepath.Join(w.meta, fmt.Sprintf("snap-%d-m0.avro", id))
	var buf bytes.Buffer
	mf, err := iceberg.WriteManifest(path, &buf, 2, w.spec, w.schema, id, entries)
	if err != nil {
		return nil, fmt.Errorf("manifest of snapshot %d: %w", id, err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return nil, err
	}
	minSeq := seq
	for _, e := range entries {
		minSeq = min(minSeq, e.SequenceNum())
	}
	mf = withSequence(mf, seq, minSeq)
	live := make([]iceberg.ManifestEntry, 0, len(entries))
	for _, e := range entries {
		if e.Status() != iceberg.EntryStatusDELETED {
			live = append(live, e)
		}
	}
	if k%w.p.MergeEvery == 0 && k != w.p.Snapshots {
		w.merged, w.mergedEntries = append(w.merged, mf), append(w.mergedEntries, live)
	} else {
		w.recent, w.recentEntries = append(w.recent, mf), append(w.recentEntries, live)
	}
	return append(append([]iceberg.ManifestFile(nil), w.merged...), w.recent...), nil
}

// existing is entry e as a later manifest keeps it.
func existing(e iceberg.ManifestEntry) iceberg.ManifestEntry {
	sid := e.SnapshotID()
	return iceberg.NewManifestEntryBuilder(iceberg.EntryStatusEXISTING, &sid, e.DataFile()).
		SequenceNum(e.SequenceNum()).FileSequenceNum(*e.FileSequenceNum()).Build()
}

// withSequence returns mf with the sequence number of the snapshot that
// wrote it and the lowest of its entries' (the manifest list writer
// assigns them to manifests that have none; a manifest carried into a
// later list keeps its own).
func withSequence(mf iceberg.ManifestFile, seq, minSeq int64) iceberg.ManifestFile {
	return iceberg.NewManifestFile(2, mf.FilePath(), mf.Length(), mf.PartitionSpecID(), mf.SnapshotID()).
		SequenceNum(seq, minSeq).AddedFiles(mf.AddedDataFiles()).ExistingFiles(mf.ExistingDataFiles()).
		DeletedFiles(mf.DeletedDataFiles()).AddedRows(mf.AddedRows()).ExistingRows(mf.ExistingRows()).
		DeletedRows(mf.DeletedRows()).Partitions(mf.Partitions()).Build()
}
