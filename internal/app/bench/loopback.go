package bench

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	flightgen "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// loopback serves pre-decoded record batches over Arrow Flight on loopback:
// the limit of moving the same rows through gRPC on this machine.
type loopback struct {
	records []arrow.RecordBatch
	gs      *grpc.Server
	client  flight.Client
}

type loopbackServer struct {
	flight.BaseFlightServer
	records []arrow.RecordBatch
}

func (s *loopbackServer) DoGet(_ *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	w := flight.NewRecordWriter(stream, ipcSchema(s.records[0].Schema()))
	defer w.Close()
	for _, r := range s.records {
		if err := w.Write(r); err != nil {
			return err
		}
	}
	return nil
}

func newLoopback(ctx context.Context, paths []string) (*loopback, error) {
	lb := &loopback{}
	for _, p := range paths {
		pf, err := file.OpenParquetFile(strings.TrimPrefix(p, "file://"), false)
		if err != nil {
			return nil, err
		}
		// 16Ki rows of the reference schema encode to about 1.5 MiB, under
		// the 4 MiB default limit of gRPC clients (as the feed's batches).
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 16 << 10}, memory.DefaultAllocator)
		if err != nil {
			pf.Close()
			return nil, err
		}
		rr, err := fr.GetRecordReader(ctx, nil, nil)
		if err != nil {
			pf.Close()
			return nil, err
		}
		for rr.Next() {
			r := rr.RecordBatch()
			r.Retain()
			lb.records = append(lb.records, r)
		}
		rr.Release()
		pf.Close()
	}
	if len(lb.records) == 0 {
		return nil, errors.New("loopback: no records")
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	lb.gs = grpc.NewServer()
	flightgen.RegisterFlightServiceServer(lb.gs, &loopbackServer{records: lb.records})
	go func() { _ = lb.gs.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	lb.client = flight.NewClientFromConn(conn, nil)
	return lb, nil
}

func (lb *loopback) read() (int64, error) {
	stream, err := lb.client.DoGet(context.Background(), &flight.Ticket{Ticket: []byte("all")})
	if err != nil {
		return 0, err
	}
	rdr, err := flight.NewRecordReader(stream)
	if err != nil {
		return 0, err
	}
	defer rdr.Release()
	var n int64
	for rdr.Next() {
		n += rdr.RecordBatch().NumRows()
	}
	if err := rdr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	return n, nil
}

func (lb *loopback) close() {
	lb.client.Close()
	lb.gs.Stop()
	for _, r := range lb.records {
		r.Release()
	}
}
