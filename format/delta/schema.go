package delta

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// ErrBadSchema is returned (wrapped, naming the column) when a metaData
// action's schemaString is not a Delta schema ("Schema Serialization
// Format"), holds a type the engine does not read (variant, void, the
// interval types), records a type change the protocol does not allow
// ("Type Widening"), or lacks the column mapping ids and physical names
// its mode needs; and when delta.columnMapping.mode is not a mode.
var ErrBadSchema = errors.New("delta: bad schema")

// DataType is a Delta data type: a PrimitiveType, a DecimalType, a
// *StructType, an *ArrayType or a *MapType. String gives the type's name
// as Spark prints it (integer, decimal(10,2), array<string>).
type DataType interface {
	String() string
	deltaType()
}

// PrimitiveType is a Delta primitive type other than decimal, named as in
// a schemaString.
type PrimitiveType string

// The primitive types the engine reads.
const (
	TypeString       PrimitiveType = "string"
	TypeLong         PrimitiveType = "long"
	TypeInteger      PrimitiveType = "integer"
	TypeShort        PrimitiveType = "short"
	TypeByte         PrimitiveType = "byte"
	TypeFloat        PrimitiveType = "float"
	TypeDouble       PrimitiveType = "double"
	TypeBoolean      PrimitiveType = "boolean"
	TypeBinary       PrimitiveType = "binary"
	TypeDate         PrimitiveType = "date"
	TypeTimestamp    PrimitiveType = "timestamp"
	TypeTimestampNTZ PrimitiveType = "timestamp_ntz"
)

// DecimalType is decimal(Precision, Scale): 1 <= Precision <= 38 and
// 0 <= Scale <= Precision.
type DecimalType struct{ Precision, Scale int }

// StructType is a struct: the table's schema, or a struct column.
type StructType struct{ Fields []StructField }

// StructField is a column of a struct.
type StructField struct {
	Name     string
	Type     DataType
	Nullable bool
	// Metadata is the field's metadata as JSON decodes it, numbers as
	// json.Number: delta.columnMapping.*, delta.typeChanges, comment, ...
	Metadata map[string]any
	// TypeChanges is the field's delta.typeChanges, oldest first: data
	// files written before a change hold its FromType, which a reader
	// casts to the field's current type.
	TypeChanges []TypeChange
}

// ArrayType is an array of ElementType.
type ArrayType struct {
	ElementType  DataType
	ContainsNull bool
}

// MapType is a map from KeyType to ValueType.
type MapType struct {
	KeyType           DataType
	ValueType         DataType
	ValueContainsNull bool
}

// TypeChange is one widening of a column's type ("Type Change Metadata").
type TypeChange struct {
	FromType, ToType DataType
	// FieldPath is "" when the field's own type changed, else the path
	// from the field to the array element or map key or value that
	// changed: "element", "key", "value", "element.value", ...
	FieldPath string
}

func (PrimitiveType) deltaType() {}
func (DecimalType) deltaType()   {}
func (*StructType) deltaType()   {}
func (*ArrayType) deltaType()    {}
func (*MapType) deltaType()      {}

// String returns the type's name.
func (p PrimitiveType) String() string { return string(p) }

// String returns decimal(p,s).
func (d DecimalType) String() string { return fmt.Sprintf("decimal(%d,%d)", d.Precision, d.Scale) }

// String returns struct<name:type,...>.
func (s *StructType) String() string {
	parts := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		parts[i] = f.Name + ":" + f.Type.String()
	}
	return "struct<" + strings.Join(parts, ",") + ">"
}

// String returns array<element>.
func (a *ArrayType) String() string { return "array<" + a.ElementType.String() + ">" }

// String returns map<key,value>.
func (m *MapType) String() string {
	return "map<" + m.KeyType.String() + "," + m.ValueType.String() + ">"
}

