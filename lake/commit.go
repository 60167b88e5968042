package lake

// Commit is one commit of a table's lineage: an Iceberg snapshot, a Delta
// version.
type Commit struct {
	// ID is the commit's id: the Iceberg snapshot id, the Delta version.
	ID int64 `json:"snapshot"`
	// ParentID is the parent commit's id, nil for the first commit (or the
	// oldest one a window cannot start before).
	ParentID *int64 `json:"parent,omitempty"`
	// SequenceNumber is the commit's data sequence number (0 in Iceberg
	// format v1 tables).
	SequenceNumber int64 `json:"sequence_number"`
	// CommitSeq is the commit's position in the table's commit order,
	// which grows by at least one with every commit to the main branch and
	// does not change when older commits expire.
	CommitSeq int64 `json:"commit_seq"`
	// TimestampMs is the commit time in milliseconds since the epoch.
	TimestampMs int64 `json:"timestamp_ms"`
	// Operation is the commit's operation as its writer recorded it
	// (Iceberg's append, overwrite, delete or replace; Delta's WRITE,
	// MERGE, ...).
	Operation string `json:"operation"`
	// Summary is the commit's summary properties.
	Summary map[string]string `json:"summary,omitempty"`
	// SchemaID is the id of the schema the commit was written with.
	SchemaID int `json:"schema_id"`
}

// TimeCommitScale spreads commit_seq values taken from commit times (see
// TimeCommitSeq): room for a thousand commits in one millisecond.
const TimeCommitScale = 1000

// TimeCommitSeq is the commit_seq of commit c of a table whose metadata
// counts no commits (Iceberg format v1; an Iceberg table Spark alone
// serves, whose snapshots table has no sequence numbers), given its
// parent's (nil when the parent is not retained): its commit time in
// milliseconds times TimeCommitScale, or one more than its parent's when
// that is not smaller (commits in the same millisecond, a clock that went
// back).
//
// A position in the retained lineage would shift down when commits
// expire; a commit time does not change. A commit's commit_seq depends on
// its parent's only when their times are that close (or the clock went
// back): only then can expiring the parent change it.
func TimeCommitSeq(c Commit, parent *Commit) int64 {
	cs := c.TimestampMs * TimeCommitScale
	if parent != nil && cs <= parent.CommitSeq {
		cs = parent.CommitSeq + 1
	}
	return cs
}

// History is the retained lineage of a table's branch head, oldest first,
// with what the format's metadata tells of the part that has expired. The
// engine's lineage rules (where a window may start, how many commits came
// after a consumer's) read it.
type History struct {
	// Commits is the retained lineage, oldest first.
	Commits []Commit
	// Expired reports that commits before Commits[0] have expired: a
	// window cannot start at the beginning of the history.
	Expired bool
	// ExpiredIDs are expired commits the metadata still names (a parent
	// link, a snapshot log); nil when none.
	ExpiredIDs map[int64]bool
	// ExpiredBelow, when positive, says every id in [0, ExpiredBelow) is an
	// expired commit (Delta versions are contiguous).
	ExpiredBelow int64
	// CountsCommits is set when the difference of two commits' CommitSeq
	// counts the commits between them (Iceberg format v2 and later, Delta);
	// otherwise CommitSeq orders commits only (Iceberg v1, by time).
	CountsCommits bool
	// TimeOrdered is set when commit times grow along the lineage, as
	// Delta versions' do: a start time before the retained history then
	// starts at the earliest start, when the oldest retained commit can be
	// read.
	TimeOrdered bool
}

