package delta

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Field kinds of the checkpoint columns, as checkType accepts them.
const (
	kindString = "string"
	kindInt    = "integer"
	kindBool   = "boolean"
	kindMap    = "map<string,string>"
	kindList   = "list<string>"
)

// checkpointFields are the fields of the action columns the decoder reads,
// with their kinds: a nested map is a struct. Fields not listed are never
// read; listed ones may be missing (read as null).
var checkpointFields = map[string]any{
	"add": map[string]any{
		"path": kindString, "partitionValues": kindMap, "size": kindInt,
		"modificationTime": kindInt, "dataChange": kindBool, "stats": kindString,
		"tags": kindMap, "baseRowId": kindInt, "defaultRowCommitVersion": kindInt,
		"deletionVector": map[string]any{
			"storageType": kindString, "pathOrInlineDv": kindString, "offset": kindInt,
			"sizeInBytes": kindInt, "cardinality": kindInt, "maxRowIndex": kindInt,
		},
		"stats_parsed": map[string]any{"numRecords": kindInt},
	},
	"metaData": map[string]any{
		"id": kindString, "name": kindString, "description": kindString,
		"format":       map[string]any{"provider": kindString, "options": kindMap},
		"schemaString": kindString, "partitionColumns": kindList,
		"createdTime": kindInt, "configuration": kindMap,
	},
	"protocol": map[string]any{
		"minReaderVersion": kindInt, "minWriterVersion": kindInt,
		"readerFeatures": kindList, "writerFeatures": kindList,
	},
	"sidecar": map[string]any{
		"path": kindString, "sizeInBytes": kindInt, "modificationTime": kindInt, "tags": kindMap,
	},
	"checkpointMetadata": map[string]any{"version": kindInt, "tags": kindMap},
}

// checkType checks that a column of type dt fits want (a kind, or a map of
// a struct's fields).
func checkType(name string, dt arrow.DataType, want any) error {
	if fields, ok := want.(map[string]any); ok {
		st, ok := dt.(*arrow.StructType)
		if !ok {
			return fmt.Errorf("column %s has type %s, want a struct", name, dt)
		}
		for _, f := range st.Fields() {
			if w, ok := fields[f.Name]; ok {
				if err := checkType(name+"."+f.Name, f.Type, w); err != nil {
					return err
				}
			}
		}
		return nil
	}
	var ok bool
	switch want {
	case kindString:
		ok = isString(dt)
	case kindInt:
		ok = arrow.IsInteger(dt.ID())
	case kindBool:
		ok = dt.ID() == arrow.BOOL
	case kindMap:
		m, isMap := dt.(*arrow.MapType)
		ok = isMap && isString(m.KeyType()) && isString(m.ItemType())
	case kindList:
		switch l := dt.(type) {
		case *arrow.ListType:
			ok = isString(l.Elem())
		case *arrow.LargeListType:
			ok = isString(l.Elem())
		}
	}
	if !ok {
		return fmt.Errorf("column %s has type %s, want %s", name, dt, want)
	}
	return nil
}

func isString(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW, arrow.BINARY, arrow.LARGE_BINARY, arrow.BINARY_VIEW:
		return true
	}
	return false
}

// structCol is a struct column of a record batch, its fields by name. The
// zero structCol is a missing column: every value is null.
type structCol struct {
	arr    *array.Struct
	fields map[string]arrow.Array
}

func newStructCol(a arrow.Array) structCol {
	s, ok := a.(*array.Struct)
	if !ok {
		return structCol{}
	}
	st := s.DataType().(*arrow.StructType)
	c := structCol{arr: s, fields: make(map[string]arrow.Array, st.NumFields())}
	for i, f := range st.Fields() {
		c.fields[f.Name] = s.Field(i)
	}
	return c
}

// field returns the field name at row i, nil when the struct or the field
// is null or missing.
func (c structCol) field(name string, i int) arrow.Array {
	if c.arr == nil || c.arr.IsNull(i) {
		return nil
	}
	f := c.fields[name]
	if f == nil || f.IsNull(i) {
		return nil
	}
	return f
}