// Column mapping metadata keys ("Column Mapping", "Iceberg Compatibility
// V2").
const (
	metaColumnID     = "delta.columnMapping.id"
	metaPhysicalName = "delta.columnMapping.physicalName"
	metaNestedIDs    = "delta.columnMapping.nested.ids"
	// metaParquetNestedIDs is the older key of the nested ids.
	metaParquetNestedIDs = "parquet.field.nested.ids"
	metaTypeChanges      = "delta.typeChanges"
	metaComment          = "comment"
	confMappingMode      = "delta.columnMapping.mode"
)

// ColumnMappingMode is how data files name their columns ("Column
// Mapping"): by display name (none), by physical name (name) or by Parquet
// field id (id).
type ColumnMappingMode string

// The column mapping modes.
const (
	MappingNone ColumnMappingMode = "none"
	MappingName ColumnMappingMode = "name"
	MappingID   ColumnMappingMode = "id"
)

// MappingMode returns the column mapping mode of a metaData action's
// configuration (delta.columnMapping.mode, any case; none when absent).
// The protocol has readers honour it only when the table's protocol
// supports the columnMapping feature (reader version 2, or 3 with the
// feature); checking that is the caller's part.
func MappingMode(configuration map[string]string) (ColumnMappingMode, error) {
	v, ok := configuration[confMappingMode]
	if !ok {
		return MappingNone, nil
	}
	switch m := ColumnMappingMode(strings.ToLower(v)); m {
	case MappingNone, MappingName, MappingID:
		return m, nil
	}
	return "", fmt.Errorf("%w: %s is %q, not none, name or id", ErrBadSchema, confMappingMode, v)
}

// PhysicalName returns the name of f in data files, partition values and
// statistics: its delta.columnMapping.physicalName in the name and id
// modes, else (or when it has none) its Name.
func (f StructField) PhysicalName(mode ColumnMappingMode) string {
	if mode == MappingName || mode == MappingID {
		if p, ok := f.Metadata[metaPhysicalName].(string); ok && p != "" {
			return p
		}
	}
	return f.Name
}

// FieldID returns f's delta.columnMapping.id, and whether it has one (a
// whole number from 0 to 2³¹-1).
func (f StructField) FieldID() (int, bool) {
	v, ok := f.Metadata[metaColumnID]
	if !ok {
		return 0, false
	}
	return metadataInt(v)
}

// metadataInt reads a metadata number (json.Number as ParseSchema decodes
// it, or float64) as a 32-bit non-negative id.
func metadataInt(v any) (int, bool) {
	var f float64
	switch v := v.(type) {
	case json.Number:
		n, err := v.Int64()
		f = float64(n)
		if err != nil || n > math.MaxInt32 {
			return 0, false
		}
	case float64:
		f = v
	default:
		return 0, false
	}
	if f != math.Trunc(f) || f < 0 || f > math.MaxInt32 {
		return 0, false
	}
	return int(f), true
}

// ParseSchema parses the schemaString of a metaData action. Fields must
// have a name (unique among their siblings whatever the case) and a type;
// a missing nullable, containsNull or valueContainsNull is true. The
// variant, void and interval types fail with ErrBadSchema naming the
// column, as do unknown types and type changes (delta.typeChanges) the
// protocol does not allow.
func ParseSchema(schemaString string) (*StructType, error) {
	t, err := parseType("", []byte(schemaString), 0)
	if err != nil {
		return nil, err
	}
	st, ok := t.(*StructType)
	if !ok {
		return nil, fmt.Errorf("%w: the schema is a %s, not a struct", ErrBadSchema, t)
	}
	return st, nil
}

// rawField is a struct field as a schemaString holds it.
type rawField struct {
	Name     *string         `json:"name"`
	Type     json.RawMessage `json:"type"`
	Nullable *bool           `json:"nullable"`
	Metadata map[string]any  `json:"metadata"`
}

// rawComplex is a struct, array or map type as a schemaString holds it.
type rawComplex struct {
	Type              string          `json:"type"`
	Fields            []rawField      `json:"fields"`
	ElementType       json.RawMessage `json:"elementType"`
	ContainsNull      *bool           `json:"containsNull"`
	KeyType           json.RawMessage `json:"keyType"`
	ValueType         json.RawMessage `json:"valueType"`
	ValueContainsNull *bool           `json:"valueContainsNull"`
}