// Strategies of a commit's plan (Change.Strategy): how its changes are
// computed.
const (
	// StrategyAppend reads the commit's added data files: every row is an
	// insert.
	StrategyAppend = "append"
	// StrategyRewrite reads the data files a commit removed (copy-on-write
	// delete, overwrite) and the ones it added: the rows live before in the
	// removed files are deletes, the added rows inserts, and rows re-written
	// unchanged (carry-over) cancel out.
	StrategyRewrite = "rewrite"
	// StrategyPositionDelete reads the data files that new position delete
	// files hit: each newly deleted position is a delete.
	StrategyPositionDelete = "position-delete"
	// StrategyDeletionVector reads the data files whose deletion vector
	// changed: the positions of the new vector not in the old one are
	// deletes.
	StrategyDeletionVector = "deletion-vector"
	// StrategyEqualityDelete reads the data files that new equality delete
	// files apply to: each live row with a deleted key is a delete.
	StrategyEqualityDelete = "equality-delete"
	// StrategyReplaceSkipped marks a replace snapshot (compaction, manifest
	// rewrite): it changes no logical row, so nothing is read or emitted.
	StrategyReplaceSkipped = "replace-skipped"
	// StrategyDeltaCDCFiles reads the change data files a commit wrote
	// (cdc actions): their rows are its changes.
	StrategyDeltaCDCFiles = "delta-cdc-files"
	// StrategyDeltaAdd reads the files a commit added, without deletion
	// vectors and without removing any: every row is an insert.
	StrategyDeltaAdd = "delta-add"
	// StrategyDeltaDVDiff reads the files whose deletion vector a commit
	// changed (an add and a remove of the same path): the rows the new
	// vector deletes and the old one did not are deletes, the other way
	// inserts.
	StrategyDeltaDVDiff = "delta-dv-diff"
	// StrategyDeltaAddRemove reads the files a commit removed and added
	// (dataChange=true): the rows live before in removed files are deletes,
	// the rows of added files inserts, and rows re-written unchanged cancel.
	StrategyDeltaAddRemove = "delta-add-remove"
	// StrategyPaimonAppend reads the data files a Paimon append table's
	// snapshot added: every row is an insert.
	StrategyPaimonAppend = "paimon-append"
	// StrategyPaimonRewrite reads the data files a Paimon append table's
	// snapshot removed and added (an overwrite, a deletion vector
	// change): rows live before in removed files are deletes, added rows
	// inserts, and rows re-written unchanged cancel.
	StrategyPaimonRewrite = "paimon-rewrite"
	// StrategyPaimonMergeDiff reads, for each bucket a Paimon primary-key
	// table's snapshot touched, the bucket's merged state before and
	// after it: keys gone are deletes, keys new inserts, keys whose row
	// changed an update pair (by primary key).
	StrategyPaimonMergeDiff = "paimon-merge-diff"
	// StrategyNoDataChange marks a commit that changes no row (OPTIMIZE,
	// REORG, metadata and protocol changes): nothing is read.
	StrategyNoDataChange = "no-data-change"
)

// File contents and roles shown in a plan (FilePlan).
const (
	ContentData            = "data"
	ContentPositionDeletes = "position_deletes"
	ContentEqualityDeletes = "equality_deletes"
	ContentDeletionVector  = "deletion_vector"
	// ContentChangeData is a change data file (Delta's cdc files).
	ContentChangeData = "change_data"
	// RoleAdded: a data file the commit added.
	RoleAdded = "added"
	// RoleRemoved: a data file the commit removed.
	RoleRemoved = "removed"
	// RoleDeletes: a data file the commit's deletes hit, or a delete file
	// the commit added.
	RoleDeletes = "deletes"
)

// FilePlan is one file a commit's plan reads, as a plan shows it.
type FilePlan struct {
	Path          string `json:"path"`
	Content       string `json:"content"`
	Role          string `json:"role"`
	RecordCount   int64  `json:"record_count"`
	FileSizeBytes int64  `json:"file_size_bytes"`
}

// Change is a commit's file-level change as its format plans it: how its
// row changes are computed (Strategy), the files that reads, and the
// readers of those files. At most one of Appended, Diffs and ChangeFiles
// is set; none for a commit that changes no row.
type Change struct {
	// Strategy names how the changes are computed (StrategyAppend, ...).
	Strategy string
	// Reason says why the strategy was chosen ("" when the strategy says
	// it all).
	Reason string
	// Files are the files read, as the plan shows them.
	Files []FilePlan
	// FilesSkipped counts the files the filter's pushdown ruled out.
	FilesSkipped int64
	// RowGroupsRead and RowGroupsSkipped count the row groups of appended
	// files that the filter's pushdown kept and skipped.
	RowGroupsRead, RowGroupsSkipped int64
	// BytesRead and RecordsRead total the files read.
	BytesRead, RecordsRead int64

	// Appended are the added data files of a commit whose every row is an
	// insert.
	Appended LiveFiles
	// Diffs are the data files whose live rows the commit changed, for the
	// engine to compare before and after.
	Diffs []FileDiff
	// ChangeFiles are the change files of a format that records changed
	// rows (Delta's cdc files): their rows are the commit's changes.
	ChangeFiles []ChangeFile
	// Rewrites is set when the commit may both delete rows and insert rows
	// (copy-on-write carry-over, a merge-on-read statement that deletes a
	// row and writes it again unchanged), so that rows re-written unchanged
	// must cancel.
	Rewrites bool
	// PairKey, when set, is a column the change files' readers add to the
	// changed rows: the writer's own pairing of update pre- and post-images
	// (equal values pair up; nulls never do). It pairs updates when the
	// request names no identity.
	PairKey string
	// Lineage is set when the commit's row lineage can be trusted to pair
	// its rows (the table keeps row lineage, and the commit writes nothing
	// that gives a surviving row a new id, such as equality deletes): the
	// engine then reads the lineage columns of its file diffs (Read.Lineage)
	// and pairs a deleted and an inserted row of the same row id. Rows
	// whose id is null, and ids that do not meet, fall back to identity
	// columns or to a delete and an insert.
	Lineage bool
	// LineageReason says why a table that keeps row lineage cannot use it
	// for this commit, or (with Lineage set) for some of its rows; "" when
	// every row has lineage or the table keeps none.
	LineageReason string
}
