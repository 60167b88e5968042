package console_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/test/bufconn"

	"github.com/sluicefeed/sluice/auth"
	"github.com/sluicefeed/sluice/catalog"
	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/app/console"
	"github.com/sluicefeed/sluice/internal/app/demo"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
	"github.com/sluicefeed/sluice/server"
)

const (
	password  = "correct horse battery staple"
	hrTable   = "hr.salaries"
	demoTable = demo.Table
)

// fixture is a console over a real server (the demo table and hr.salaries
// in a warehouse), reached through an in-memory connection as in flightd,
// with tokens for ops (every table), analyst (demo.*) and restricted
// (order_id and status of demo.orders), and the user alice (demo.*).
type fixture struct {
	url       string
	cat       *catalog.Catalog
	tokens    map[string]string
	snapshots []sluice.Snapshot
	// authn is the console's authenticator (nil with authentication off).
	authn *auth.Authenticator
}

func start(t *testing.T, authOn bool, options ...func(*console.Options)) *fixture {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	cat, err := tablewrite.OpenWarehouse(ctx, filepath.Join(dir, "warehouse"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	if _, err := demo.Ensure(ctx, cat); err != nil {
		t.Fatal(err)
	}
	hr, err := tablewrite.CreateTable(ctx, cat, hrTable, demo.Schema())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tablewrite.Append(ctx, hr, []tablewrite.Row{{"order_id": 1, "customer": "x", "country": "SE",
		"amount": 1.0, "status": "paid", "created_at": "2026-11-30T08:00:00Z"}}); err != nil {
		t.Fatal(err)
	}

	f := &fixture{cat: cat, tokens: map[string]string{}}
	cfg := auth.Config{Mode: "token,basic", Rules: []auth.Rule{
		{Principals: []string{"ops"}, Tables: []string{"*"}},
		{Principals: []string{"analyst", "alice"}, Tables: []string{"demo.*"}},
		{Principals: []string{"restricted"}, Tables: []string{demoTable},
			Columns: map[string][]string{demoTable: {"order_id", "status"}}},
	}}.WithDefaults()
	var tokens strings.Builder
	tokens.WriteString("tokens:\n")
	for _, p := range []string{"ops", "analyst", "restricted"} {
		tok, err := auth.NewToken()
		if err != nil {
			t.Fatal(err)
		}
		f.tokens[p] = tok
		fmt.Fprintf(&tokens, "  - principal: %s\n    sha256: %s\n", p, auth.HashToken(tok))
	}
	hash, err := auth.HashPassword(password)
	if err != nil {
		t.Fatal(err)
	}
	cfg.TokensFile = writeFile(t, dir, "tokens.yaml", tokens.String())
	cfg.UsersFile = writeFile(t, dir, "users.yaml", fmt.Sprintf("users:\n  - name: alice\n    bcrypt: %q\n", hash))
	authn, err := auth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	authz, err := auth.NewAuthorizer(cfg)
	if err != nil {
		t.Fatal(err)
	}

	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	engine := feed.New(cat, feed.Options{Allocator: mem})
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	opts := server.Options{Allocator: mem, Logger: quiet, Authenticator: authn, Authorizer: authz,
		Limits: server.Limits{MaxStreamsPerPrincipal: 1},
		Follow: server.FollowOptions{PollInterval: 20 * time.Millisecond, HeartbeatInterval: 200 * time.Millisecond,
			MaxBackoff: 100 * time.Millisecond}}
	if !authOn {
		opts.Authenticator, opts.Authorizer = nil, nil
	}
	srv := server.New(engine, opts)
	gs := grpc.NewServer(srv.ServerOptions()...)
	srv.Register(gs)
	lis := bufconn.Listen(1 << 20)
	go func() { _ = gs.Serve(lis) }()
	client, err := sluice.Dial(ctx, "grpc://127.0.0.1:1", sluice.WithAllocator(mem), sluice.WithDialOptions(
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) })))
	if err != nil {
		t.Fatal(err)
	}
	copts := console.Options{Client: client, Logger: quiet}
	if authOn {
		copts.Authenticator = authn
		f.authn = authn
	}
	for _, o := range options {
		o(&copts)
	}
	hs := httptest.NewServer(console.New(copts))
	f.url = hs.URL
	t.Cleanup(func() {
		hs.Close()
		srv.Shutdown()
		client.Close()
		gs.Stop()
		deadline := time.Now().Add(5 * time.Second)
		for mem.CurrentAlloc() != 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		mem.AssertSize(t, 0)
	})
	if f.snapshots, err = client.Snapshots(outgoingToken(ctx, f.tokens["ops"], authOn), demoTable); err != nil {
		t.Fatal(err)
	}
	return f
}