func (c structCol) child(name string) structCol {
	if c.arr == nil {
		return structCol{}
	}
	return newStructCol(c.fields[name])
}

func (c structCol) str(name string, i int) (string, bool) {
	return strAt(c.field(name, i), i)
}

func (c structCol) int(name string, i int) (int64, bool) {
	return intAt(c.field(name, i), i)
}

func (c structCol) optInt(name string, i int) *int64 {
	if v, ok := c.int(name, i); ok {
		return &v
	}
	return nil
}

func (c structCol) bool(name string, i int) (bool, bool) {
	b, ok := c.field(name, i).(*array.Boolean)
	if !ok {
		return false, false
	}
	return b.Value(i), true
}

// listLike is a list or map column: its rows are ranges of a child array.
type listLike interface {
	ValueOffsets(i int) (start, end int64)
}

func (c structCol) strList(name string, i int) []string {
	var values arrow.Array
	a := c.field(name, i)
	switch l := a.(type) {
	case *array.List:
		values = l.ListValues()
	case *array.LargeList:
		values = l.ListValues()
	default:
		return nil
	}
	start, end := a.(listLike).ValueOffsets(i)
	out := make([]string, 0, end-start)
	for j := start; j < end; j++ {
		s, _ := strAt(values, int(j))
		out = append(out, s)
	}
	return out
}

// strPtrMap returns a map<string,string> value with null values as nil.
func (c structCol) strPtrMap(name string, i int) map[string]*string {
	m, ok := c.field(name, i).(*array.Map)
	if !ok {
		return nil
	}
	start, end := m.ValueOffsets(i)
	out := make(map[string]*string, end-start)
	for j := int(start); j < int(end); j++ {
		k, _ := strAt(m.Keys(), j)
		if v, ok := strAt(m.Items(), j); ok {
			out[k] = &v
		} else {
			out[k] = nil
		}
	}
	return out
}

// strMap returns a map<string,string> value with null values as "".
func (c structCol) strMap(name string, i int) map[string]string {
	m, ok := c.field(name, i).(*array.Map)
	if !ok {
		return nil
	}
	start, end := m.ValueOffsets(i)
	out := make(map[string]string, end-start)
	for j := int(start); j < int(end); j++ {
		k, _ := strAt(m.Keys(), j)
		out[k], _ = strAt(m.Items(), j)
	}
	return out
}

// strAt returns the string at row i of a string or binary array, a copy:
// the actions it fills outlive the batch, whose buffers an allocator may
// reuse (package arrowpool).
func strAt(a arrow.Array, i int) (string, bool) {
	if a == nil || a.IsNull(i) {
		return "", false
	}
	switch a := a.(type) {
	case *array.String:
		return strings.Clone(a.Value(i)), true
	case *array.LargeString:
		return strings.Clone(a.Value(i)), true
	case *array.StringView:
		return strings.Clone(a.Value(i)), true
	case *array.Binary:
		return string(a.Value(i)), true
	case *array.LargeBinary:
		return string(a.Value(i)), true
	case *array.BinaryView:
		return string(a.Value(i)), true
	}
	return "", false
}

// intAt returns the integer at row i of an integer array.
func intAt(a arrow.Array, i int) (int64, bool) {
	if a == nil || a.IsNull(i) {
		return 0, false
	}
	switch a := a.(type) {
	case *array.Int64:
		return a.Value(i), true
	case *array.Int32:
		return int64(a.Value(i)), true
	case *array.Int16:
		return int64(a.Value(i)), true
	case *array.Int8:
		return int64(a.Value(i)), true
	case *array.Uint64:
		return int64(a.Value(i)), true
	case *array.Uint32:
		return int64(a.Value(i)), true
	case *array.Uint16:
		return int64(a.Value(i)), true
	case *array.Uint8:
		return int64(a.Value(i)), true
	}
	return 0, false
}
