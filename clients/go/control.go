package sluice

import (
	"context"
	"fmt"
	"maps"
	"strconv"

	sluicev1 "github.com/sluicefeed/sluice/gen/sluice/v1"
)

// CommitSeq is a table's current commit position.
type CommitSeq struct {
	// Table is the table, as "namespace.table".
	Table string
	// CommitSeq grows by at least one with every commit to the table's
	// main branch and never otherwise changes; 0 for a table without
	// snapshots.
	CommitSeq int64
	// Snapshot is the current snapshot of the main branch; nil for a table
	// without snapshots.
	Snapshot *int64
	// TimestampMs is the current snapshot's commit time, in milliseconds
	// since the Unix epoch (0 without one).
	TimestampMs int64
	// Ref is the branch or tag whose head this is (CommitSeqOn,
	// WatchCommitsOn); nil for the main branch of CommitSeq.
	Ref *Ref
}

// Ref is a branch or tag of a table.
type Ref struct {
	// Name is the ref's name.
	Name string
	// Kind is "branch" or "tag".
	Kind string
	// Snapshot is the snapshot it points at (a branch's head, a tag's
	// snapshot); nil for a branch without commits.
	Snapshot *int64
}

// String returns the ref's description with its snapshot's id.
func (r Ref) String() string {
	return fmt.Sprintf("{Name:%s Kind:%s Snapshot:%s}", r.Name, r.Kind, optional(r.Snapshot))
}

func refOf(r *sluicev1.Ref) *Ref {
	if r == nil {
		return nil
	}
	return &Ref{Name: r.GetName(), Kind: r.GetKind(), Snapshot: copyInt64(r.Snapshot)}
}

// refString formats an optional ref: its fields, or <nil>.
func refString(r *Ref) string {
	if r == nil {
		return "<nil>"
	}
	return r.String()
}

// TableInfo describes a table the caller may read.
type TableInfo struct {
	// Name is the table, as "namespace.table".
	Name string
	// Format is the table format: "iceberg".
	Format string
	// FormatVersion is the table format version (Iceberg 1, 2 or 3).
	FormatVersion int
	// CurrentSnapshot is the current snapshot of the main branch; nil for
	// a table without snapshots.
	CurrentSnapshot *int64
	// CommitSeq is the table's commit sequence.
	CommitSeq int64
	// Backend is the verdict of a table the server routes to a Spark
	// Connect server; nil for others.
	Backend *BackendVerdict
}

// BackendVerdict is how a table the server routes to a Spark Connect
// server is served, and why.
type BackendVerdict struct {
	// Backend is who computes its windows by default (in a Plan: this
	// window): "spark" or "native".
	Backend string
	// Remote is the Spark Connect server, without credentials.
	Remote string
	// Chosen is the engine: "spark_native", "iceberg_changelog_view" or
	// "native".
	Chosen string
	// ServerVersion is the Spark server's version ("" when not asked).
	ServerVersion string
	// NativeExpected says the server's version has CHANGES.
	NativeExpected bool
	// NativeUsable says CHANGES resolved on the table.
	NativeUsable bool
	// FellBack says a better engine was refused, or could not be asked.
	FellBack bool
	// Reason says why, with Spark's own error text.
	Reason string
}

func verdictOf(v *sluicev1.BackendVerdict) *BackendVerdict {
	if v == nil {
		return nil
	}
	return &BackendVerdict{Backend: v.GetBackend(), Remote: v.GetRemote(), Chosen: v.GetChosen(),
		ServerVersion: v.GetServerVersion(), NativeExpected: v.GetNativeExpected(), NativeUsable: v.GetNativeUsable(),
		FellBack: v.GetFellBack(), Reason: v.GetReason()}
}

// Snapshot describes one snapshot of a table's lineage.
type Snapshot struct {
	// ID is the snapshot id.
	ID int64
	// Parent is the parent snapshot's id; nil for the first snapshot.
	Parent *int64
	// SequenceNumber is the snapshot's data sequence number (0 in Iceberg
	// format v1 tables).
	SequenceNumber int64
	// CommitSeq is the snapshot's commit sequence.
	CommitSeq int64
	// TimestampMs is the commit time, in milliseconds since the Unix
	// epoch.
	TimestampMs int64
	// Operation is the snapshot's operation: append, overwrite, delete or
	// replace.
	Operation string
	// Summary holds the snapshot summary's properties.
	Summary map[string]string
	// SchemaID is the id of the schema the snapshot was written with.
	SchemaID int
}