// decodeJSON decodes the one JSON value in b, numbers as json.Number.
func decodeJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON value")
	}
	return nil
}

// orTrue is *b, or true when b is nil.
func orTrue(b *bool) bool { return b == nil || *b }

// maxDepth bounds how deeply types nest: each level decodes the JSON of
// the levels below it again.
const maxDepth = 1000

// parseType parses the type of the column at path ("" for the schema),
// depth types deep.
func parseType(path string, raw json.RawMessage, depth int) (DataType, error) {
	column := path
	if column == "" {
		column = "(the schema)"
	}
	if depth > maxDepth {
		return nil, fmt.Errorf("%w: column %s: types nest more than %d deep", ErrBadSchema, column, maxDepth)
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, fmt.Errorf("%w: column %s has no type", ErrBadSchema, column)
	}
	if raw[0] == '"' {
		var name string
		if err := json.Unmarshal(raw, &name); err != nil {
			return nil, fmt.Errorf("%w: column %s: %w", ErrBadSchema, column, err)
		}
		t, err := parsePrimitive(name)
		if err != nil {
			return nil, fmt.Errorf("%w: column %s: %w", ErrBadSchema, column, err)
		}
		return t, nil
	}
	var c rawComplex
	if err := decodeJSON(raw, &c); err != nil {
		return nil, fmt.Errorf("%w: column %s: %w", ErrBadSchema, column, err)
	}
	switch c.Type {
	case "struct":
		return parseStruct(path, c.Fields, depth)
	case "array":
		elem, err := parseType(join(path, "element"), c.ElementType, depth+1)
		if err != nil {
			return nil, err
		}
		return &ArrayType{ElementType: elem, ContainsNull: orTrue(c.ContainsNull)}, nil
	case "map":
		key, err := parseType(join(path, "key"), c.KeyType, depth+1)
		if err != nil {
			return nil, err
		}
		value, err := parseType(join(path, "value"), c.ValueType, depth+1)
		if err != nil {
			return nil, err
		}
		return &MapType{KeyType: key, ValueType: value, ValueContainsNull: orTrue(c.ValueContainsNull)}, nil
	}
	return nil, fmt.Errorf("%w: column %s: unknown type %q", ErrBadSchema, column, c.Type)
}

// join appends a field path component.
func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// parseStruct parses the fields of the struct at path.
func parseStruct(path string, raws []rawField, depth int) (*StructType, error) {
	st := &StructType{Fields: make([]StructField, 0, len(raws))}
	names := make(map[string]string, len(raws))
	for i, r := range raws {
		if r.Name == nil || *r.Name == "" {
			return nil, fmt.Errorf("%w: field %d of %s has no name", ErrBadSchema, i, join(path, "(struct)"))
		}
		column := join(path, *r.Name)
		lower := strings.ToLower(*r.Name)
		if other, ok := names[lower]; ok {
			return nil, fmt.Errorf("%w: columns %s and %s differ only in case", ErrBadSchema, join(path, other), column)
		}
		names[lower] = *r.Name
		t, err := parseType(column, r.Type, depth+1)
		if err != nil {
			return nil, err
		}
		f := StructField{Name: *r.Name, Type: t, Nullable: orTrue(r.Nullable), Metadata: r.Metadata}
		if f.TypeChanges, err = parseTypeChanges(f); err != nil {
			return nil, fmt.Errorf("%w: column %s: %w", ErrBadSchema, column, err)
		}
		st.Fields = append(st.Fields, f)
	}
	return st, nil
}

