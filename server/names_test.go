package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicefeed/sluice/auth"
	sluicev1 "github.com/sluicefeed/sluice/gen/sluice/v1"
	"github.com/sluicefeed/sluice/server"
)

// TestLongNamesAreCut sends names of 900 KB (tables, columns, a start
// mode, a compression, an action, a JSON field, a consumer) through real
// gRPC calls: each call fails with the code the name deserves and a short
// message that repeats the name's first bytes and its length, and no log
// line grows with the name. (A status that large used to reach the client
// as INTERNAL "RST_STREAM", and every call logged a line of megabytes.)
func TestLongNamesAreCut(t *testing.T) {
	var logs logBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	authz, err := auth.NewAuthorizer(auth.Config{Rules: []auth.Rule{{Principals: []string{"*"},
		Tables: []string{"shop.*"}}}})
	if err != nil {
		t.Fatal(err)
	}
	f := startWith(t, 1, 2, 8, nil, func(o *server.Options) { o.Logger, o.Authorizer = log, authz })
	ctx := context.Background()
	const n = 900 << 10
	long := strings.Repeat("x", n)
	cut := fmt.Sprintf("…(%d bytes)", n)
	table := "shop." + long
	tableCut := fmt.Sprintf("…(%d bytes)", len(table))
	ticket := func(format string, args ...any) []byte { return []byte(fmt.Sprintf(format, args...)) }
	tests := []struct {
		name string
		call func() error
		code codes.Code
		cut  string
	}{
		{"DoGet of an unknown table", func() error {
			_, err := f.doGet(t, ctx, ticket(`{"table": %q}`, table))
			return err
		}, codes.NotFound, tableCut},
		{"DoGet of a table not granted", func() error {
			_, err := f.doGet(t, ctx, ticket(`{"table": %q}`, "hr."+long))
			return err
		}, codes.PermissionDenied, fmt.Sprintf("…(%d bytes)", n+3)},
		{"DoGet of an unknown table named in two-byte characters", func() error {
			_, err := f.doGet(t, ctx, ticket(`{"table": %q}`, "shop."+strings.Repeat("é", n/2)))
			return err
		}, codes.NotFound, fmt.Sprintf("…(%d bytes)", n+5)},
		{"GetFlightInfo of an unknown table", func() error {
			_, err := f.client.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD,
				Cmd: ticket(`{"table": %q}`, table)})
			return err
		}, codes.NotFound, tableCut},
		{"a follow stream of an unknown table", func() error {
			_, err := f.doGet(t, ctx, ticket(`{"table": %q, "follow": true}`, table))
			return err
		}, codes.NotFound, tableCut},
		{"an unknown column", func() error {
			_, err := f.doGet(t, ctx, ticket(`{"table": "shop.orders", "columns": [%q]}`, long))
			return err
		}, codes.InvalidArgument, cut},
		{"a column named twice", func() error {
			_, err := f.doGet(t, ctx, ticket(`{"table": "shop.orders", "columns": [%q, %q]}`, long[:n/2], long[:n/2]))
			return err
		}, codes.InvalidArgument, fmt.Sprintf("…(%d bytes)", n/2)},
		{"a start mode", func() error {
			_, err := f.doGet(t, ctx, ticket(`{"table": "shop.orders", "start": %q}`, long))
			return err
		}, codes.InvalidArgument, cut},
		{"a compression", func() error {
			_, err := f.doGet(t, ctx, ticket(`{"table": "shop.orders", "compression": %q}`, long))
			return err
		}, codes.InvalidArgument, cut},
		{"a JSON field", func() error {
			_, err := f.doGet(t, ctx, ticket(`{"table": "shop.orders", %q: 1}`, long))
			return err
		}, codes.InvalidArgument, "bytes)"},
		{"a consumer", func() error {
			_, err := f.doGet(t, ctx, ticket(`{"table": "shop.orders", "consumer": %q}`, long))
			return err
		}, codes.InvalidArgument, fmt.Sprintf("consumer id of %d bytes", n)},
		{"the action commit_seq", func() error {
			_, err := f.action(ctx, "commit_seq", fmt.Sprintf(`{"table": %q}`, table))
			return err
		}, codes.NotFound, tableCut},
		{"an action body field", func() error {
			_, err := f.action(ctx, "commit_seq", fmt.Sprintf(`{%q: 1}`, long))
			return err
		}, codes.InvalidArgument, "bytes)"},
		{"an unknown action", func() error {
			_, err := f.action(ctx, long, `{}`)
			return err
		}, codes.InvalidArgument, cut},
		{"ControlService.CommitSeq", func() error {
			_, err := f.control.CommitSeq(ctx, &sluicev1.CommitSeqRequest{Table: table})
			return err
		}, codes.NotFound, tableCut},
		{"ControlService.ListSnapshots", func() error {
			_, err := f.control.ListSnapshots(ctx, &sluicev1.ListSnapshotsRequest{Table: table})
			return err
		}, codes.NotFound, tableCut},
		{"ControlService.Explain", func() error {
			_, err := f.control.Explain(ctx, &sluicev1.ChangeRequest{Table: "shop.orders", Identity: []string{long}})
			return err
		}, codes.InvalidArgument, cut},
		{"ControlService.GetConsumerProgress", func() error {
			_, err := f.control.GetConsumerProgress(ctx, &sluicev1.ConsumerProgressRequest{Consumer: "c", Table: table})
			return err
		}, codes.NotFound, tableCut},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			st, _ := status.FromError(err)
			if st.Code() != tt.code || len(st.Message()) > 1000 || !strings.Contains(st.Message(), tt.cut) ||
				!utf8.ValidString(st.Message()) {
				msg := st.Message()
				if len(msg) > 300 {
					msg = fmt.Sprintf("%s... (%d bytes)", msg[:300], len(msg))
				}
				t.Fatalf("%s %q; want %s, a message under 1000 bytes saying %q", st.Code(), msg, tt.code, tt.cut)
			}
		})
	}
	logs.mu.Lock()
	defer logs.mu.Unlock()
	for _, line := range strings.Split(logs.buf.String(), "\n") {
		if len(line) > 8<<10 {
			t.Fatalf("a log line of %d bytes: %.300s...", len(line), line)
		}
	}
}