// Plan is how the server would read a change window.
type Plan struct {
	// Table is the table, as "namespace.table".
	Table string
	// FromSnapshot is the exclusive start snapshot; nil for the start of
	// the table's history.
	FromSnapshot *int64
	// ToSnapshot is the inclusive end snapshot; nil for a table without
	// snapshots.
	ToSnapshot *int64
	// Columns are the data columns of the images, in order.
	Columns []string
	// Identity are the columns used to pair updates (may be empty).
	Identity []string
	// Snapshots has one entry per snapshot of the window, in lineage
	// order.
	Snapshots []SnapshotPlan
	// FilesRead is the number of files the read opens.
	FilesRead int64
	// FilesSkipped is the number of files planning ruled out.
	FilesSkipped int64
	// BytesRead is the size of the files read.
	BytesRead int64
	// RecordsRead is the number of records in the files read.
	RecordsRead int64
	// Backend is the verdict of a table the server routes to a Spark
	// Connect server (Backend.Backend: who computes this window); nil for
	// others.
	Backend *BackendVerdict
	// Pairing is how deleted and inserted rows of a snapshot pair into
	// updates: "row-lineage", "identity" or "none".
	Pairing string
	// Ref is the branch or tag the window runs on; nil for the main
	// branch of a request that named none.
	Ref *Ref
}

// SnapshotPlan is how one snapshot of a window is read.
type SnapshotPlan struct {
	// Snapshot is the snapshot id.
	Snapshot int64
	// SequenceNumber is the snapshot's data sequence number.
	SequenceNumber int64
	// CommitSeq is the snapshot's commit sequence.
	CommitSeq int64
	// TimestampMs is the commit time, in milliseconds since the Unix
	// epoch.
	TimestampMs int64
	// Operation is the snapshot's operation.
	Operation string
	// Strategy is how the changes are computed: append, rewrite,
	// position-delete, deletion-vector, equality-delete or replace-skipped.
	Strategy string
	// Files are the files read to compute the changes.
	Files []FilePlan
	// FilesSkipped is the number of files planning ruled out.
	FilesSkipped int64
	// BytesRead is the size of the files read.
	BytesRead int64
	// RecordsRead is the number of records in the files read.
	RecordsRead int64
}

// FilePlan is one file a snapshot's plan reads.
type FilePlan struct {
	// Path is the file's location.
	Path string
	// Content is data, position_deletes, equality_deletes or
	// deletion_vector.
	Content string
	// Role says why the file is read: added, removed or deletes.
	Role string
	// RecordCount is the number of records in the file.
	RecordCount int64
	// FileSizeBytes is the file's size.
	FileSizeBytes int64
}

// The String methods print the types that hold optional snapshot ids the
// way fmt prints a struct with %+v, but with the id in place of the
// pointer's address, and <nil> when there is none.

// String returns the position as
// "{Table:demo.orders CommitSeq:7 Snapshot:3055729675574597004 TimestampMs:1767225600000}"
// (Snapshot:<nil> for a table without snapshots).
func (c CommitSeq) String() string {
	return fmt.Sprintf("{Table:%s CommitSeq:%d Snapshot:%s TimestampMs:%d Ref:%s}", c.Table, c.CommitSeq,
		optional(c.Snapshot), c.TimestampMs, refString(c.Ref))
}

// String returns the table's description with its current snapshot id
// (CurrentSnapshot:<nil> for a table without snapshots).
func (t TableInfo) String() string {
	return fmt.Sprintf("{Name:%s Format:%s FormatVersion:%d CurrentSnapshot:%s CommitSeq:%d Backend:%s}", t.Name,
		t.Format, t.FormatVersion, optional(t.CurrentSnapshot), t.CommitSeq, verdictString(t.Backend))
}

// String returns the snapshot's description with its parent's id
// (Parent:<nil> for the first snapshot).
func (s Snapshot) String() string {
	return fmt.Sprintf("{ID:%d Parent:%s SequenceNumber:%d CommitSeq:%d TimestampMs:%d Operation:%s Summary:%v SchemaID:%d}",
		s.ID, optional(s.Parent), s.SequenceNumber, s.CommitSeq, s.TimestampMs, s.Operation, s.Summary, s.SchemaID)
}

// String returns the plan with the ids of its window's ends (<nil> when
// absent) and its snapshots' plans.
func (p Plan) String() string {
	return fmt.Sprintf("{Table:%s FromSnapshot:%s ToSnapshot:%s Columns:%v Identity:%v Snapshots:%+v FilesRead:%d "+
		"FilesSkipped:%d BytesRead:%d RecordsRead:%d Backend:%s Pairing:%s Ref:%s}", p.Table, optional(p.FromSnapshot),
		optional(p.ToSnapshot), p.Columns, p.Identity, p.Snapshots, p.FilesRead, p.FilesSkipped, p.BytesRead,
		p.RecordsRead, verdictString(p.Backend), p.Pairing, refString(p.Ref))
}

// verdictString formats an optional backend verdict: its fields, or <nil>.
func verdictString(v *BackendVerdict) string {
	if v == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%+v", *v)
}

// optional formats an optional id: its value, or <nil>.
func optional(p *int64) string {
	if p == nil {
		return "<nil>"
	}
	return strconv.FormatInt(*p, 10)
}

// CommitSeq returns the table's current commit position. It is cheap:
// poll it to learn when a table has new commits.
func (c *Client) CommitSeq(ctx context.Context, table string) (CommitSeq, error) {
	return c.CommitSeqOn(ctx, table, "")
}

