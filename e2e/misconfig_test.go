package e2e

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"google.golang.org/grpc/codes"

	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/internal/app/demo"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// The tests of this file start a real flightd with a configuration that is
// wrong in the ways users get it wrong, and check that it refuses to start
// with a message that names what it found and what to pass, rather than
// serve nothing, or the wrong thing, in silence.

// refused runs flightd with args (and env, KEY=VALUE) and returns its
// output, failing the test when flightd starts serving instead of exiting
// with an error.
func refused(t *testing.T, env []string, args ...string) string {
	t.Helper()
	ready := filepath.Join(t.TempDir(), "ready")
	args = append([]string{"--listen", "127.0.0.1:0", "--ready-file", ready}, args...)
	cmd := exec.Command(flightdBin, args...)
	cmd.Env = append(append(os.Environ(), "SLUICE_LOG_LEVEL=warn"), env...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case err := <-done:
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("flightd %v: %v, want an exit with an error:\n%s", args, err, out)
			}
			return out.String()
		case <-deadline:
			_ = cmd.Process.Kill()
			t.Logf("killed: %v", <-done)
			t.Fatalf("flightd %v neither served nor exited within a minute:\n%s", args, out)
		case <-time.After(20 * time.Millisecond):
		}
		if b, err := os.ReadFile(ready); err == nil && len(b) > 0 {
			_ = cmd.Process.Kill()
			t.Logf("killed: %v", <-done)
			t.Fatalf("flightd %v started serving, want a refusal:\n%s", args, out)
		}
	}
}

// wantOutput checks that out holds every one of want.
func wantOutput(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output does not say %q:\n%s", w, out)
		}
	}
}

// writeCatalogTable writes the table name under the catalog name catName
// in the SQLite catalog file (created when absent) of warehouse.
func writeCatalogTable(t *testing.T, warehouse, file, catName, name string) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(warehouse, file)
	if err := os.MkdirAll(warehouse, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	cat, err := catalog.Open(ctx, catalog.Config{Warehouse: warehouse, URI: "file://" + path, Name: catName})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	tbl, err := tablewrite.CreateTable(ctx, cat, name, iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tablewrite.Append(ctx, tbl, []tablewrite.Row{{"id": 1}}); err != nil {
		t.Fatal(err)
	}
}

// TestMisconfigCatalogName: a catalog file whose tables were written under
// another catalog name is refused with the names it holds; with the right
// name it is served.
func TestMisconfigCatalogName(t *testing.T) {
	wh := t.TempDir()
	writeCatalogTable(t, wh, "catalog.db", "lake", "sales.orders")
	out := refused(t, nil, "--warehouse", wh)
	wantOutput(t, out, `"lake"`, "--catalog-name lake", `"sluice"`)

	srv := startFlightd(t, "--warehouse", wh, "--catalog-name", "lake")
	tables, err := dialGo(t, t.Context(), srv.URI()).ListTables(t.Context())
	if err != nil || len(tables) != 1 || tables[0].Name != "sales.orders" {
		t.Fatalf("list_tables with the right name: %v %+v", err, tables)
	}
}

// TestMisconfigNoCatalogURI: a warehouse that pyiceberg wrote (its catalog
// in pyiceberg.db), served without --catalog-uri, is refused: flightd
// names the file and the flags to pass, and creates no catalog.db in it
// unless --create-catalog asks for one.
func TestMisconfigNoCatalogURI(t *testing.T) {
	wh := t.TempDir()
	writeCatalogTable(t, wh, "pyiceberg.db", "lake", "sales.orders")
	out := refused(t, nil, "--warehouse", wh)
	wantOutput(t, out, "pyiceberg.db", "--catalog-uri file://"+filepath.Join(wh, "pyiceberg.db"),
		"--catalog-name lake", "--create-catalog")
	if _, err := os.Stat(filepath.Join(wh, "catalog.db")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused start left a catalog.db in the warehouse: %v", err)
	}

	srv := startFlightd(t, "--warehouse", wh, "--catalog-uri", "file://"+filepath.Join(wh, "pyiceberg.db"),
		"--catalog-name", "lake")
	tables, err := dialGo(t, t.Context(), srv.URI()).ListTables(t.Context())
	if err != nil || len(tables) != 1 {
		t.Fatalf("list_tables of the named catalog: %v %+v", err, tables)
	}
	srv.stop(t)

	startFlightd(t, "--warehouse", wh, "--create-catalog").stop(t)
	if _, err := os.Stat(filepath.Join(wh, "catalog.db")); err != nil {
		t.Fatalf("--create-catalog: %v", err)
	}
}

// TestMisconfigWarehouseMissing: a mistyped warehouse is named as missing
// (not as a progress store that cannot be opened), and not created.
func TestMisconfigWarehouseMissing(t *testing.T) {
	wh := t.TempDir()
	writeCatalogTable(t, wh, "catalog.db", "sluice", "sales.orders")
	typo := filepath.Join(filepath.Dir(wh), "no-such-lake")
	for _, args := range [][]string{
		{"--warehouse", typo, "--catalog-uri", "file://" + filepath.Join(wh, "catalog.db")},
		{"--warehouse", typo},
		{"--warehouse", typo, "--catalog-type", "hadoop"},
	} {
		out := refused(t, nil, args...)
		wantOutput(t, out, typo, "does not exist")
		if strings.Contains(out, "sluice-consumers.db") {
			t.Errorf("%v: the message blames the progress store:\n%s", args, out)
		}
		if _, err := os.Stat(typo); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%v: the missing warehouse was created: %v", args, err)
		}
	}
}