func outgoingToken(ctx context.Context, tok string, on bool) context.Context {
	if !on {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func bearer(tok string) string { return "Bearer " + tok }

func basic(user, pw string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pw))
}

// get sends a GET with an Authorization header ("" for none).
func (f *fixture) get(t *testing.T, path, authorization string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, f.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// getJSON sends a GET and decodes its JSON answer, checking its status.
func (f *fixture) getJSON(t *testing.T, path, authorization string, status int, v any) {
	t.Helper()
	resp := f.get(t, path, authorization)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("GET %s: %s %s; want %d", path, resp.Status, body, status)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, body)
	}
}

type apiError struct {
	Error struct{ Code, Message string } `json:"error"`
}

// TestAuthDenied: with authentication on, nothing (page, assets, API) is
// served without valid credentials: 401 with a basic challenge.
func TestAuthDenied(t *testing.T) {
	f := start(t, true)
	paths := []string{"/", "/assets/console.js", "/assets/console.css", "/api/session", "/api/tables",
		"/api/snapshots?table=demo.orders", "/api/changes?table=demo.orders", "/api/live?table=demo.orders",
		"/nothing"}
	creds := map[string]string{
		"none":          "",
		"unknown token": bearer("not-a-token"),
		"other scheme":  "Digest username=alice",
	}
	// Password checks are slow (bcrypt, and more so under the race
	// detector): the wrong logins are tried on two paths.
	logins := map[string]string{
		"wrong password": basic("alice", "wrong"),
		"unknown user":   basic("mallory", password),
		"token as user":  basic("token", "not-a-token"),
	}
	for i, path := range paths {
		try := maps.Clone(creds)
		if i < 2 {
			maps.Copy(try, logins)
		}
		for name, cred := range try {
			resp := f.get(t, path, cred)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("GET %s with %s: %s; want 401", path, name, resp.Status)
			}
			if !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic ") {
				t.Errorf("GET %s with %s: no basic challenge (%q)", path, name, resp.Header.Get("WWW-Authenticate"))
			}
			if !strings.HasPrefix(string(body), "Unauthenticated: ") || strings.Contains(string(body), "<html") {
				t.Errorf("GET %s with %s: body %q", path, name, body)
			}
		}
	}
	// An unknown cookie is refused too, and cleared.
	req, _ := http.NewRequest(http.MethodGet, f.url+"/", nil)
	req.AddCookie(&http.Cookie{Name: console.CookieName, Value: "forged"})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("Set-Cookie"), "Max-Age=0") {
		t.Fatalf("a forged session cookie: %s, Set-Cookie %q; want 401 and the cookie cleared", resp.Status,
			resp.Header.Get("Set-Cookie"))
	}
}

