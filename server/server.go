package server

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	flightgen "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/sluicefeed/sluice/auth"
	"github.com/sluicefeed/sluice/feed"
	sluicev1 "github.com/sluicefeed/sluice/gen/sluice/v1"
	"github.com/sluicefeed/sluice/progress"
)

// Defaults of FollowOptions.
const (
	DefaultPollInterval       = feed.DefaultPollInterval
	DefaultHeartbeatInterval  = feed.DefaultHeartbeatInterval
	DefaultMaxBackoff         = feed.DefaultMaxBackoff
	DefaultMaxWindowSnapshots = feed.DefaultMaxWindowSnapshots
)

// FollowOptions tunes how follow streams and WatchCommits watch tables
// (see feed.FollowOptions). Zero values take the defaults.
type FollowOptions = feed.FollowOptions

// Options configures a Server. The zero value is valid.
type Options struct {
	// Allocator allocates the memory of encoded batches. It should be the
	// engine's allocator. Default: the engine's allocator (arrow-go's Go
	// allocator without an engine).
	Allocator memory.Allocator
	// Logger receives one line per failed call. Default: slog.Default().
	Logger *slog.Logger
	// Progress stores the acknowledged progress of durable consumers. Nil:
	// requests and actions that name a consumer fail with Unimplemented.
	Progress ProgressStore
	// Follow tunes follow streams and WatchCommits.
	Follow FollowOptions
	// Authenticator authenticates every call but the Handshake and health
	// checks. Nil: every caller is anonymous.
	Authenticator *auth.Authenticator
	// Authorizer decides the tables and columns each caller may read. Nil:
	// every caller may read everything.
	Authorizer *auth.Authorizer
	// Limits bounds what callers may ask at once; zero values are no limit.
	Limits Limits
	// Metrics, when set, receives the server's Prometheus metrics.
	Metrics *Metrics
	// Replicas are the locations of a split window's endpoints. Zero: the
	// endpoints have no locations (clients read them from this server).
	Replicas Replicas
	// DecodeCacheBytes bounds the decode cache: the encoded batches of
	// windows and full states shared among the streams that read the same
	// one at about the same time (follow streams of a table read each new
	// commit's window together), so that it is read and encoded once.
	// Zero: no cache, every stream reads for itself (flightd's default is
	// DefaultDecodeCacheBytes).
	DecodeCacheBytes int64
	// Guard, when set, protects the snapshots of consumers whose acks ask
	// for it from the tables' expiry (--protect-consumers). Nil: an ack
	// that asks is FAILED_PRECONDITION.
	Guard ConsumerGuard
	// DecodeCacheTTL is how long a read's batches are served to new readers
	// once the read has ended. Default DefaultDecodeCacheTTL.
	DecodeCacheTTL time.Duration
}

// ProgressStore is the durable store of consumer progress the server
// needs, keyed by table, ref and consumer (progress.Key; the main branch's
// ref is ""); *progress.Store implements it. Get returns an error wrapping
// progress.ErrNotFound for a consumer without progress; Put, Claim and
// Delete by a principal that does not own the consumer fail with an error
// wrapping progress.ErrNotOwner; failures to reach the store wrap
// progress.ErrUnavailable.
type ProgressStore interface {
	Put(ctx context.Context, c progress.Checkpoint) error
	Get(ctx context.Context, k progress.Key) (progress.Checkpoint, error)
	List(ctx context.Context, table string) ([]progress.Checkpoint, error)
	Delete(ctx context.Context, k progress.Key, principal string) (bool, error)
	Claim(ctx context.Context, k progress.Key, principal string) error
	Assign(ctx context.Context, k progress.Key, principal string) error
	ListProtected(ctx context.Context) ([]progress.Checkpoint, error)
}

// Server is the Flight service and the ControlService over one engine.
type Server struct {
	engine   *feed.Engine
	authz    *auth.Authorizer
	mem      memory.Allocator
	log      *slog.Logger
	progress ProgressStore
	follow   FollowOptions

	// shutdown is done once Shutdown is called: follow streams and
	// WatchCommits end with Unavailable.
	shutdown     context.Context
	stopFollowed context.CancelFunc

	authn    *auth.Authenticator
	limits   *limiter
	metrics  *Metrics
	replicas Replicas
	// cache is the decode cache (nil: off).
	cache *decodeCache
	// guard protects consumers' snapshots (nil: off).
	guard ConsumerGuard
}

// New returns a server over the engine.
func New(engine *feed.Engine, opts Options) *Server {
	if opts.Allocator == nil {
		opts.Allocator = memory.DefaultAllocator
		if engine != nil {
			opts.Allocator = engine.Allocator()
		}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	shutdown, stop := context.WithCancel(context.Background())
	s := &Server{engine: engine, authz: opts.Authorizer, mem: opts.Allocator, log: opts.Logger,
		progress: opts.Progress, follow: opts.Follow.WithDefaults(), shutdown: shutdown, stopFollowed: stop,
		authn: opts.Authenticator, limits: newLimiter(opts.Limits), metrics: opts.Metrics, replicas: opts.Replicas,
		guard: opts.Guard}
	if opts.DecodeCacheBytes > 0 {
		s.cache = newDecodeCache(opts.DecodeCacheBytes, opts.DecodeCacheTTL, opts.Metrics)
	}
	return s
}

// Register registers the Flight service and the ControlService on a gRPC
// server.
func (s *Server) Register(r grpc.ServiceRegistrar) {
	sql := flightsql.NewFlightServerWithAllocator(newSQLService(s), s.mem)
	flightgen.RegisterFlightServiceServer(r, &flightService{s: s, sql: sql})
	sluicev1.RegisterControlServiceServer(r, &controlService{s: s})
}

// Shutdown ends every follow stream and WatchCommits stream, at their next
// batch or poll, with the status Unavailable "server shutting down", and
// refuses new ones the same way; bounded reads go on. Call it before
// grpc.Server.GracefulStop, which waits for running streams (and so would
// wait forever for follow streams). It is idempotent.
func (s *Server) Shutdown() { s.stopFollowed() }

// fail logs a failed call and returns its gRPC status error.
func (s *Server) fail(ctx context.Context, call string, err error) error {
	st := toStatus(err)
	if clientCancelled(ctx, err) {
		return st // not a failure: the interceptor logs it at debug as "call cancelled"
	}
	code := codeOf(st)
	level := slog.LevelInfo
	if code == codes.Internal || code == codes.Unknown {
		level = slog.LevelError
	}
	attrs := []any{"call", call, "code", code.String(), "principal", principalOf(ctx).Name,
		"error", clipText(err.Error())}
	var pe *feed.PanicError
	if errors.As(err, &pe) {
		attrs = append(attrs, "stack", string(pe.Stack))
	}
	s.log.Log(ctx, level, "call failed", attrs...)
	return st
}
