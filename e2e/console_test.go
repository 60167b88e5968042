package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/app/demo"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
	"github.com/sluicefeed/sluice/internal/testkit/docmd"
)

// chromium returns the headless Chromium of the console test
// (SLUICE_CHROMIUM, set by `make test-e2e`), failing the test when it is
// missing: the browser test is part of the evidence.
func chromium(t *testing.T) string {
	t.Helper()
	path := os.Getenv("SLUICE_CHROMIUM")
	if path == "" {
		t.Fatal("SLUICE_CHROMIUM is not set: run the e2e tests with `make test-e2e`, or run `make chromium` " +
			"(Debian's chromium) and set SLUICE_CHROMIUM to the browser's path")
	}
	if _, err := exec.LookPath(path); err != nil {
		t.Fatalf("SLUICE_CHROMIUM=%s: %v: run `make chromium`", path, err)
	}
	return path
}

// consoleAddr waits for flightd's log line announcing its console (flightd
// must run with --log-level info and --http-listen) and returns the
// address.
func consoleAddr(t *testing.T, f *flightd) string {
	t.Helper()
	re := regexp.MustCompile(`msg="serving console" address=(\S+)`)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(f.logs()); m != nil {
			return m[1]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("flightd did not log its console address:\n%s", f.logs())
	return ""
}

// TestConsole drives the web console in a real headless Chromium against a
// real flightd with authentication on (tokens and the basic login): an
// anonymous request gets 401 (the page and its assets too); the browser,
// logged in as alice, lists demo.orders, shows the upsert commit's change
// with the changed cell highlighted (its old and new values), and paints a
// commit made while the page follows the table. With
// SLUICE_CONSOLE_SCREENSHOT set (make console-screenshot) it saves the page
// there.
func TestConsole(t *testing.T) {
	chrome := chromium(t)
	ctx := t.Context()
	wh := t.TempDir()
	cat, err := tablewrite.OpenWarehouse(ctx, wh)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	if _, err := demo.Ensure(ctx, cat); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	token := flightdTool(t, "", "new-token")
	tokens := writeFile(t, dir, "tokens.yaml", "tokens:\n"+flightdTool(t, token, "hash-token", "--principal", "ops")+"\n")
	const user, password = "alice", "correct horse battery staple"
	users := writeFile(t, dir, "users.yaml", "users:\n"+flightdTool(t, password, "hash-password", "--user", user)+"\n")
	srv := startFlightd(t, "--warehouse", wh, "--auth-mode", "token,basic", "--auth-tokens-file", tokens,
		"--auth-users-file", users, "--http-listen", "127.0.0.1:0", "--log-level", "info",
		"--heartbeat-interval", "1s", "--poll-interval", "200ms")
	base := "http://" + consoleAddr(t, srv)

	// Nothing is served without credentials, or with wrong ones.
	for _, path := range []string{"/", "/assets/console.js", "/api/tables", "/api/live?table=demo.orders"} {
		for _, header := range []string{"", "Bearer not-a-token", "Basic " + base64.StdEncoding.EncodeToString(
			[]byte(user+":wrong"))} {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
			if header != "" {
				req.Header.Set("Authorization", header)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic") {
				t.Fatalf("GET %s with %q: %s, WWW-Authenticate %q; want 401 with a basic challenge", path,
					strings.SplitN(header, " ", 2)[0], resp.Status, resp.Header.Get("WWW-Authenticate"))
			}
		}
	}
	for _, secret := range []string{token, password} {
		if strings.Contains(srv.logs(), secret) {
			t.Fatal("flightd logged a credential")
		}
	}

	client := dialGo(t, ctx, srv.URI(), sluice.WithToken(token))
	snaps, err := client.Snapshots(ctx, demo.Table)
	if err != nil {
		t.Fatal(err)
	}
	// The demo's fifth commit upserts order 1006: placed -> shipped.
	upsert := snaps[4]

	actx, cancel := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.WindowSize(1400, 1000),
		chromedp.Flag("disable-dev-shm-usage", true))...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	defer cancel()
	bctx, cancel = context.WithTimeout(bctx, 2*time.Minute)
	defer cancel()
	eval := func(expr string) any {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[any](expr))
		if err != nil {
			t.Fatalf("evaluate %s: %v", expr, err)
		}
		return v
	}
	// The browser logs in with basic authentication, as after its login
	// prompt; the console answers with a session cookie.
	login := "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
	if err := chromedp.Do(bctx,
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
				return err
			}
			_, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders,
				network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": login}})
			return err
		}),
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)),
	); err != nil {
		t.Fatalf("open the console: %v\n%s", err, srv.logs())
	}
	who := eval(`document.querySelector("#who").textContent`)
	listed := eval(`[...document.querySelectorAll("#tables a")].map(a => a.dataset.table).join(",")`)
	if !strings.Contains(fmt.Sprint(who), user) || listed != demo.Table {
		t.Fatalf("the page shows %q and lists %q; want alice and %s", who, listed, demo.Table)
	}

	// The timeline lists every commit; picking the upsert shows its window.
	upsertRow := fmt.Sprintf(`#timeline tbody tr[data-snapshot="%d"]`, upsert.ID)
	if err := chromedp.Do(bctx,
		chromedp.Click(chromedp.CSS(`#tables a[data-table="demo.orders"]`)),
		chromedp.WaitVisible(chromedp.CSS(upsertRow)),
		chromedp.Click(chromedp.CSS(upsertRow)),
		chromedp.WaitVisible(chromedp.CSS(upsertRow+`.selected`)),
		chromedp.WaitReady(chromedp.CSS(fmt.Sprintf(`#changes[data-from="%d"][data-to="%d"]`, *upsert.Parent,
			upsert.ID))),
	); err != nil {
		t.Fatalf("show the upsert's changes: %v", err)
	}
	if n := eval(`document.querySelectorAll("#timeline tbody tr").length`); fmt.Sprint(n) != fmt.Sprint(len(snaps)) {
		t.Fatalf("the timeline shows %v commits, want %d", n, len(snaps))
	}
	ops := eval(`[...document.querySelectorAll("#changes tbody tr")].map(tr => tr.dataset.op).join(",")`)
	cells := eval(`JSON.stringify([...document.querySelectorAll("#changes tbody td.changed")].map(td => [
		document.querySelector("#changes thead").rows[0].cells[td.cellIndex].textContent,
		td.querySelector(".old").textContent, td.querySelector(".new").textContent]))`)
	if ops != "update" || cells != `[["status","placed","shipped"]]` {
		t.Fatalf("the upsert's window shows %v with changed cells %v; want one update, status placed -> shipped",
			ops, cells)
	}

	// An error shows with its gRPC code name.
	if err := chromedp.Do(bctx,
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](
				`document.querySelector("#window").filter.value = "status =="; true`))
			return err
		}),
		chromedp.Click(chromedp.CSS(`#window button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#error`)),
	); err != nil {
		t.Fatalf("a bad filter: %v", err)
	}
	if shown := eval(`document.querySelector("#error").textContent`); !strings.HasPrefix(fmt.Sprint(shown),
		"InvalidArgument ") || !strings.Contains(fmt.Sprint(shown), "filter") {
		t.Fatalf("a bad filter shows %q; want InvalidArgument and the filter's error", shown)
	}
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](
		`document.querySelector("#window").filter.value = ""; true`)); err != nil {
		t.Fatal(err)
	}

	// Live: a commit made while the page follows the table is painted.
	if err := chromedp.Do(bctx,
		chromedp.Click(chromedp.CSS(`#live-toggle`)),
		chromedp.WaitVisible(chromedp.CSS(`#live[data-ready="true"]`)),
	); err != nil {
		t.Fatalf("start following: %v", err)
	}
	tbl, err := cat.Iceberg().LoadTable(ctx, []string{"demo", "orders"})
	if err != nil {
		t.Fatal(err)
	}
	refund := tablewrite.Row{"order_id": 1003, "customer": "Mia Koskinen", "country": "FI", "amount": 310.25,
		"status": "refunded", "created_at": "2026-11-30T08:04:05Z"}
	if _, err := tablewrite.EqualityDelete(ctx, tbl, "order_id", []tablewrite.Row{{"order_id": 1003}},
		[]tablewrite.Row{refund}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(bctx, chromedp.WaitVisible(
		chromedp.CSS(`#live tbody[data-complete="true"] tr[data-op="update"] td.changed`))); err != nil {
		t.Fatalf("the live view did not paint the new commit: %v\n%s", err, srv.logs())
	}
	painted := eval(`JSON.stringify([...document.querySelectorAll("#live tbody tr[data-op]")].map(tr => [tr.dataset.op,
		...[...tr.querySelectorAll("td.changed")].map(td => td.querySelector(".old").textContent + " -> " +
		td.querySelector(".new").textContent)]))`)
	if painted != `[["update","placed -> refunded"]]` {
		t.Fatalf("the live view painted %v; want one update, placed -> refunded", painted)
	}

	if path := os.Getenv("SLUICE_CONSOLE_SCREENSHOT"); path != "" {
		// The picture shows the whole history's changes under the live one.
		if err := chromedp.Do(bctx,
			chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
				_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](
					`document.querySelector("#window").from.value = ""; document.querySelector("#window").to.value = ""; true`))
				return err
			}),
			chromedp.Click(chromedp.CSS(`#window button[type="submit"]`)),
			chromedp.WaitReady(chromedp.CSS(`#changes[data-to=""][data-rows="13"]`)),
		); err != nil {
			t.Fatal(err)
		}
		if err := chromedp.Do(bctx, chromedp.EmulateViewport(1400, 1240)); err != nil {
			t.Fatal(err)
		}
		png, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("saved the console's screenshot to %s", path)
	}
}