// TestLogin: the basic login (a user's password, or the user "token" with
// a token) sets an HTTP-only session cookie, which authenticates later
// requests alone; a bearer token works without a cookie.
func TestLogin(t *testing.T) {
	f := start(t, true)
	for _, tc := range []struct{ name, authorization, principal string }{
		{"password", basic("alice", password), "alice"},
		{"token as password", basic("token", f.tokens["analyst"]), "analyst"},
	} {
		resp := f.get(t, "/api/session", tc.authorization)
		resp.Body.Close()
		var session *http.Cookie
		for _, c := range resp.Cookies() {
			if c.Name == console.CookieName {
				session = c
			}
		}
		if resp.StatusCode != http.StatusOK || session == nil || !session.HttpOnly ||
			session.SameSite != http.SameSiteStrictMode {
			t.Fatalf("%s: %s, cookie %+v; want 200 and an HTTP-only, SameSite=Strict session cookie", tc.name,
				resp.Status, session)
		}
		req, _ := http.NewRequest(http.MethodGet, f.url+"/api/session", nil)
		req.AddCookie(session)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var got struct{ Principal string }
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got.Principal != tc.principal {
			t.Fatalf("%s: the cookie authenticates %q, want %q", tc.name, got.Principal, tc.principal)
		}
	}
	var got struct{ Principal string }
	f.getJSON(t, "/api/session", bearer(f.tokens["ops"]), http.StatusOK, &got)
	if got.Principal != "ops" {
		t.Fatalf("bearer token: principal %q, want ops", got.Principal)
	}
	// The page and its assets, with their security headers.
	for path, want := range map[string]string{"/": "/assets/console.js", "/assets/console.js": "EventSource",
		"/assets/console.css": "td.changed"} {
		resp := f.get(t, path, bearer(f.tokens["ops"]))
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) ||
			!strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
			t.Fatalf("GET %s: %s, CSP %q; want 200 with %q", path, resp.Status,
				resp.Header.Get("Content-Security-Policy"), want)
		}
	}
}

// TestGrants: the console lists and reads only what the caller's grants
// allow, with the service's codes.
func TestGrants(t *testing.T) {
	f := start(t, true)
	var tables struct{ Tables []struct{ Name string } }
	f.getJSON(t, "/api/tables", bearer(f.tokens["analyst"]), http.StatusOK, &tables)
	if len(tables.Tables) != 1 || tables.Tables[0].Name != demoTable {
		t.Fatalf("analyst lists %+v, want only %s", tables.Tables, demoTable)
	}
	f.getJSON(t, "/api/tables", bearer(f.tokens["ops"]), http.StatusOK, &tables)
	if len(tables.Tables) != 2 {
		t.Fatalf("ops lists %+v, want both tables", tables.Tables)
	}
	for _, path := range []string{"/api/changes?table=hr.salaries", "/api/snapshots?table=hr.salaries"} {
		var e apiError
		f.getJSON(t, path, basic("alice", password), http.StatusForbidden, &e)
		if e.Error.Code != "PermissionDenied" || !strings.Contains(e.Error.Message, `"alice"`) {
			t.Fatalf("alice GET %s: %+v; want PermissionDenied naming alice", path, e)
		}
	}
	var changes struct {
		Columns []string
		Rows    []struct{ After []any }
	}
	f.getJSON(t, "/api/changes?table=demo.orders", bearer(f.tokens["restricted"]), http.StatusOK, &changes)
	if fmt.Sprint(changes.Columns) != "[order_id status]" || len(changes.Rows) == 0 || len(changes.Rows[0].After) != 2 {
		t.Fatalf("restricted reads columns %v (%d rows); want [order_id status]", changes.Columns, len(changes.Rows))
	}
	var e apiError
	f.getJSON(t, "/api/changes?table=demo.orders&filter=amount+%3E+1", bearer(f.tokens["restricted"]),
		http.StatusForbidden, &e)
	if e.Error.Code != "PermissionDenied" || !strings.Contains(e.Error.Message, "amount") {
		t.Fatalf("restricted filters on amount: %+v; want PermissionDenied naming the column", e)
	}
}

type changeRow struct {
	Op       string
	Before   []any
	After    []any
	Changed  []int
	Snapshot string
	Ts       string
}

type changesResponse struct {
	Columns   []string
	Rows      []changeRow
	Truncated bool
	From, To  *string
}

