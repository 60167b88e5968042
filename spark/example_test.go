package spark_test

import (
	"context"
	"fmt"
	"log"

	"github.com/sluicefeed/sluice/spark"
)

// Detect a table's change engine, then read a window through Spark.
func Example() {
	ctx := context.Background()
	s, err := spark.Dial("sc://127.0.0.1:15002", spark.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close(ctx)

	table := spark.Table{Name: spark.TableName{"spark_catalog", "sales", "orders"}, Format: spark.Delta, NativeReadable: true}
	verdict, err := s.Detect(ctx, table, spark.Window{})
	if err != nil {
		log.Fatal(err)
	}
	if verdict.Chosen == spark.EngineNative {
		fmt.Println("Sluice reads it natively:", verdict.Reason)
		return
	}
	req := spark.Request{
		Table:   table,
		Engine:  verdict.Chosen,
		Window:  spark.Window{From: spark.AtVersion(3), To: spark.AtVersion(7)},
		Columns: []string{"id", "amount"},
		Filter:  spark.Compare{Column: spark.Column{"country"}, Op: spark.Eq, Value: spark.String("SE")},
	}
	for rec, err := range s.Read(ctx, req) {
		if err != nil {
			log.Fatal(err) // the read is incomplete
		}
		fmt.Println(rec.NumRows()) // rec is released when the loop body ends
	}
}
