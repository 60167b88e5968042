package server_test

import (
	"context"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/feed"
	icebergformat "github.com/sluicefeed/sluice/format/iceberg"
	"github.com/sluicefeed/sluice/internal/testkit/faultio"
)

// panickyTables serves the catalog's tables with a file IO that panics
// while reading a data file when armed: a bug in a storage client.
type panickyTables struct {
	feed.Tables // the test's *catalog.Catalog
	armed       *atomic.Bool
}

func (p panickyTables) Load(ctx context.Context, name string) (feed.Table, error) {
	tbl, err := p.Tables.(*catalog.Catalog).LoadTable(ctx, name)
	if err != nil {
		return nil, err
	}
	return icebergformat.NewTable(faultio.PanickingTable(tbl, p.armed), nil), nil
}

// TestPanicInAReadIsInternalAndTheServerGoesOn: a read that panics (in
// iceberg-go's scan workers, outside any interceptor) ends with INTERNAL
// for its client alone, and the server serves the next request.
func TestPanicInAReadIsInternalAndTheServerGoesOn(t *testing.T) {
	armed := &atomic.Bool{}
	f := startWith(t, 3, 10, 10, func(tables feed.Tables) feed.Tables {
		return panickyTables{Tables: tables, armed: armed}
	})
	ctx := context.Background()
	ticket := []byte(`{"table": "shop.orders"}`)
	armed.Store(true)
	_, err := f.doGet(t, ctx, ticket)
	checkStatus(t, err, codes.Internal, "panic")
	armed.Store(false)
	got, err := f.doGet(t, ctx, ticket)
	if err != nil {
		t.Fatalf("the request after the panic: %v", err)
	}
	if got.rows != 30 {
		t.Fatalf("the request after the panic read %d rows, want 30", got.rows)
	}
}