// TestMisconfigDemo: --demo on a directory that does not exist yet creates
// it and serves the demo table, and the snippets it prints use the Python
// of the repository's venv when there is one.
func TestMisconfigDemo(t *testing.T) {
	for _, venv := range []bool{true, false} {
		t.Run(map[bool]string{true: "venv", false: "no venv"}[venv], func(t *testing.T) {
			work := t.TempDir()
			if venv {
				py := filepath.Join(work, ".tmp", "venv", "bin", "python")
				if err := os.MkdirAll(filepath.Dir(py), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(py, []byte("#!/bin/sh\n"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			t.Chdir(work)
			srv := startFlightd(t, "--demo", "--warehouse", filepath.Join(work, "fresh", "warehouse"))
			snaps, err := dialGo(t, t.Context(), srv.URI()).Snapshots(t.Context(), demo.Table)
			if err != nil || len(snaps) == 0 {
				t.Fatalf("demo table: %v %d snapshots", err, len(snaps))
			}
			out := srv.logs()
			if venv {
				wantOutput(t, out, ".tmp/venv/bin/python -c")
				if strings.Contains(out, "python3 -c") {
					t.Errorf("the demo prints python3 although the venv is there:\n%s", out)
				}
			} else {
				wantOutput(t, out, "pyarrow", "make venv")
			}
		})
	}
}

// TestMisconfigMessages: a duration without its unit names the unit, from
// a flag, the environment or the YAML file; a configuration error reads
// once, without doubled prefixes.
func TestMisconfigMessages(t *testing.T) {
	wh := t.TempDir()
	yamlFile := writeFile(t, wh, "flightd.yaml", "follow:\n  poll_interval: 5\n")
	for _, c := range []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"flag", nil, []string{"--poll-interval", "5"}, []string{"poll-interval", "5s"}},
		{"environment", []string{"SLUICE_POLL_INTERVAL=5"}, nil, []string{"SLUICE_POLL_INTERVAL", "5s"}},
		{"yaml", nil, []string{"--config", yamlFile}, []string{"follow.poll_interval", "5s"}},
		{"auth", nil, []string{"--auth-mode", "token"}, []string{"tokens file"}},
		{"catalog", nil, []string{"--catalog-type", "glue"}, []string{"glue"}},
		{"listen", nil, []string{"--listen", "nowhere"}, []string{"nowhere"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := refused(t, c.env, append([]string{"--warehouse", wh}, c.args...)...)
			wantOutput(t, out, c.want...)
			if n := strings.Count(out, "flightd:"); n != 1 {
				t.Errorf("%d times \"flightd:\" in the message:\n%s", n, out)
			}
			if n := strings.Count(out, "invalid configuration"); n > 1 {
				t.Errorf("%d times \"invalid configuration\" in the message:\n%s", n, out)
			}
			if strings.Contains(out, "Usage:") {
				t.Errorf("a configuration error prints the whole usage:\n%s", out)
			}
		})
	}
}

// TestMisconfigPublicMetrics: metrics (and profiles) on an address that is
// not loopback need --allow-public-metrics, which then logs a warning.
func TestMisconfigPublicMetrics(t *testing.T) {
	wh := t.TempDir()
	out := refused(t, nil, "--warehouse", wh, "--metrics-listen", "0.0.0.0:0")
	wantOutput(t, out, "--allow-public-metrics", "table names")
	out = refused(t, nil, "--warehouse", wh, "--metrics-listen", ":0", "--pprof")
	wantOutput(t, out, "--allow-public-metrics", "heap")
	out = refused(t, []string{"SLUICE_METRICS_LISTEN=0.0.0.0:0"}, "--warehouse", wh)
	wantOutput(t, out, "--allow-public-metrics")

	srv := startFlightd(t, "--warehouse", wh, "--metrics-listen", "0.0.0.0:0", "--allow-public-metrics")
	wantOutput(t, srv.logs(), "level=WARN", "metrics")
	srv.stop(t)
	startFlightd(t, "--warehouse", wh, "--metrics-listen", "127.0.0.1:0", "--pprof").stop(t)
}

// TestMisconfigTLSBanner: the start line names the scheme clients must
// use.
func TestMisconfigTLSBanner(t *testing.T) {
	wh := t.TempDir()
	ca := newCA(t, t.TempDir(), "banner-ca")
	cert, key := ca.issue(t, "server", "127.0.0.1", true)
	srv := startFlightd(t, "--warehouse", wh, "--tls-cert-file", cert, "--tls-key-file", key)
	wantOutput(t, srv.logs(), "flightd serving on grpc+tls://"+srv.Addr)
	srv.stop(t)
	srv = startFlightd(t, "--warehouse", wh)
	wantOutput(t, srv.logs(), "flightd serving on grpc://"+srv.Addr)
}

// TestMisconfigTableSuggestions: an unknown table's NotFound names the
// nearest tables, only those the caller may read.
func TestMisconfigTableSuggestions(t *testing.T) {
	ctx := t.Context()
	wh := t.TempDir()
	cat, err := tablewrite.OpenWarehouse(ctx, wh)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := demo.Ensure(ctx, cat); err != nil {
		t.Fatal(err)
	}
	if _, err := tablewrite.CreateTable(ctx, cat, "secret.orders", demo.Schema()); err != nil {
		t.Fatal(err)
	}
	cat.Close()

	srv := startFlightd(t, "--warehouse", wh)
	_, err = dialGo(t, ctx, srv.URI()).Snapshots(ctx, "demo.order")
	wantCode(t, err, codes.NotFound, "did you mean demo.orders or secret.orders?")

	rules := writeFile(t, t.TempDir(), "rules.yaml",
		"auth:\n  rules:\n    - principals: [anonymous]\n      tables: [demo.orders, demo.order]\n")
	srv = startFlightd(t, "--warehouse", wh, "--config", rules)
	_, err = dialGo(t, ctx, srv.URI()).Snapshots(ctx, "demo.order")
	wantCode(t, err, codes.NotFound, "did you mean demo.orders?")
	if strings.Contains(errString(err), "secret") {
		t.Fatalf("the suggestion names a table the caller may not read: %v", err)
	}
}
