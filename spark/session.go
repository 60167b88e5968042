package spark

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	pb "github.com/sluicefeed/sluice/spark/internal/connectpb"
)

// Options configure a Session. The zero value is usable.
type Options struct {
	// Allocator allocates the Arrow batches a read yields; nil:
	// memory.DefaultAllocator.
	Allocator memory.Allocator
	// Logger receives a line per interrupted operation and per verdict;
	// nil: slog.Default().
	Logger *slog.Logger
	// InterruptTimeout bounds the Interrupt call sent when a read's
	// context ends; 0: 10 s.
	InterruptTimeout time.Duration
}

// Session is one Spark Connect session on one server: its own temporary
// views and SQL settings. It is safe for concurrent use; every call takes
// the context that bounds it. Close it when done.
type Session struct {
	remote  Remote
	conn    *grpc.ClientConn
	client  pb.SparkConnectServiceClient
	id      string // the session id Sluice chose (a UUID)
	md      metadata.MD
	mem     memory.Allocator
	log     *slog.Logger
	timeout time.Duration

	mu      sync.Mutex // guards version and deltaChangelog
	version string     // the server's version, once asked
	// deltaChangelog: the session has set Delta's changelogV2 flag.
	deltaChangelog bool

	// Test hooks: an operation started, an interrupt answered.
	onStart     func(id, statement string)
	onInterrupt func(id string, interrupted []string)
}

// Dial opens a session on the Spark Connect server that uri names (see
// [ParseRemote]). It does not contact the server: the first call does.
func Dial(uri string, opts Options) (*Session, error) {
	r, err := ParseRemote(uri)
	if err != nil {
		return nil, err
	}
	creds := insecure.NewCredentials()
	if r.TLS {
		creds = credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})
	}
	conn, err := grpc.NewClient(r.Addr(), grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(128<<20)))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidRequest, r, err)
	}
	s := &Session{remote: r, conn: conn, client: pb.NewSparkConnectServiceClient(conn), id: uuid.NewString(),
		md: metadata.MD{}, mem: opts.Allocator, log: opts.Logger, timeout: opts.InterruptTimeout}
	if r.Token != "" {
		s.md.Set("authorization", "Bearer "+r.Token)
	}
	if s.mem == nil {
		s.mem = memory.DefaultAllocator
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.timeout == 0 {
		s.timeout = 10 * time.Second
	}
	return s, nil
}

// Remote is the server's address, without its token.
func (s *Session) Remote() string { return s.remote.String() }

// Close releases the session on the server (its temporary views go with
// it) and closes the connection.
func (s *Session) Close(ctx context.Context) error {
	_, err := s.client.ReleaseSession(s.outgoing(ctx), &pb.ReleaseSessionRequest{
		SessionId: s.id, UserContext: s.user(), ClientType: &s.remote.UserAgent})
	cerr := s.conn.Close()
	if err != nil {
		return classify(err, "release session")
	}
	return cerr
}

func (s *Session) user() *pb.UserContext { return &pb.UserContext{UserId: s.remote.UserID} }

func (s *Session) outgoing(ctx context.Context) context.Context {
	if len(s.md) == 0 {
		return ctx
	}
	return metadata.NewOutgoingContext(ctx, s.md)
}

// Version returns the server's Spark version ("4.2.0"), asked once with
// AnalyzePlan's SparkVersion.
func (s *Session) Version(ctx context.Context) (string, error) {
	s.mu.Lock()
	v := s.version
	s.mu.Unlock()
	if v != "" {
		return v, nil
	}
	resp, err := s.client.AnalyzePlan(s.outgoing(ctx), &pb.AnalyzePlanRequest{
		SessionId: s.id, UserContext: s.user(), ClientType: &s.remote.UserAgent,
		Analyze: &pb.AnalyzePlanRequest_SparkVersion_{SparkVersion: &pb.AnalyzePlanRequest_SparkVersion{}},
	})
	if err != nil {
		return "", classify(err, "spark version")
	}
	v = resp.GetSparkVersion().GetVersion()
	if v == "" {
		return "", fmt.Errorf("%w: %s answered no version", ErrQuery, s.remote)
	}
	s.mu.Lock()
	s.version = v
	s.mu.Unlock()
	return v, nil
}

// Exec runs a statement (DDL, DML, SET, CALL) to its end and discards its
// result. Tests write tables with it; the backend sends CALL and DROP VIEW.
func (s *Session) Exec(ctx context.Context, statement string) error {
	plan := &pb.Plan{OpType: &pb.Plan_Command{Command: &pb.Command{
		CommandType: &pb.Command_SqlCommand{SqlCommand: &pb.SqlCommand{Input: sqlRelation(statement)}}}}}
	return s.run(ctx, plan, statement, func(arrow.RecordBatch) error { return nil })
}

func sqlRelation(query string) *pb.Relation {
	return &pb.Relation{RelType: &pb.Relation_Sql{Sql: &pb.SQL{Query: query}}}
}

func sqlPlan(query string) *pb.Plan {
	return &pb.Plan{OpType: &pb.Plan_Root{Root: sqlRelation(query)}}
}

// enableDeltaChangelog sets spark.databricks.delta.changelogV2.enabled in
// the session, once: Delta answers CHANGES only with it, and a server need
// not set it for every session.
func (s *Session) enableDeltaChangelog(ctx context.Context) error {
	s.mu.Lock()
	done := s.deltaChangelog
	s.mu.Unlock()
	if done {
		return nil
	}
	if err := s.Exec(ctx, "SET spark.databricks.delta.changelogV2.enabled = true"); err != nil {
		return err
	}
	s.mu.Lock()
	s.deltaChangelog = true
	s.mu.Unlock()
	return nil
}

// run runs plan (what names it in errors) and passes each batch of its
// result to fn, to the end of the result.
func (s *Session) run(ctx context.Context, plan *pb.Plan, what string, fn func(arrow.RecordBatch) error) error {
	op, err := s.start(ctx, plan, what)
	if err != nil {
		return err
	}
	defer op.close()
	for {
		rec, err := op.next()
		if errors.Is(err, errEndOfResult) {
			return nil
		}
		if err != nil {
			return err
		}
		err = fn(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
}