// TestConsoleReadme runs the command of README.md's console subsection,
// which must be the one `make demo` runs (the Makefile's demo recipe with
// its defaults), as is but for its two addresses (free ones), in an empty
// directory: flightd prints the console's address, which serves the page
// and lists the demo table.
func TestConsoleReadme(t *testing.T) {
	doc := docmd.Read(t, "../README.md")
	const head = "### The browser: the web console\n"
	i := strings.Index(doc, head)
	if i < 0 {
		t.Fatalf("README.md has no %q", head)
	}
	sec := doc[i+len(head):]
	if j := strings.Index(sec, "\n#"); j >= 0 {
		sec = sec[:j]
	}
	block := docmd.Block(t, "README.md", sec, "sh")
	const readmeAddr, readmeListen = "127.0.0.1:8816", "127.0.0.1:8815"
	args := strings.Fields(block[0])
	if len(block) != 1 || filepath.Base(args[0]) != "flightd" || !slices.Contains(args, readmeAddr) {
		t.Fatalf("the console's sh block is %q; want one flightd command on %s", block, readmeAddr)
	}
	if demo := makeDemoCommand(t); !slices.Equal(args, demo) {
		t.Fatalf("the console's sh block is %q; make demo runs %q", args, demo)
	}
	addrs := freeAddrs(t, 2)
	addr := addrs[0]
	for k, a := range args {
		switch a {
		case readmeAddr:
			args[k] = addr
		case readmeListen:
			args[k] = addrs[1]
		}
	}
	cmd := exec.Command(flightdBin, args[1:]...)
	cmd.Dir = t.TempDir()
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("flightd did not exit cleanly: %v\n%s", err, out)
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("flightd did not stop on SIGTERM:\n%s", out)
		}
	}()
	url := "http://" + addr + "/"
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(out.String(), "web console on "+url); {
		if time.Now().After(deadline) {
			t.Fatalf("flightd did not print %q:\n%s", "web console on "+url, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for path, want := range map[string]string{"": "<title>Sluice console</title>", "api/tables": `"name":"demo.orders"`} {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Fatalf("GET %s: %s %s; want %q", url+path, resp.Status, body, want)
		}
	}
}

// makeDemoCommand returns the flightd command of the Makefile's demo
// recipe, its variables at their defaults (ARGS empty).
func makeDemoCommand(t *testing.T) []string {
	t.Helper()
	mk := docmd.Read(t, "../Makefile")
	vars := map[string]string{"BIN": ".tmp/bin", "ARGS": ""}
	for _, l := range strings.Split(mk, "\n") {
		if name, val, ok := strings.Cut(l, " ?= "); ok && !strings.ContainsAny(name, " \t") {
			vars[name] = strings.TrimSpace(val)
		}
	}
	const recipe = "\n\t$(BIN)/flightd --demo "
	i := strings.Index(mk, "\ndemo:")
	if i < 0 || !strings.Contains(mk[i:], recipe) {
		t.Fatalf("the Makefile's demo recipe runs no %q", strings.TrimSpace(recipe))
	}
	line := mk[i:][strings.Index(mk[i:], recipe)+2:]
	line = line[:strings.Index(line, "\n")]
	// $(if $(HTTP_LISTEN),--http-listen $(HTTP_LISTEN)): the default is set.
	if vars["HTTP_LISTEN"] == "" {
		t.Fatal("the Makefile's HTTP_LISTEN has no default: make demo serves no console")
	}
	line = strings.Replace(line, "$(if $(HTTP_LISTEN),--http-listen $(HTTP_LISTEN))", "--http-listen $(HTTP_LISTEN)", 1)
	line = regexp.MustCompile(`\$\(([A-Z_]+)\)`).ReplaceAllStringFunc(line, func(ref string) string {
		v, ok := vars[ref[2:len(ref)-1]]
		if !ok {
			t.Fatalf("the Makefile's demo recipe names %s, which has no default: %s", ref, line)
		}
		return v
	})
	return strings.Fields(line)
}
