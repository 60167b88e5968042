package sluice_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicefeed/sluice/auth"
	"github.com/sluicefeed/sluice/catalog"
	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/progress"
	"github.com/sluicefeed/sluice/server"
)

const (
	basicUser     = "alice"
	basicPassword = "correct horse battery staple"
)

// basicServer is a Sluice server in mode basic without a secret file, as
// flightd runs without --auth-secret-file: each start draws a new secret,
// so the tokens an earlier start issued are refused.
type basicServer struct {
	addr string
	stop func() // stops the server, as a crash would: follow streams end, the port closes

	mu    sync.Mutex // guards calls
	calls map[string]int
}

// count returns how many calls of a method the server received (refused
// ones included).
func (s *basicServer) count(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// usersFile writes a users file with basicUser.
func usersFile(t *testing.T) string {
	t.Helper()
	hash, err := auth.HashPassword(basicPassword)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "users.yaml")
	body := "users:\n  - name: " + basicUser + "\n    bcrypt: \"" + hash + "\"\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// serveBasic serves cat in mode basic on addr ("127.0.0.1:0" for a free
// port), keeping consumer progress in the database at progressPath.
// refuse, when set, names the methods the server refuses as
// Unauthenticated even with a valid token. The test's end stops it.
func serveBasic(t *testing.T, cat *catalog.Catalog, addr, users, progressPath string, refuse ...string) *basicServer {
	t.Helper()
	authn, err := auth.New(auth.Config{Mode: auth.ModeBasic, UsersFile: users})
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	engine := feed.New(cat, feed.Options{Allocator: mem, MaxBatchRows: maxBatchRows})
	store, err := progress.Open(t.Context(), progressPath)
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(engine, server.Options{Allocator: mem, Logger: slog.New(slog.DiscardHandler), Progress: store,
		Authenticator: authn,
		Follow:        server.FollowOptions{PollInterval: 20 * time.Millisecond, HeartbeatInterval: 200 * time.Millisecond}})
	bs := &basicServer{calls: map[string]int{}}
	refused := func(method string) error {
		bs.mu.Lock()
		bs.calls[method]++
		bs.mu.Unlock()
		for _, m := range refuse {
			if strings.HasSuffix(method, "/"+m) {
				return status.Error(codes.Unauthenticated, "unknown bearer token (refused by the test)")
			}
		}
		return nil
	}
	// After the server's own interceptors (authentication among them).
	opts := append(srv.ServerOptions(),
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo,
			handler grpc.UnaryHandler) (any, error) {
			if err := refused(info.FullMethod); err != nil {
				return nil, err
			}
			return handler(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo,
			handler grpc.StreamHandler) error {
			if err := refused(info.FullMethod); err != nil {
				return err
			}
			return handler(srv, ss)
		}))
	gs := grpc.NewServer(opts...)
	srv.Register(gs)
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	bs.addr = lis.Addr().String()
	served := make(chan error, 1)
	go func() { served <- gs.Serve(lis) }()
	var once sync.Once
	bs.stop = func() {
		once.Do(func() {
			srv.Shutdown()
			gs.Stop()
			if err := <-served; err != nil {
				t.Errorf("serve: %v", err)
			}
			store.Close()
			mem.AssertSize(t, 0)
		})
	}
	t.Cleanup(bs.stop)
	return bs
}

// readRows reads a subscription until it has delivered n rows.
func readRows(t *testing.T, sub *sluice.Subscription, n int64) {
	t.Helper()
	for rows := int64(0); rows < n; {
		if !sub.Next() {
			t.Fatalf("the subscription ended after %d of %d rows: %v", rows, n, sub.Err())
		}
		rows += sub.Batch().Record.NumRows()
	}
}

