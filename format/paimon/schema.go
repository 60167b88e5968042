package paimon

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// Field is a column of a schema, identified by its field id across schema
// changes (renames keep the id, an added column gets a new one).
type Field struct {
	// ID is the field id.
	ID int `json:"id"`
	// Name is the column's name in this schema.
	Name string `json:"name"`
	// Type is its data type.
	Type DataType `json:"type"`
	// Description is the column's comment, if any.
	Description string `json:"description,omitempty"`
}

// ArrowField is the field as Arrow reads it, with the field id in its
// metadata under PARQUET:field_id.
func (f Field) ArrowField() (arrow.Field, error) {
	dt, err := f.Type.ArrowType()
	if err != nil {
		return arrow.Field{}, fmt.Errorf("column %q: %w", f.Name, err)
	}
	return arrow.Field{Name: f.Name, Type: dt, Nullable: f.Type.Nullable,
		Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(f.ID)})}, nil
}

// Schema is one version of a table's schema (schema/schema-ID).
type Schema struct {
	// ID is the schema id that snapshots and data files refer to.
	ID int64 `json:"id"`
	// Fields are the columns, in order.
	Fields []Field `json:"fields"`
	// HighestFieldID is the highest field id ever given.
	HighestFieldID int `json:"highestFieldId"`
	// PartitionKeys are the partition columns, by name.
	PartitionKeys []string `json:"partitionKeys"`
	// PrimaryKeys are the primary key columns, by name (none for an append
	// table).
	PrimaryKeys []string `json:"primaryKeys"`
	// Options are the table's options in this schema.
	Options map[string]string `json:"options"`
	// Comment is the table's comment.
	Comment string `json:"comment"`
	// TimeMillis is when the schema was written.
	TimeMillis int64 `json:"timeMillis"`
}

// parseSchema decodes a schema file and checks that it is consistent.
func parseSchema(data []byte) (*Schema, error) {
	var s Schema
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, err
	}
	if len(s.Fields) == 0 {
		return nil, fmt.Errorf("schema has no fields")
	}
	ids := map[int]bool{}
	names := map[string]bool{}
	for _, f := range s.Fields {
		if ids[f.ID] || names[f.Name] || f.Name == "" {
			return nil, fmt.Errorf("duplicate or empty field %q (id %d)", f.Name, f.ID)
		}
		ids[f.ID], names[f.Name] = true, true
	}
	for _, k := range append(append([]string(nil), s.PartitionKeys...), s.PrimaryKeys...) {
		if !names[k] {
			return nil, fmt.Errorf("key column %q is not a field", k)
		}
	}
	return &s, nil
}

// Field returns the field with the given id.
func (s *Schema) Field(id int) (Field, bool) {
	for _, f := range s.Fields {
		if f.ID == id {
			return f, true
		}
	}
	return Field{}, false
}

// FieldByName returns the field with the given name.
func (s *Schema) FieldByName(name string) (Field, bool) {
	for _, f := range s.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// ArrowSchema is the schema's columns as an Arrow schema (field ids in the
// fields' metadata).
func (s *Schema) ArrowSchema() (*arrow.Schema, error) {
	fields := make([]arrow.Field, len(s.Fields))
	for i, f := range s.Fields {
		af, err := f.ArrowField()
		if err != nil {
			return nil, err
		}
		fields[i] = af
	}
	return arrow.NewSchema(fields, nil), nil
}

// PartitionFields are the partition columns in partition order.
func (s *Schema) PartitionFields() []Field {
	return s.fieldsNamed(s.PartitionKeys)
}

// TrimmedPrimaryKeys are the primary key columns without the partition
// columns: the key that identifies a row within a partition's bucket.
func (s *Schema) TrimmedPrimaryKeys() []Field {
	part := map[string]bool{}
	for _, p := range s.PartitionKeys {
		part[p] = true
	}
	var keys []string
	for _, k := range s.PrimaryKeys {
		if !part[k] {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		keys = s.PrimaryKeys
	}
	return s.fieldsNamed(keys)
}

func (s *Schema) fieldsNamed(names []string) []Field {
	out := make([]Field, 0, len(names))
	for _, n := range names {
		if f, ok := s.FieldByName(n); ok {
			out = append(out, f)
		}
	}
	return out
}

// The merge engines of primary-key tables.
const (
	MergeDeduplicate   = "deduplicate"
	MergePartialUpdate = "partial-update"
	MergeAggregation   = "aggregation"
	MergeFirstRow      = "first-row"
)

// The changelog producers.
const (
	ChangelogNone           = "none"
	ChangelogInput          = "input"
	ChangelogLookup         = "lookup"
	ChangelogFullCompaction = "full-compaction"
)

// Options are the table options this package reads, with Paimon's
// defaults.
type Options struct {
	// Bucket is the bucket count: positive for fixed buckets, -1 for
	// dynamic buckets (primary keys) or unaware buckets (append), -2 for
	// postponed buckets.
	Bucket int
	// MergeEngine is the primary-key merge engine (default deduplicate).
	MergeEngine string
	// ChangelogProducer is none, input, lookup or full-compaction.
	ChangelogProducer string
	// DeletionVectors is deletion-vectors.enabled.
	DeletionVectors bool
	// FileFormat is file.format (default parquet).
	FileFormat string
	// SequenceFields is sequence.field, split at commas.
	SequenceFields []string
	// PartitionDefaultName is the path name of a null partition value.
	PartitionDefaultName string
	// RowKindField is rowkind.field.
	RowKindField string
}

// TableOptions are the schema's table options, with Paimon's defaults.
func (s *Schema) TableOptions() (Options, error) {
	o := Options{Bucket: -1, MergeEngine: MergeDeduplicate, ChangelogProducer: ChangelogNone,
		FileFormat: "parquet", PartitionDefaultName: "__DEFAULT_PARTITION__"}
	opt := s.Options
	if v, ok := opt["bucket"]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return o, fmt.Errorf("%w: option bucket=%q", ErrCorrupt, v)
		}
		o.Bucket = n
	}
	if v, ok := opt["merge-engine"]; ok {
		o.MergeEngine = strings.ToLower(v)
	}
	if v, ok := opt["changelog-producer"]; ok {
		o.ChangelogProducer = strings.ToLower(v)
	}
	if v, ok := opt["deletion-vectors.enabled"]; ok {
		o.DeletionVectors = strings.EqualFold(v, "true")
	}
	if v, ok := opt["file.format"]; ok {
		o.FileFormat = strings.ToLower(v)
	}
	if v := opt["sequence.field"]; v != "" {
		for _, f := range strings.Split(v, ",") {
			o.SequenceFields = append(o.SequenceFields, strings.TrimSpace(f))
		}
	}
	if v, ok := opt["partition.default-name"]; ok {
		o.PartitionDefaultName = v
	}
	o.RowKindField = opt["rowkind.field"]
	return o, nil
}
