package spark

import (
	"errors"
	"testing"

	"github.com/sluicefeed/sluice/lake"
	pb "github.com/sluicefeed/sluice/spark/internal/connectpb"
)

// TestLakeFields: Spark's types become lake types (TIMESTAMP an instant,
// TIMESTAMP_NTZ a wall-clock time, nested structs and lists numbered in
// order); a type Sluice does not serve is ErrUnsupportedType, naming the
// column.
func TestLakeFields(t *testing.T) {
	field := func(name string, dt *pb.DataType, nullable bool) *pb.DataType_StructField {
		return &pb.DataType_StructField{Name: name, DataType: dt, Nullable: nullable}
	}
	st := &pb.DataType_Struct{Fields: []*pb.DataType_StructField{
		field("id", &pb.DataType{Kind: &pb.DataType_Integer_{Integer: &pb.DataType_Integer{}}}, false),
		field("amount", &pb.DataType{Kind: &pb.DataType_Decimal_{Decimal: &pb.DataType_Decimal{Precision: ptr32(9),
			Scale: ptr32(2)}}}, true),
		field("at", &pb.DataType{Kind: &pb.DataType_Timestamp_{Timestamp: &pb.DataType_Timestamp{}}}, true),
		field("wall", &pb.DataType{Kind: &pb.DataType_TimestampNtz{TimestampNtz: &pb.DataType_TimestampNTZ{}}}, true),
		field("addr", &pb.DataType{Kind: &pb.DataType_Struct_{Struct: &pb.DataType_Struct{Fields: []*pb.DataType_StructField{
			field("city", &pb.DataType{Kind: &pb.DataType_String_{String_: &pb.DataType_String{}}}, true)}}}}, true),
		field("tags", &pb.DataType{Kind: &pb.DataType_Array_{Array: &pb.DataType_Array{ContainsNull: true,
			ElementType: &pb.DataType{Kind: &pb.DataType_Long_{Long: &pb.DataType_Long{}}}}}}, true),
	}}
	ids := 0
	fields, err := lakeFields(st, &ids, "t")
	if err != nil {
		t.Fatal(err)
	}
	schema, err := lake.NewSchema(0, nil, fields...)
	if err != nil {
		t.Fatal(err)
	}
	want := "[1: id: required int 2: amount: optional decimal(9, 2) 3: at: optional timestamptz 4: wall: optional timestamp " +
		"5: addr: optional struct<6: city: optional string> 7: tags: optional list<long>]"
	if got := lakeFieldsString(schema.Fields); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	bad := &pb.DataType_Struct{Fields: []*pb.DataType_StructField{
		field("span", &pb.DataType{Kind: &pb.DataType_DayTimeInterval_{DayTimeInterval: &pb.DataType_DayTimeInterval{}}}, true)}}
	if _, err := lakeFields(bad, &ids, "t"); !errors.Is(err, ErrUnsupportedType) {
		t.Errorf("an interval column: %v", err)
	}
}

func ptr32(v int32) *int32 { return &v }

func lakeFieldsString(fields []lake.Field) string {
	s := "["
	for i, f := range fields {
		if i > 0 {
			s += " "
		}
		s += f.String()
	}
	return s + "]"
}
