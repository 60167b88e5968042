package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/iceberg-go"
	"google.golang.org/grpc/codes"

	sluicev1 "github.com/sluicefeed/sluice/gen/sluice/v1"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
	"github.com/sluicefeed/sluice/server"
)

// TestBrokenTableLeftOutOfListings: a table whose metadata file is gone
// is left out of list_tables, ListTables and ListFlights, with a warning
// in the log, and the listings still answer with the other tables; a call
// that names the broken table fails as before.
func TestBrokenTableLeftOutOfListings(t *testing.T) {
	var logs logBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	f := startWith(t, 1, 2, 8, nil, func(o *server.Options) { o.Logger = log })
	ctx := context.Background()
	broken, err := tablewrite.CreateTable(ctx, f.cat, "shop.broken", iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64}))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(strings.TrimPrefix(broken.MetadataLocation(), "file://")); err != nil {
		t.Fatal(err)
	}

	body, err := f.action(ctx, "list_tables", `{}`)
	if err != nil {
		t.Fatalf("list_tables with a broken table: %v", err)
	}
	var list struct {
		Tables []struct{ Name string } `json:"tables"`
	}
	if err := json.Unmarshal(body, &list); err != nil || len(list.Tables) != 1 || list.Tables[0].Name != tableName {
		t.Fatalf("list_tables: %s %v; want %s alone", body, err, tableName)
	}
	typed, err := f.control.ListTables(ctx, &sluicev1.ListTablesRequest{})
	if err != nil || len(typed.Tables) != 1 || typed.Tables[0].Name != tableName {
		t.Fatalf("ListTables: %v %v; want %s alone", typed, err, tableName)
	}
	flights, err := f.client.ListFlights(ctx, &flight.Criteria{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for {
		info, err := flights.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("ListFlights with a broken table: %v", err)
		}
		names = append(names, string(info.FlightDescriptor.Cmd))
	}
	if len(names) != 1 || !strings.Contains(names[0], tableName) {
		t.Fatalf("ListFlights: %v, want %s alone", names, tableName)
	}
	if n := len(logs.lines("table left out of a listing")); n != 3 || !strings.Contains(
		logs.lines("table left out of a listing")[0], "table=shop.broken") {
		t.Fatalf("%d warnings naming the broken table, want one per listing:\n%s", n, logs.buf.String())
	}
	_, err = f.control.CommitSeq(ctx, &sluicev1.CommitSeqRequest{Table: "shop.broken"})
	if err == nil || strings.Contains(err.Error(), codes.OK.String()) {
		t.Fatalf("commit_seq of the broken table: %v, want its error", err)
	}
}
