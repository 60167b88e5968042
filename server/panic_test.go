package server_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"google.golang.org/grpc/codes"

	"github.com/sluicefeed/sluice/feed"
)

// panickyTables serves the catalog's tables with a file IO that panics
// while reading a data file when armed: a bug in a storage client.
type panickyTables struct {
	feed.Tables
	armed *atomic.Bool
}

func (p panickyTables) LoadTable(ctx context.Context, name string) (*table.Table, error) {
	tbl, err := p.Tables.LoadTable(ctx, name)
	if err != nil {
		return nil, err
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(),
		func(ctx context.Context) (iceio.IO, error) {
			fsys, err := tbl.FS(ctx)
			if err != nil {
				return nil, err
			}
			return panickyIO{IO: fsys, armed: p.armed}, nil
		}, nil), nil
}

type panickyIO struct {
	iceio.IO
	armed *atomic.Bool
}

func (p panickyIO) Open(name string) (iceio.File, error) {
	f, err := p.IO.Open(name)
	if err != nil || !strings.HasSuffix(name, ".parquet") {
		return f, err
	}
	return panickyFile{File: f, armed: p.armed}, nil
}

type panickyFile struct {
	iceio.File
	armed *atomic.Bool
}

func (f panickyFile) ReadAt(b []byte, off int64) (int, error) {
	if f.armed.Load() {
		panic("injected: storage client bug")
	}
	return f.File.ReadAt(b, off)
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