// A client with basic credentials follows a table across a restart of a
// server without a secret file, which refuses the token the first start
// issued: the reconnect handshakes again and the stream resumes; acks
// before and after the restart reach the server, and an ack sent while the
// server is down waits for it.
func TestBasicAuthAcrossRestart(t *testing.T) {
	ctx := t.Context()
	cat := newWarehouse(t)
	createTable(t, cat, ordersTable, history)
	users, progressPath := usersFile(t), filepath.Join(t.TempDir(), "consumers.db")
	first := serveBasic(t, cat, "127.0.0.1:0", users, progressPath)
	c, _ := dial(t, first.addr, sluice.WithBasicAuth(basicUser, basicPassword))

	sub, err := c.Subscribe(ctx, sluice.SubscribeRequest{Table: ordersTable, Consumer: "g1", Reconnect: true,
		MaxBackoff: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Release()
	readRows(t, sub, 8) // the full state
	if p, err := sub.Ack(ctx); err != nil || p.CommitSeq != 3 {
		t.Fatalf("ack before the restart: %+v %v", p, err)
	}

	first.stop()
	appendOrders(t, cat, ordersTable, []order{{9, "Nils", "SE", 1}})
	second := serveBasic(t, cat, first.addr, users, progressPath)
	readRows(t, sub, 1)
	if b := sub.Batch(); b.Meta.CommitSeq != 4 || !b.Meta.SnapshotComplete {
		t.Fatalf("after the restart: %+v", b.Meta)
	}
	if sub.Reconnects() == 0 {
		t.Fatal("no reconnect across the restart")
	}
	if p, err := sub.Ack(ctx); err != nil || p.CommitSeq != 4 {
		t.Fatalf("ack after the restart: %+v %v", p, err)
	}
	if p, err := c.ConsumerProgress(ctx, "g1", ordersTable); err != nil || p.CommitSeq != 4 {
		t.Fatalf("progress after the restart: %+v %v", p, err)
	}

	// The server goes down between a batch and its ack: the ack waits for
	// the next start (which issues tokens of yet another secret).
	appendOrders(t, cat, ordersTable, []order{{10, "Saga", "SE", 2}})
	readRows(t, sub, 1)
	second.stop()
	acked := make(chan error, 1)
	go func() {
		p, err := sub.Ack(ctx)
		if err == nil && p.CommitSeq != 5 {
			err = errors.New("acked the wrong snapshot")
		}
		acked <- err
	}()
	time.Sleep(300 * time.Millisecond)
	select {
	case err := <-acked:
		t.Fatalf("the ack returned while the server was down: %v", err)
	default:
	}
	serveBasic(t, cat, first.addr, users, progressPath)
	select {
	case err := <-acked:
		if err != nil {
			t.Fatalf("ack across the outage: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the ack was not delivered within 30s of the server's return")
	}
	if p, err := c.ConsumerProgress(ctx, "g1", ordersTable); err != nil || p.CommitSeq != 5 {
		t.Fatalf("progress after the outage: %+v %v", p, err)
	}
}

// An ack that cannot be delivered says so: with Reconnect it waits for
// the server until its context ends; without, it fails at once.
func TestAckUndelivered(t *testing.T) {
	ctx := t.Context()
	cat := newWarehouse(t)
	createTable(t, cat, ordersTable, history)
	srv := serveBasic(t, cat, "127.0.0.1:0", usersFile(t), filepath.Join(t.TempDir(), "consumers.db"))
	c, _ := dial(t, srv.addr, sluice.WithBasicAuth(basicUser, basicPassword))
	subs := map[bool]*sluice.Subscription{}
	for _, reconnect := range []bool{true, false} {
		sub, err := c.Subscribe(ctx, sluice.SubscribeRequest{Table: ordersTable, Consumer: "g1", Reconnect: reconnect,
			MaxBackoff: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Release()
		readRows(t, sub, 8)
		subs[reconnect] = sub
	}
	srv.stop()

	actx, cancel := context.WithTimeout(ctx, 700*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := subs[true].Ack(actx)
	if sluice.Code(err) != codes.DeadlineExceeded || !errors.Is(err, context.DeadlineExceeded) ||
		!strings.Contains(err.Error(), "was not delivered") || time.Since(start) < 600*time.Millisecond {
		t.Fatalf("ack with Reconnect, the server down: %v after %v", err, time.Since(start))
	}
	if _, err := subs[false].Ack(ctx); sluice.Code(err) != codes.Unavailable {
		t.Fatalf("ack without Reconnect, the server down: %v", err)
	}
}

// A refused token is renewed once per call: a call or a stream the server
// refuses again after the new handshake fails with Unauthenticated, and a
// Subscription with Reconnect does not loop on it.
func TestBasicAuthRetriesOnce(t *testing.T) {
	ctx := t.Context()
	cat := newWarehouse(t)
	createTable(t, cat, ordersTable, history)
	srv := serveBasic(t, cat, "127.0.0.1:0", usersFile(t), filepath.Join(t.TempDir(), "consumers.db"),
		"DoGet", "CommitSeq")
	c, _ := dial(t, srv.addr, sluice.WithBasicAuth(basicUser, basicPassword))
	const (
		handshake = "/arrow.flight.protocol.FlightService/Handshake"
		doGet     = "/arrow.flight.protocol.FlightService/DoGet"
		commitSeq = "/sluice.v1.ControlService/CommitSeq"
	)
	if n := srv.count(handshake); n != 1 {
		t.Fatalf("%d handshakes after Dial, want 1", n)
	}

	for i, req := range []sluice.SubscribeRequest{
		{Table: ordersTable, NoFollow: true},
		{Table: ordersTable, Reconnect: true, MaxBackoff: 10 * time.Millisecond},
	} {
		sub, err := c.Subscribe(ctx, req)
		if sluice.Code(err) != codes.Unauthenticated {
			if sub != nil {
				sub.Release()
			}
			t.Fatalf("subscribe %+v: %v, want Unauthenticated", req, err)
		}
		if got, want := srv.count(doGet), 2*(i+1); got != want {
			t.Fatalf("%d DoGet calls, want %d: one, and one after a new handshake", got, want)
		}
		if got, want := srv.count(handshake), 2+i; got != want {
			t.Fatalf("%d handshakes, want %d", got, want)
		}
	}

	r, err := c.Changes(ctx, sluice.ChangeRequest{Table: ordersTable})
	if sluice.Code(err) != codes.Unauthenticated {
		if r != nil {
			r.Release()
		}
		t.Fatalf("changes: %v, want Unauthenticated", err)
	}
	if got := srv.count(doGet); got != 6 {
		t.Fatalf("%d DoGet calls, want 6", got)
	}

	if _, err := c.CommitSeq(ctx, ordersTable); sluice.Code(err) != codes.Unauthenticated {
		t.Fatalf("commit_seq: %v, want Unauthenticated", err)
	}
	if got := srv.count(commitSeq); got != 2 {
		t.Fatalf("%d CommitSeq calls, want 2", got)
	}
	// Calls the server takes still work, with the newest token.
	if _, err := c.ListTables(ctx); err != nil {
		t.Fatal(err)
	}
}
