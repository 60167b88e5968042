package auth_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"google.golang.org/grpc/metadata"

	"github.com/sluicefeed/sluice/auth"
)

// writeTemp writes a file into dir and returns its path.
func writeTemp(dir, name, data string) string {
	file := filepath.Join(dir, name)
	if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
		log.Fatal(err)
	}
	return file
}

// An operator makes a token for a client and lists its hash in the tokens
// file; the server authenticates calls that carry it.
func ExampleAuthenticator_Authenticate() {
	dir, err := os.MkdirTemp("", "sluice-auth")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	token := "a-long-random-token" // in practice: auth.NewToken()
	cfg := auth.Config{
		Mode:       auth.ModeToken,
		TokensFile: writeTemp(dir, "tokens.yaml", "tokens:\n  - principal: ingest\n    sha256: "+auth.HashToken(token)+"\n"),
	}
	if err := cfg.Validate("127.0.0.1:8815"); err != nil {
		log.Fatal(err)
	}
	a, err := auth.New(cfg)
	if err != nil {
		log.Fatal(err)
	}

	// What a server interceptor sees for a pyarrow call made with
	// FlightCallOptions(headers=[(b"authorization", b"Bearer " + token)]).
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", "Bearer "+token))
	p, err := a.Authenticate(ctx)
	fmt.Println(p, err)

	ctx = metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", "Bearer guess"))
	_, err = a.Authenticate(ctx)
	fmt.Println(errors.Is(err, auth.ErrUnauthenticated), err)
	// Output:
	// ingest (token) <nil>
	// true auth: unauthenticated: unknown bearer token
}

// The Flight basic-auth Handshake, as pyarrow's
// FlightClient.authenticate_basic_token(user, password) performs it, and a
// later call with the token it returns.
func ExampleAuthenticator_Handshake() {
	dir, err := os.MkdirTemp("", "sluice-auth")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	hash, err := auth.HashPassword("correct horse battery staple")
	if err != nil {
		log.Fatal(err)
	}
	a, err := auth.New(auth.Config{
		Mode:      auth.ModeBasic,
		UsersFile: writeTemp(dir, "users.yaml", fmt.Sprintf("users:\n  - name: alice\n    bcrypt: %q\n", hash)),
	})
	if err != nil {
		log.Fatal(err)
	}

	// The Handshake's incoming metadata.
	ctx := metadata.NewIncomingContext(context.Background(),
		metadata.Pairs("authorization", "Basic YWxpY2U6Y29ycmVjdCBob3JzZSBiYXR0ZXJ5IHN0YXBsZQ==")) // alice:correct horse battery staple
	p, header, err := a.Handshake(ctx)
	if err != nil {
		log.Fatal(err)
	}
	// The Flight server sends header with stream.SetHeader(header).
	bearer := header.Get("authorization")[0]
	fmt.Println(p, strings.HasPrefix(bearer, "Bearer "))

	// A later call carries it.
	p, err = a.Authenticate(metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", bearer)))
	fmt.Println(p, err)
	// Output:
	// alice (basic) true
	// alice (basic) <nil>
}

func ExampleAuthorizer() {
	z, err := auth.NewAuthorizer(auth.Config{Rules: []auth.Rule{
		{Principals: []string{"analyst-*"}, Tables: []string{"sales.*"},
			Columns: map[string][]string{"sales.customers": {"id", "country"}}},
	}})
	if err != nil {
		log.Fatal(err)
	}
	analyst := auth.Principal{Name: "analyst-eu", Method: auth.MethodToken}

	fmt.Println(z.CanRead(analyst, "sales.orders"), z.CanRead(analyst, "hr.salaries"))
	fmt.Println(z.Columns(analyst, "sales.customers"))
	cols, err := z.Project(analyst, "sales.customers", nil) // a request for all columns
	fmt.Println(cols, err)
	fmt.Println(z.Check(analyst, "hr.salaries"))
	// Output:
	// true false
	// [id country] true
	// [id country] <nil>
	// auth: permission denied: principal "analyst-eu" may not read table "hr.salaries"
}

func ExampleAuthorizer_Grant() {
	z, err := auth.NewAuthorizer(auth.Config{Rules: []auth.Rule{
		{Principals: []string{"analyst-*"}, Tables: []string{"sales.*"},
			Columns: map[string][]string{"sales.customers": {"id", "country"}}},
	}})
	if err != nil {
		log.Fatal(err)
	}
	analyst := auth.Principal{Name: "analyst-eu", Method: auth.MethodToken}

	// One evaluation of the rules answers every question of a request.
	g := z.Grant(analyst, "sales.customers")
	cols, err := g.Project(nil) // a request for all columns
	fmt.Println(g.Restricted(), cols, err)
	fmt.Println(g.CheckColumns([]string{"email"})) // a filter column
	// Output:
	// true [id country] <nil>
	// auth: permission denied: principal "analyst-eu" may not read column "email" of table "sales.customers"
}

func ExampleHashToken() {
	// The line of the tokens file for a client's token.
	fmt.Printf("  - principal: ingest\n    sha256: %s\n", auth.HashToken("s3cret"))
	// Output:
	//   - principal: ingest
	//     sha256: 1ec1c26b50d5d3c58d9583181af8076655fe00756bf7285940ba3670f99fcba0
}
