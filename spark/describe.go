package spark

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/sluicefeed/sluice/lake"
	pb "github.com/sluicefeed/sluice/spark/internal/connectpb"
)

// Description is what Sluice needs of a table that Spark alone serves
// (one Sluice cannot read itself): its format, which decides where its
// history comes from, and its current schema.
type Description struct {
	// Format is Delta or Iceberg by the provider Spark names; Other for
	// any other provider.
	Format Format
	// Provider is the provider as Spark names it (delta, iceberg, ...).
	Provider string
	// Schema is the table's current schema as Spark reports it, with
	// field ids numbered in order (Spark does not report Iceberg's); it
	// has no identifier fields.
	Schema *lake.Schema
}

// Describe describes table name: its provider (DESCRIBE TABLE EXTENDED)
// and its schema (AnalyzePlan's schema of SELECT *). An unknown table is
// ErrTableNotFound; a column of a type Sluice does not serve (an interval,
// a variant, a user-defined type, ...) is ErrUnsupportedType.
func (s *Session) Describe(ctx context.Context, name TableName) (Description, error) {
	var d Description
	quoted, err := name.SQL()
	if err != nil {
		return d, err
	}
	err = s.collect(ctx, "DESCRIBE TABLE EXTENDED "+quoted, func(rec arrow.RecordBatch) error {
		if rec.NumCols() < 2 {
			return fmt.Errorf("%w: DESCRIBE TABLE EXTENDED of %s has %d columns", ErrQuery, name, rec.NumCols())
		}
		keys, ok1 := rec.Column(0).(*array.String)
		values, ok2 := rec.Column(1).(*array.String)
		if !ok1 || !ok2 {
			return fmt.Errorf("%w: DESCRIBE TABLE EXTENDED of %s is %s", ErrQuery, name, rec.Schema())
		}
		for i := range keys.Len() {
			if strings.EqualFold(strings.TrimSpace(keys.Value(i)), "Provider") {
				d.Provider = strings.ToLower(strings.TrimSpace(values.Value(i)))
			}
		}
		return nil
	})
	if err != nil {
		return d, err
	}
	switch d.Provider {
	case "delta":
		d.Format = Delta
	case "iceberg":
		d.Format = Iceberg
	default:
		d.Format = Other
	}
	st, err := s.schema(ctx, name)
	if err != nil {
		return d, err
	}
	ids := 0
	fields, err := lakeFields(st, &ids, name.String())
	if err != nil {
		return d, err
	}
	if d.Schema, err = lake.NewSchema(0, nil, fields...); err != nil {
		return d, fmt.Errorf("%w: the schema of %s: %w", ErrQuery, name, err)
	}
	return d, nil
}

// schema returns the struct of a table's columns (AnalyzePlan's schema of
// SELECT *).
func (s *Session) schema(ctx context.Context, name TableName) (*pb.DataType_Struct, error) {
	quoted, err := name.SQL()
	if err != nil {
		return nil, err
	}
	resp, err := s.client.AnalyzePlan(s.outgoing(ctx), &pb.AnalyzePlanRequest{
		SessionId: s.id, UserContext: s.user(), ClientType: &s.remote.UserAgent,
		Analyze: &pb.AnalyzePlanRequest_Schema_{Schema: &pb.AnalyzePlanRequest_Schema{Plan: sqlPlan("SELECT * FROM " + quoted)}},
	})
	if err != nil {
		return nil, classify(err, "schema of "+name.String())
	}
	st := resp.GetSchema().GetSchema().GetStruct()
	if st == nil {
		return nil, fmt.Errorf("%w: the schema of %s is not a struct", ErrQuery, name)
	}
	return st, nil
}

// lakeFields converts a Spark struct's fields, numbering their ids from
// *ids on.
func lakeFields(st *pb.DataType_Struct, ids *int, where string) ([]lake.Field, error) {
	fields := make([]lake.Field, len(st.GetFields()))
	for i, f := range st.GetFields() {
		*ids++
		fields[i] = lake.Field{ID: *ids, Name: f.GetName(), Required: !f.GetNullable()}
		var err error
		if fields[i].Type, err = lakeType(f.GetDataType(), ids, where+"."+f.GetName()); err != nil {
			return nil, err
		}
	}
	return fields, nil
}