// CommitSeqOn returns the commit position of the table's branch or tag
// ref ("": the main branch): its head, and the ref.
func (c *Client) CommitSeqOn(ctx context.Context, table, ref string) (CommitSeq, error) {
	resp, err := c.control.CommitSeq(ctx, &sluicev1.CommitSeqRequest{Table: table, Ref: ref})
	if err != nil {
		return CommitSeq{}, callError(ctx, "CommitSeq", err)
	}
	return commitSeqOf(resp), nil
}

func commitSeqOf(resp *sluicev1.CommitSeqResponse) CommitSeq {
	return CommitSeq{Table: resp.GetTable(), CommitSeq: resp.GetCommitSeq(), Snapshot: copyInt64(resp.Snapshot),
		TimestampMs: resp.GetTimestampMs(), Ref: refOf(resp.GetRef())}
}

// ListTables returns the tables the caller may read.
func (c *Client) ListTables(ctx context.Context) ([]TableInfo, error) {
	resp, err := c.control.ListTables(ctx, &sluicev1.ListTablesRequest{})
	if err != nil {
		return nil, callError(ctx, "ListTables", err)
	}
	out := make([]TableInfo, 0, len(resp.GetTables()))
	for _, t := range resp.GetTables() {
		out = append(out, TableInfo{Name: t.GetName(), Format: t.GetFormat(), FormatVersion: int(t.GetFormatVersion()),
			CurrentSnapshot: copyInt64(t.CurrentSnapshot), CommitSeq: t.GetCommitSeq(), Backend: verdictOf(t.GetBackend())})
	}
	return out, nil
}

// Snapshots returns the lineage of the table's main branch, oldest first.
func (c *Client) Snapshots(ctx context.Context, table string) ([]Snapshot, error) {
	return c.SnapshotsOn(ctx, table, "")
}

// SnapshotsOn returns the lineage of the table's branch or tag ref ("":
// the main branch), oldest first.
func (c *Client) SnapshotsOn(ctx context.Context, table, ref string) ([]Snapshot, error) {
	resp, err := c.control.ListSnapshots(ctx, &sluicev1.ListSnapshotsRequest{Table: table, Ref: ref})
	if err != nil {
		return nil, callError(ctx, "Snapshots", err)
	}
	out := make([]Snapshot, 0, len(resp.GetSnapshots()))
	for _, s := range resp.GetSnapshots() {
		out = append(out, Snapshot{ID: s.GetSnapshot(), Parent: copyInt64(s.Parent), SequenceNumber: s.GetSequenceNumber(),
			CommitSeq: s.GetCommitSeq(), TimestampMs: s.GetTimestampMs(), Operation: s.GetOperation(),
			Summary: maps.Clone(s.GetSummary()), SchemaID: int(s.GetSchemaId())})
	}
	return out, nil
}

// Explain plans the window of req without reading data and returns the
// plan: its snapshots, the files each reads and skips, and how each
// snapshot's changes are computed.
func (c *Client) Explain(ctx context.Context, req ChangeRequest) (*Plan, error) {
	const op = "Explain"
	pr, err := req.proto(op)
	if err != nil {
		return nil, err
	}
	resp, err := c.control.Explain(ctx, pr)
	if err != nil {
		return nil, callError(ctx, op, err)
	}
	p := &Plan{Table: resp.GetTable(), FromSnapshot: copyInt64(resp.FromSnapshot), ToSnapshot: copyInt64(resp.ToSnapshot),
		Columns: resp.GetColumns(), Identity: resp.GetIdentity(), Snapshots: make([]SnapshotPlan, 0, len(resp.GetSnapshots())),
		FilesRead: resp.GetFilesRead(), FilesSkipped: resp.GetFilesSkipped(), BytesRead: resp.GetBytesRead(),
		RecordsRead: resp.GetRecordsRead(), Backend: verdictOf(resp.GetBackend()), Pairing: resp.GetPairing(),
		Ref: refOf(resp.GetRef())}
	for _, sp := range resp.GetSnapshots() {
		s := SnapshotPlan{Snapshot: sp.GetSnapshot(), SequenceNumber: sp.GetSequenceNumber(), CommitSeq: sp.GetCommitSeq(),
			TimestampMs: sp.GetTimestampMs(), Operation: sp.GetOperation(), Strategy: sp.GetStrategy(),
			Files: make([]FilePlan, 0, len(sp.GetFiles())), FilesSkipped: sp.GetFilesSkipped(), BytesRead: sp.GetBytesRead(),
			RecordsRead: sp.GetRecordsRead()}
		for _, f := range sp.GetFiles() {
			s.Files = append(s.Files, FilePlan{Path: f.GetPath(), Content: f.GetContent(), Role: f.GetRole(),
				RecordCount: f.GetRecordCount(), FileSizeBytes: f.GetFileSizeBytes()})
		}
		p.Snapshots = append(p.Snapshots, s)
	}
	return p, nil
}