// parsePrimitive parses a primitive type's name.
func parsePrimitive(name string) (DataType, error) {
	switch p := PrimitiveType(name); p {
	case TypeString, TypeLong, TypeInteger, TypeShort, TypeByte, TypeFloat, TypeDouble,
		TypeBoolean, TypeBinary, TypeDate, TypeTimestamp, TypeTimestampNTZ:
		return p, nil
	}
	switch {
	case name == "variant":
		return nil, errors.New("variant columns are not supported")
	case name == "void":
		return nil, errors.New("void columns (always null, in no data file) are not supported")
	case strings.HasPrefix(name, "decimal(") && strings.HasSuffix(name, ")"):
		p, s, ok := strings.Cut(name[len("decimal("):len(name)-1], ",")
		if ok {
			prec, err1 := strconv.Atoi(strings.TrimSpace(p))
			scale, err2 := strconv.Atoi(strings.TrimSpace(s))
			if err1 == nil && err2 == nil && prec >= 1 && prec <= 38 && scale >= 0 && scale <= prec {
				return DecimalType{Precision: prec, Scale: scale}, nil
			}
		}
		return nil, fmt.Errorf("%q is not a decimal type of precision 1 to 38 and scale 0 to the precision", name)
	}
	return nil, fmt.Errorf("unknown type %q", name)
}

// parseTypeChanges reads and checks f's delta.typeChanges: a JSON list (or
// a string holding one) of {fromType, toType, fieldPath}.
func parseTypeChanges(f StructField) ([]TypeChange, error) {
	v, ok := f.Metadata[metaTypeChanges]
	if !ok {
		return nil, nil
	}
	if s, isString := v.(string); isString {
		if err := decodeJSON([]byte(s), &v); err != nil {
			return nil, fmt.Errorf("%s: %w", metaTypeChanges, err)
		}
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s is not a list", metaTypeChanges)
	}
	changes := make([]TypeChange, 0, len(list))
	for i, item := range list {
		m, _ := item.(map[string]any)
		from, _ := m["fromType"].(string)
		to, _ := m["toType"].(string)
		path, _ := m["fieldPath"].(string)
		ft, err1 := parsePrimitive(from)
		tt, err2 := parsePrimitive(to)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", metaTypeChanges, i, err)
		}
		if !widens(ft, tt) {
			return nil, fmt.Errorf("%s[%d]: %s to %s is not a type widening the protocol allows", metaTypeChanges, i, ft, tt)
		}
		if !hasFieldPath(f.Type, path) {
			return nil, fmt.Errorf("%s[%d]: %s has no field path %q", metaTypeChanges, i, f.Type, path)
		}
		changes = append(changes, TypeChange{FromType: ft, ToType: tt, FieldPath: path})
	}
	return changes, nil
}

// intRanks orders the integer types by width.
var intRanks = map[DataType]int{TypeByte: 1, TypeShort: 2, TypeInteger: 3, TypeLong: 4}

// widens reports whether from → to is a type change "Type Widening"
// allows: a wider integer, float to double, byte/short/integer to double,
// date to timestamp_ntz, a decimal with k1 >= k2 >= 0 more digits of
// precision and scale, and an integer type to a decimal with enough
// integer digits (10 for byte to integer, 20 for long).
func widens(from, to DataType) bool {
	fr, tr := intRanks[from], intRanks[to]
	toDec, toIsDec := to.(DecimalType)
	switch {
	case fr > 0 && tr > 0:
		return fr < tr
	case from == TypeFloat && to == TypeDouble:
		return true
	case fr > 0 && fr <= 3 && to == TypeDouble:
		return true
	case from == TypeDate && to == TypeTimestampNTZ:
		return true
	case fr > 0 && toIsDec:
		digits := 10
		if fr == 4 {
			digits = 20
		}
		return toDec.Precision-toDec.Scale >= digits
	}
	if fromDec, ok := from.(DecimalType); ok && toIsDec {
		k1, k2 := toDec.Precision-fromDec.Precision, toDec.Scale-fromDec.Scale
		return k1 >= k2 && k2 >= 0
	}
	return false
}

// hasFieldPath reports whether path ("" or element/key/value components
// joined by dots) leads from t through arrays and maps.
func hasFieldPath(t DataType, path string) bool {
	if path == "" {
		return true
	}
	head, rest, _ := strings.Cut(path, ".")
	switch t := t.(type) {
	case *ArrayType:
		return head == "element" && hasFieldPath(t.ElementType, rest)
	case *MapType:
		return (head == "key" && hasFieldPath(t.KeyType, rest)) || (head == "value" && hasFieldPath(t.ValueType, rest))
	}
	return false
}