// TestChanges: a window's changes, updates folded with both images zipped
// positionally and the changed cells named; limits; errors with their
// gRPC code names.
func TestChanges(t *testing.T) {
	f := start(t, true)
	ops := bearer(f.tokens["ops"])
	upsert := f.snapshots[4]
	var res changesResponse
	f.getJSON(t, fmt.Sprintf("/api/changes?table=demo.orders&from=%d&to=%d", *upsert.Parent, upsert.ID), ops,
		http.StatusOK, &res)
	if fmt.Sprint(res.Columns) != "[order_id customer country amount status created_at]" || len(res.Rows) != 1 {
		t.Fatalf("the upsert's window: columns %v, %d rows; want the demo's columns and one row", res.Columns,
			len(res.Rows))
	}
	r := res.Rows[0]
	if r.Op != "update" || fmt.Sprint(r.Changed) != "[4]" || r.Before[4] != "placed" || r.After[4] != "shipped" ||
		r.Before[0] != float64(1006) || r.After[0] != float64(1006) || r.Snapshot != fmt.Sprint(upsert.ID) ||
		*res.From != fmt.Sprint(*upsert.Parent) || *res.To != fmt.Sprint(upsert.ID) {
		t.Fatalf("the upsert's change: %+v (window %v..%v); want order 1006's status placed -> shipped in snapshot %d",
			r, *res.From, *res.To, upsert.ID)
	}
	if ts, err := time.Parse(time.RFC3339, r.Ts); err != nil || ts.UnixMilli() != upsert.TimestampMs {
		t.Fatalf("ts %q: %v; want the commit time %d", r.Ts, err, upsert.TimestampMs)
	}

	f.getJSON(t, "/api/changes?table=demo.orders", ops, http.StatusOK, &res)
	if len(res.Rows) != 12 || res.Truncated {
		t.Fatalf("the whole history: %d rows (truncated %v); want 12", len(res.Rows), res.Truncated)
	}
	for _, r := range res.Rows {
		if r.Op != "update" && len(r.Changed) != 0 {
			t.Fatalf("a %s row names changed cells: %+v", r.Op, r)
		}
	}
	f.getJSON(t, "/api/changes?table=demo.orders&limit=3", ops, http.StatusOK, &res)
	if len(res.Rows) != 3 || !res.Truncated {
		t.Fatalf("limit 3: %d rows (truncated %v); want 3, truncated", len(res.Rows), res.Truncated)
	}

	for _, tc := range []struct {
		path   string
		status int
		code   string
	}{
		{"/api/changes?table=demo.nothing", http.StatusNotFound, "NotFound"},
		{"/api/changes?table=demo.orders&filter=status+%3D%3D", http.StatusBadRequest, "InvalidArgument"},
		{"/api/changes?table=demo.orders&columns=nope", http.StatusBadRequest, "InvalidArgument"},
		{"/api/changes?table=demo.orders&from=12", http.StatusNotFound, "NotFound"},
		{"/api/changes?table=demo.orders&from=x", http.StatusBadRequest, "InvalidArgument"},
		{"/api/changes?table=demo.orders&limit=0", http.StatusBadRequest, "InvalidArgument"},
		{"/api/changes", http.StatusBadRequest, "InvalidArgument"},
		{"/api/snapshots?table=demo.nothing", http.StatusNotFound, "NotFound"},
	} {
		var e apiError
		f.getJSON(t, tc.path, ops, tc.status, &e)
		if e.Error.Code != tc.code || e.Error.Message == "" {
			t.Errorf("GET %s: %+v; want %s", tc.path, e, tc.code)
		}
	}
}

// TestSnapshots: the timeline, oldest first, with each commit's operation,
// summary counts and plan.
func TestSnapshots(t *testing.T) {
	f := start(t, true)
	var res struct {
		Snapshots []struct {
			Snapshot       string
			Operation      string
			AddedRecords   *int64 `json:"added_records"`
			DeletedRecords *int64 `json:"deleted_records"`
			Strategy       string
			RecordsRead    int64 `json:"records_read"`
		}
		PlanError *struct{ Code string } `json:"plan_error"`
	}
	f.getJSON(t, "/api/snapshots?table=demo.orders", basic("alice", password), http.StatusOK, &res)
	if len(res.Snapshots) != len(f.snapshots) || res.PlanError != nil {
		t.Fatalf("timeline: %d commits (plan error %+v); want %d", len(res.Snapshots), res.PlanError, len(f.snapshots))
	}
	var got []string
	for i, s := range res.Snapshots {
		if s.Snapshot != fmt.Sprint(f.snapshots[i].ID) {
			t.Fatalf("commit %d is snapshot %s, want %d", i, s.Snapshot, f.snapshots[i].ID)
		}
		n := func(p *int64) string {
			if p == nil {
				return "-"
			}
			return fmt.Sprint(*p)
		}
		got = append(got, fmt.Sprintf("%s/%s/+%s/-%s", s.Operation, s.Strategy, n(s.AddedRecords), n(s.DeletedRecords)))
	}
	want := "[append/append/+3/-- append/append/+2/-- delete/position-delete/+-/-1 append/append/+3/-- " +
		"overwrite/equality-delete/+1/-- replace/replace-skipped/+-/-- append/append/+2/--]"
	if fmt.Sprint(got) != want {
		t.Fatalf("timeline\n got %v\nwant %s", got, want)
	}
}

