package server_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/sluicefeed/sluice/server"
)

// TestFlightSessionActions: the Flight session actions, which the ADBC
// Flight SQL driver sends (CloseSession on every disconnect), succeed on a
// server that keeps no session: CloseSession closes, GetSessionOptions has
// none, SetSessionOptions refuses each option by name in its result; none
// logs a failed call.
func TestFlightSessionActions(t *testing.T) {
	var logs logBuffer
	f := startWith(t, 1, 2, 8, nil, func(o *server.Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	ctx := context.Background()
	cl := f.client

	closed, err := cl.CloseSession(ctx, &flight.CloseSessionRequest{})
	if err != nil {
		t.Fatalf("CloseSession: %v", err)
	}
	if closed.GetStatus() != flight.CloseSessionResultClosed {
		t.Fatalf("CloseSession: status %v, want CLOSED", closed.GetStatus())
	}
	opts, err := cl.GetSessionOptions(ctx, &flight.GetSessionOptionsRequest{})
	if err != nil {
		t.Fatalf("GetSessionOptions: %v", err)
	}
	if len(opts.GetSessionOptions()) != 0 {
		t.Fatalf("GetSessionOptions: %v, want none", opts.GetSessionOptions())
	}
	values, err := flight.NewSessionOptionValues(map[string]any{"catalog": "sluice"})
	if err != nil {
		t.Fatal(err)
	}
	set, err := cl.SetSessionOptions(ctx, &flight.SetSessionOptionsRequest{SessionOptions: values})
	if err != nil {
		t.Fatalf("SetSessionOptions: %v", err)
	}
	if e := set.GetErrors()["catalog"]; e.GetValue() != flight.SetSessionOptionsResultErrorInvalidName {
		t.Fatalf("SetSessionOptions of an option Sluice does not have: %v, want INVALID_NAME", set.GetErrors())
	}
	if failed := logs.lines("call failed"); len(failed) > 0 {
		t.Fatalf("session actions logged failed calls: %q", failed)
	}
}
