package delta

// The actions of a Delta log, as PROTOCOL.md in delta-io/delta defines them
// ("Actions"). Commit files hold one JSON action per line; checkpoints hold
// the same actions as the columns of Parquet rows. Fields Sluice does not
// use are left out; unknown fields are ignored, as the protocol requires.

// Add is an "add" action: a data file that is part of the table from its
// commit on, with the rows its deletion vector (if any) marks deleted.
type Add struct {
	Path string `json:"path"`
	// PartitionValues maps a partition column's physical name to its value
	// serialized as the protocol's "Partition Value Serialization"
	// describes; a nil value is a null.
	PartitionValues  map[string]*string `json:"partitionValues"`
	Size             int64              `json:"size"`
	ModificationTime int64              `json:"modificationTime"`
	DataChange       bool               `json:"dataChange"`
	// Stats is the JSON statistics string (numRecords, minValues,
	// maxValues, nullCount, tightBounds), "" when absent.
	Stats          string            `json:"stats,omitempty"`
	Tags           map[string]string `json:"tags,omitempty"`
	DeletionVector *DeletionVector   `json:"deletionVector,omitempty"`
	BaseRowID      *int64            `json:"baseRowId,omitempty"`
	// DefaultRowCommitVersion is the row tracking default commit version.
	DefaultRowCommitVersion *int64 `json:"defaultRowCommitVersion,omitempty"`
}

// Remove is a "remove" action: a data file that leaves the table with its
// commit. Writers of deletion vectors record the vector the file had.
type Remove struct {
	Path                    string             `json:"path"`
	DeletionTimestamp       *int64             `json:"deletionTimestamp,omitempty"`
	DataChange              bool               `json:"dataChange"`
	ExtendedFileMetadata    bool               `json:"extendedFileMetadata,omitempty"`
	PartitionValues         map[string]*string `json:"partitionValues,omitempty"`
	Size                    *int64             `json:"size,omitempty"`
	Stats                   string             `json:"stats,omitempty"`
	Tags                    map[string]string  `json:"tags,omitempty"`
	DeletionVector          *DeletionVector    `json:"deletionVector,omitempty"`
	BaseRowID               *int64             `json:"baseRowId,omitempty"`
	DefaultRowCommitVersion *int64             `json:"defaultRowCommitVersion,omitempty"`
}

// CDC is a "cdc" action: a change data file holding the commit's changed
// rows, each with its _change_type.
type CDC struct {
	Path            string             `json:"path"`
	PartitionValues map[string]*string `json:"partitionValues"`
	Size            int64              `json:"size"`
	DataChange      bool               `json:"dataChange"`
	Tags            map[string]string  `json:"tags,omitempty"`
}

// DeletionVector is a deletion vector descriptor ("Deletion Vector
// Descriptor Schema"): which rows of a data file are deleted.
type DeletionVector struct {
	// StorageType is "u" (a file beside the table named by a UUID, with an
	// optional random path prefix), "i" (inline, Z85-encoded) or "p" (an
	// absolute path).
	StorageType string `json:"storageType"`
	// PathOrInlineDv is the encoded UUID with its prefix ("u"), the
	// Z85-encoded vector ("i") or the path ("p").
	PathOrInlineDv string `json:"pathOrInlineDv"`
	// Offset is where the vector starts in its file ("u", "p"; nil inline).
	Offset *int32 `json:"offset,omitempty"`
	// SizeInBytes is the size of the serialized vector.
	SizeInBytes int32 `json:"sizeInBytes"`
	// Cardinality is the number of rows the vector deletes.
	Cardinality int64 `json:"cardinality"`
	// MaxRowIndex is an optional upper bound of the deleted row indexes.
	MaxRowIndex *int64 `json:"maxRowIndex,omitempty"`
}

// Metadata is a "metaData" action: the table's schema, partitioning and
// configuration from its commit on.
type Metadata struct {
	ID          string `json:"id"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	Format      struct {
		Provider string            `json:"provider"`
		Options  map[string]string `json:"options,omitempty"`
	} `json:"format"`
	// SchemaString is the table's schema as a JSON-serialized struct type.
	SchemaString     string            `json:"schemaString"`
	PartitionColumns []string          `json:"partitionColumns"`
	CreatedTime      *int64            `json:"createdTime,omitempty"`
	Configuration    map[string]string `json:"configuration"`
}

// Protocol is a "protocol" action: the reader and writer versions and
// features a client must support to read or write the table.
type Protocol struct {
	MinReaderVersion int      `json:"minReaderVersion"`
	MinWriterVersion int      `json:"minWriterVersion"`
	ReaderFeatures   []string `json:"readerFeatures,omitempty"`
	WriterFeatures   []string `json:"writerFeatures,omitempty"`
}

// CommitInfo is the "commitInfo" action. Its content is free-form; Sluice
// reads the fields below.
type CommitInfo struct {
	// Timestamp is the commit time in milliseconds, as the writer's clock
	// gave it.
	Timestamp *int64 `json:"timestamp,omitempty"`
	// InCommitTimestamp is the commit time of the inCommitTimestamp table
	// feature (monotonic across commits).
	InCommitTimestamp *int64 `json:"inCommitTimestamp,omitempty"`
	Operation         string `json:"operation,omitempty"`
	// OperationParameters as written (values are often JSON strings).
	OperationParameters map[string]any `json:"operationParameters,omitempty"`
	EngineInfo          string         `json:"engineInfo,omitempty"`
}

// Txn is a "txn" action (an application's transaction id).
type Txn struct {
	AppID       string `json:"appId"`
	Version     int64  `json:"version"`
	LastUpdated *int64 `json:"lastUpdated,omitempty"`
}

// DomainMetadata is a "domainMetadata" action.
type DomainMetadata struct {
	Domain        string `json:"domain"`
	Configuration string `json:"configuration"`
	Removed       bool   `json:"removed"`
}

// CheckpointMetadata is the "checkpointMetadata" action of a V2 checkpoint.
type CheckpointMetadata struct {
	Version int64             `json:"version"`
	Tags    map[string]string `json:"tags,omitempty"`
}

// Sidecar is a "sidecar" action of a V2 checkpoint: a Parquet file under
// _delta_log/_sidecars holding part of the checkpoint's file actions.
type Sidecar struct {
	Path             string            `json:"path"`
	SizeInBytes      int64             `json:"sizeInBytes"`
	ModificationTime int64             `json:"modificationTime"`
	Tags             map[string]string `json:"tags,omitempty"`
}

// Action is one line of a commit file (one row of a checkpoint): exactly
// one of its fields is set.
type Action struct {
	Add                *Add                `json:"add,omitempty"`
	Remove             *Remove             `json:"remove,omitempty"`
	CDC                *CDC                `json:"cdc,omitempty"`
	MetaData           *Metadata           `json:"metaData,omitempty"`
	Protocol           *Protocol           `json:"protocol,omitempty"`
	CommitInfo         *CommitInfo         `json:"commitInfo,omitempty"`
	Txn                *Txn                `json:"txn,omitempty"`
	DomainMetadata     *DomainMetadata     `json:"domainMetadata,omitempty"`
	CheckpointMetadata *CheckpointMetadata `json:"checkpointMetadata,omitempty"`
	Sidecar            *Sidecar            `json:"sidecar,omitempty"`
}