// lakeType converts a Spark data type: Spark's TIMESTAMP (an instant) is
// timestamptz, TIMESTAMP_NTZ timestamp, bytes and shorts are ints, chars
// and varchars strings.
func lakeType(t *pb.DataType, ids *int, where string) (lake.Type, error) {
	switch k := t.GetKind().(type) {
	case *pb.DataType_Boolean_:
		return lake.BooleanType{}, nil
	case *pb.DataType_Byte_, *pb.DataType_Short_, *pb.DataType_Integer_:
		return lake.IntType{}, nil
	case *pb.DataType_Long_:
		return lake.LongType{}, nil
	case *pb.DataType_Float_:
		return lake.FloatType{}, nil
	case *pb.DataType_Double_:
		return lake.DoubleType{}, nil
	case *pb.DataType_Decimal_:
		return lake.DecimalType{Precision: int(k.Decimal.GetPrecision()), Scale: int(k.Decimal.GetScale())}, nil
	case *pb.DataType_String_, *pb.DataType_Char_, *pb.DataType_VarChar_:
		return lake.StringType{}, nil
	case *pb.DataType_Binary_:
		return lake.BinaryType{}, nil
	case *pb.DataType_Date_:
		return lake.DateType{}, nil
	case *pb.DataType_Timestamp_:
		return lake.TimestampTzType{}, nil
	case *pb.DataType_TimestampNtz:
		return lake.TimestampType{}, nil
	case *pb.DataType_Struct_:
		fields, err := lakeFields(k.Struct, ids, where)
		if err != nil {
			return nil, err
		}
		return &lake.StructType{Fields: fields}, nil
	case *pb.DataType_Array_:
		*ids++
		elem := lake.Field{ID: *ids, Name: "element", Required: !k.Array.GetContainsNull()}
		var err error
		if elem.Type, err = lakeType(k.Array.GetElementType(), ids, where+".element"); err != nil {
			return nil, err
		}
		return &lake.ListType{ElementID: elem.ID, Element: elem.Type, ElementRequired: elem.Required}, nil
	case *pb.DataType_Map_:
		*ids += 2
		kid, vid := *ids-1, *ids
		key, err := lakeType(k.Map.GetKeyType(), ids, where+".key")
		if err != nil {
			return nil, err
		}
		value, err := lakeType(k.Map.GetValueType(), ids, where+".value")
		if err != nil {
			return nil, err
		}
		return &lake.MapType{KeyID: kid, Key: key, ValueID: vid, Value: value,
			ValueRequired: !k.Map.GetValueContainsNull()}, nil
	}
	return nil, fmt.Errorf("%w: column %s is of Spark type %T", ErrUnsupportedType, where, t.GetKind())
}

// ListTables returns the names of the tables of Spark namespace ns (SHOW
// TABLES IN ns), temporary views left out, sorted as Spark sends them.
func (s *Session) ListTables(ctx context.Context, ns TableName) ([]string, error) {
	quoted, err := ns.SQL()
	if err != nil {
		return nil, err
	}
	var names []string
	err = s.collect(ctx, "SHOW TABLES IN "+quoted, func(rec arrow.RecordBatch) error {
		col := func(name string) arrow.Array {
			if i := rec.Schema().FieldIndices(name); len(i) == 1 {
				return rec.Column(i[0])
			}
			return nil
		}
		tables, ok := col("tableName").(*array.String)
		if !ok {
			return fmt.Errorf("%w: SHOW TABLES IN %s is %s", ErrQuery, ns, rec.Schema())
		}
		temp, _ := col("isTemporary").(*array.Boolean)
		for i := range tables.Len() {
			if temp != nil && temp.IsValid(i) && temp.Value(i) {
				continue
			}
			names = append(names, tables.Value(i))
		}
		return nil
	})
	return names, err
}
