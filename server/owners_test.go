package server_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/sluicefeed/sluice/auth"
	sluicev1 "github.com/sluicefeed/sluice/gen/sluice/v1"
	"github.com/sluicefeed/sluice/progress"
	"github.com/sluicefeed/sluice/server"
)

// withPrincipals authenticates callers by static tokens, one per name (the
// token is the name's), and fixes the owners of consumers as given; it
// hands the server's progress store to store.
func withPrincipals(t *testing.T, owners []auth.ConsumerOwner, store *server.ProgressStore,
	names ...string) func(*server.Options) {
	t.Helper()
	authenticate := withTokens(t, auth.Config{Consumers: owners}, names...)
	return func(o *server.Options) {
		authenticate(o)
		*store = o.Progress
	}
}

// withTokens authenticates callers by static tokens, one per name (the
// token is the name's; see as), under cfg's rules and consumer owners.
func withTokens(t *testing.T, cfg auth.Config, names ...string) func(*server.Options) {
	t.Helper()
	file := "tokens:\n"
	for _, n := range names {
		file += fmt.Sprintf("  - principal: %s\n    sha256: %s\n", n, auth.HashToken("token-of-"+n))
	}
	path := filepath.Join(t.TempDir(), "tokens.yaml")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Mode, cfg.TokensFile = auth.ModeToken, path
	authn, err := auth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	authz, err := auth.NewAuthorizer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return func(o *server.Options) { o.Authenticator, o.Authorizer = authn, authz }
}

// as returns a context whose calls the principal makes.
func as(name string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer token-of-"+name)
}

// TestConsumerClaims: a consumer belongs to the first principal whose
// stream or ack names it, or to the principal the configuration names;
// another principal's stream, ack or reset of it is PermissionDenied. A
// service's stream therefore never starts from a position another
// principal placed. (A consumer used to be claimed by its first ack only:
// another principal could ack it before its service did, and the service's
// next stream silently started from there.)
func TestConsumerClaims(t *testing.T) {
	var store server.ProgressStore
	owners := []auth.ConsumerOwner{{Consumers: []string{"billing-*"}, Principal: "svc"}}
	f := startWith(t, 3, 2, 8, nil, withPrincipals(t, owners, &store, "svc", "mallory"))
	s := f.snapshots
	stream := func(who, consumer string) error {
		_, err := f.doGet(t, as(who), []byte(fmt.Sprintf(`{"table": "shop.orders", "consumer": %q, "start": "latest"}`,
			consumer)))
		return err
	}
	ack := func(who, consumer string, snapshot int64) error {
		_, err := f.control.Ack(as(who), &sluicev1.AckRequest{Consumer: consumer, Table: tableName, Snapshot: snapshot})
		return err
	}

	// The service's first stream claims its consumer before any ack.
	if err := stream("svc", "orders-mirror"); err != nil {
		t.Fatal(err)
	}
	checkStatus(t, ack("mallory", "orders-mirror", s[0]), codes.PermissionDenied, `belongs to principal "svc"`)
	checkStatus(t, stream("mallory", "orders-mirror"), codes.PermissionDenied, `belongs to principal "svc"`)
	_, err := f.action(as("mallory"), "reset_consumer", `{"consumer": "orders-mirror", "table": "shop.orders"}`)
	checkStatus(t, err, codes.PermissionDenied, `belongs to principal "svc"`)
	if err := ack("svc", "orders-mirror", s[1]); err != nil {
		t.Fatal(err)
	}
	got, err := f.doGet(t, as("svc"), []byte(`{"table": "shop.orders", "consumer": "orders-mirror"}`))
	if err != nil || got.rows != 2 || got.metas[0].Snapshot != s[2] {
		t.Fatalf("the service resumes after its own ack: %d rows, %v", got.rows, err)
	}

	// A consumer another principal claimed first is refused to the
	// service's stream, loudly: it never starts from mallory's position.
	if err := ack("mallory", "orders-audit", s[2]); err != nil {
		t.Fatal(err)
	}
	checkStatus(t, stream("svc", "orders-audit"), codes.PermissionDenied, `belongs to principal "mallory"`)

	// The configuration fixes the owner of billing-*: mallory may neither
	// ack nor stream one, even first.
	checkStatus(t, ack("mallory", "billing-eu", s[2]), codes.PermissionDenied, `belongs to principal "svc"`)
	checkStatus(t, stream("mallory", "billing-eu"), codes.PermissionDenied, `belongs to principal "svc"`)
	// Progress another principal recorded before the configuration named
	// the owner is dropped when the owner takes the consumer over.
	if err := store.Put(context.Background(), progress.Checkpoint{Table: tableName, Consumer: "billing-us",
		Snapshot: s[0], Owner: "mallory"}); err != nil {
		t.Fatal(err)
	}
	got, err = f.doGet(t, as("svc"), []byte(`{"table": "shop.orders", "consumer": "billing-us", "start": "latest-full"}`))
	if err != nil || got.rows != 6 {
		t.Fatalf("the owner's first stream of a consumer mallory had placed: %d rows, %v; want the full state", got.rows, err)
	}
	_, err = f.control.GetConsumerProgress(as("mallory"), &sluicev1.ConsumerProgressRequest{Consumer: "billing-eu",
		Table: tableName})
	checkStatus(t, err, codes.NotFound, "no progress")
	if err := ack("svc", "billing-eu", s[2]); err != nil {
		t.Fatal(err)
	}
	p, err := f.control.GetConsumerProgress(as("mallory"), &sluicev1.ConsumerProgressRequest{Consumer: "billing-eu",
		Table: tableName})
	if err != nil || p.Owner != "svc" {
		t.Fatalf("progress of billing-eu, read by another principal: %v %v", p, err)
	}
}