// sse reads server-sent events.
type sse struct {
	resp *http.Response
	r    *bufio.Reader
}

func (s *sse) next(t *testing.T) (event, data string) {
	t.Helper()
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			t.Fatalf("read the event stream: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && event != "":
			return event, data
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		}
	}
}

func (f *fixture) live(t *testing.T, ctx context.Context, authorization string) *sse {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.url+"/api/live?table=demo.orders", nil)
	req.Header.Set("Authorization", authorization)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("live: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	return &sse{resp: resp, r: bufio.NewReader(resp.Body)}
}

// TestLive: the live stream sends the columns, then each new commit's
// changes as it lands; it counts as one of the caller's streams (the
// service's limit applies), and leaving ends it.
func TestLive(t *testing.T) {
	f := start(t, true)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	s := f.live(t, ctx, bearer(f.tokens["ops"]))
	if ev, data := s.next(t); ev != "start" || !strings.Contains(data, `"columns":["order_id","customer",`) {
		t.Fatalf("first event %s %s; want start with the columns", ev, data)
	}

	// A second stream of the same caller is over its limit of one.
	ctx2, cancel2 := context.WithCancel(t.Context())
	second := f.live(t, ctx2, bearer(f.tokens["ops"]))
	if ev, data := second.next(t); ev != "error" || !strings.Contains(data, `"code":"ResourceExhausted"`) {
		t.Fatalf("a second live stream: %s %s; want an error event with ResourceExhausted", ev, data)
	}
	cancel2()

	tbl, err := f.cat.Iceberg().LoadTable(t.Context(), []string{"demo", "orders"})
	if err != nil {
		t.Fatal(err)
	}
	row := tablewrite.Row{"order_id": 1003, "customer": "Mia Koskinen", "country": "FI", "amount": 310.25,
		"status": "refunded", "created_at": "2026-11-30T08:04:05Z"}
	if _, err := tablewrite.EqualityDelete(t.Context(), tbl, "order_id", []tablewrite.Row{{"order_id": 1003}},
		[]tablewrite.Row{row}); err != nil {
		t.Fatal(err)
	}
	var rows []changeRow
	for complete := false; !complete; {
		ev, data := s.next(t)
		if ev != "changes" {
			t.Fatalf("event %s %s; want changes", ev, data)
		}
		var c struct {
			Complete bool
			Rows     []changeRow
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatal(err)
		}
		rows, complete = append(rows, c.Rows...), c.Complete
	}
	if len(rows) != 1 || rows[0].Op != "update" || fmt.Sprint(rows[0].Changed) != "[4]" || rows[0].After[4] != "refunded" {
		t.Fatalf("the new commit's changes: %+v; want order 1003's status placed -> refunded", rows)
	}

	// Leaving ends the stream, and frees the caller's place.
	cancel()
	s.resp.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx3, cancel3 := context.WithCancel(t.Context())
		again := f.live(t, ctx3, bearer(f.tokens["ops"]))
		ev, data := again.next(t)
		cancel3()
		again.resp.Body.Close()
		if ev == "start" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the page left, a new live stream still gets %s %s", ev, data)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestAuthOff: without an authenticator every caller is anonymous, and
// reads everything.
func TestAuthOff(t *testing.T) {
	f := start(t, false)
	var session struct {
		Principal string
		Auth      bool
	}
	f.getJSON(t, "/api/session", "", http.StatusOK, &session)
	var tables struct{ Tables []struct{ Name string } }
	f.getJSON(t, "/api/tables", "", http.StatusOK, &tables)
	if session.Principal != "anonymous" || session.Auth || len(tables.Tables) != 2 {
		t.Fatalf("auth off: %+v, tables %+v; want anonymous reading both tables", session, tables)
	}
}
