package server

// This test checks what a running server answers to each Flight SQL
// message, as a descriptor's command and as a ticket, against the table
// of docs/PROTOCOL.md's Flight SQL section.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	flightgen "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"
)

var (
	docSQLMessage = regexp.MustCompile(`\b((?:Command|Ticket)\w+)`)
	docSQLCode    = regexp.MustCompile(`^` + "`?" + `([A-Z_]+)\b`)
)

// docSQLOutcome parses a cell of the Flight SQL messages table: "served"
// (codes.OK) or a code, as the contract writes it, first.
func docSQLOutcome(t *testing.T, cell string) codes.Code {
	t.Helper()
	if strings.HasPrefix(cell, "served") {
		return codes.OK
	}
	m := docSQLCode.FindStringSubmatch(cell)
	if m == nil {
		t.Fatalf("Flight SQL table: cell %q is neither served nor a code", cell)
	}
	return docCode(t, m[1])
}

// TestProtocolDocFlightSQLMessages: every command and ticket message of
// Flight SQL, sent as a descriptor's command to GetFlightInfo and as a
// ticket to DoGet, is served or refused with the code the contract's table
// gives it; the table names each message once, and every message of
// Flight SQL.
func TestProtocolDocFlightSQLMessages(t *testing.T) {
	doc := readProtocolDoc(t)
	d := startDocServer(t)
	ctx := context.Background()
	query := fmt.Sprintf("SELECT * FROM table_changes('%s')", d.table)
	handle, err := json.Marshal(sqlHandle{Query: query, To: &d.snapshots[len(d.snapshots)-1]})
	if err != nil {
		t.Fatal(err)
	}
	ns, name, _ := strings.Cut(d.table, ".")
	// A message of each type that Sluice would serve when it takes the type.
	fill := map[string]map[string]any{
		"CommandStatementQuery":         {"query": query},
		"CommandPreparedStatementQuery": {"prepared_statement_handle": []byte(query)},
		"TicketStatementQuery":          {"statement_handle": handle},
		"CommandGetPrimaryKeys":         {"db_schema": ns, "table": name},
		"CommandGetExportedKeys":        {"db_schema": ns, "table": name},
		"CommandGetImportedKeys":        {"db_schema": ns, "table": name},
		"CommandGetCrossReference":      {"pk_db_schema": ns, "pk_table": name, "fk_db_schema": ns, "fk_table": name},
		"CommandStatementUpdate":        {"query": "DELETE FROM " + d.table},
	}
	message := func(t *testing.T, typ string) []byte {
		t.Helper()
		mt, err := protoregistry.GlobalTypes.FindMessageByName(flightgen.File_FlightSql_proto.Package().Append(
			protoreflect.Name(typ)))
		if err != nil {
			t.Fatal(err)
		}
		m := mt.New()
		for field, v := range fill[typ] {
			fd := m.Descriptor().Fields().ByName(protoreflect.Name(field))
			if fd == nil {
				t.Fatalf("%s has no field %s", typ, field)
			}
			m.Set(fd, protoreflect.ValueOf(v))
		}
		a, err := anypb.New(m.Interface())
		if err != nil {
			t.Fatal(err)
		}
		b, err := proto.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	doGet := func(ticket []byte) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stream, err := d.client.DoGet(ctx, &flight.Ticket{Ticket: ticket})
		if err != nil {
			return err
		}
		for {
			if _, err := stream.Recv(); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
		}
	}

	documented := map[string]bool{}
	for _, row := range docTable(t, doc, "Flight SQL message", "GetFlightInfo", "DoGet") {
		info, get := docSQLOutcome(t, row[1]), docSQLOutcome(t, row[2])
		for _, m := range docSQLMessage.FindAllStringSubmatch(row[0], -1) {
			typ := m[1]
			if documented[typ] {
				t.Errorf("Flight SQL table: %s is named twice", typ)
			}
			documented[typ] = true
			t.Run(typ, func(t *testing.T) {
				b := message(t, typ)
				_, err := d.client.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: b})
				if got := status.Code(err); got != info {
					t.Errorf("GetFlightInfo of %s: %v, the contract says %v", typ, err, info)
				}
				if got := status.Code(doGet(b)); got != get {
					t.Errorf("DoGet of a %s ticket: %v, the contract says %v", typ, doGet(b), get)
				}
			})
		}
	}
	var all []string
	msgs := flightgen.File_FlightSql_proto.Messages()
	for i := range msgs.Len() {
		n := string(msgs.Get(i).Name())
		if strings.HasPrefix(n, "Command") || strings.HasPrefix(n, "Ticket") {
			all = append(all, n)
		}
	}
	for _, n := range all {
		if !documented[n] {
			t.Errorf("the Flight SQL table of %s does not name %s", protocolDoc, n)
		}
	}
	for n := range documented {
		if !slices.Contains(all, n) {
			t.Errorf("the Flight SQL table of %s names %s, which is not a Flight SQL message", protocolDoc, n)
		}
	}
}
