package daemon

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// TestDemoPython: the demo's snippets name the repository's venv when the
// working directory has one, and otherwise say what the Python needs.
func TestDemoPython(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if py := demoPython(); py != "" {
		t.Fatalf("no venv: %q", py)
	}
	var out strings.Builder
	printDemo(&out, "grpc://127.0.0.1:8815", "")
	for _, w := range []string{"pyarrow", "make venv", `python3 -c '`, `flight.connect("grpc://127.0.0.1:8815")`} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("without a venv the demo does not say %q:\n%s", w, out.String())
		}
	}

	py := filepath.Join(dir, ".tmp", "venv", "bin", "python")
	if err := os.MkdirAll(filepath.Dir(py), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(py, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := demoPython(); got != ".tmp/venv/bin/python" {
		t.Fatalf("venv: %q", got)
	}
	out.Reset()
	printDemo(&out, "grpc+tls://127.0.0.1:8815", demoPython())
	s := out.String()
	if strings.Contains(s, "python3") || strings.Count(s, ".tmp/venv/bin/python -c '") != 2 ||
		!strings.Contains(s, `sluice.connect("grpc+tls://127.0.0.1:8815")`) {
		t.Fatalf("with the venv:\n%s", s)
	}
}

// TestRunRefusesMissingWarehouse: a warehouse that does not exist is named
// as such before anything is opened or created, whatever the catalog file
// (a named one used to open, and then the progress store failed).
func TestRunRefusesMissingWarehouse(t *testing.T) {
	dir := t.TempDir()
	cat, err := tablewrite.OpenWarehouse(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	cat.Close()
	typo := filepath.Join(dir, "lakx")
	for _, args := range [][]string{
		{"--warehouse", typo},
		{"--warehouse", typo, "--catalog-uri", "file://" + filepath.Join(dir, "catalog.db")},
	} {
		cfg, err := LoadConfig(append(args, "--listen", "127.0.0.1:0"), nil, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		err = Run(context.Background(), cfg, io.Discard)
		if !errors.Is(err, catalog.ErrInvalidConfig) || !strings.Contains(err.Error(), typo+" does not exist") {
			t.Errorf("%v: %v", args, err)
		}
		if _, err := os.Stat(typo); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%v: created the warehouse", args)
		}
	}
	// A REST catalog's warehouse is the server's, never a local
	// directory: the default progress store is in the working directory,
	// whatever the warehouse is called.
	cfg := DefaultConfig()
	cfg.Catalog = catalog.Config{Type: catalog.TypeREST, URI: "http://127.0.0.1:1", Warehouse: typo}.WithDefaults()
	if err := checkProgressDir(cfg); err != nil || cfg.ProgressDSN() != DefaultProgressFile {
		t.Fatalf("progress store of a rest catalog: %s %v", cfg.ProgressDSN(), err)
	}
	// A local warehouse that does not exist: its default progress store
	// is named.
	cfg.Catalog = catalog.Config{Type: catalog.TypeHadoop, Warehouse: typo}.WithDefaults()
	if err := checkProgressDir(cfg); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "--progress-dsn") {
		t.Fatalf("progress store in a missing warehouse: %v", err)
	}
	cfg.Progress.DSN = filepath.Join(dir, "p.db")
	if err := checkProgressDir(cfg); err != nil {
		t.Fatal(err)
	}
}

// TestRunListenInUse: an address in use is named once, by its flag.
func TestRunListenInUse(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	addr := lis.Addr().String()
	for _, flags := range [][]string{
		{"--listen", addr},
		{"--listen", "127.0.0.1:0", "--metrics-listen", addr},
	} {
		cfg, err := LoadConfig(append(flags, "--warehouse", t.TempDir()), nil, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		err = Run(context.Background(), cfg, io.Discard)
		if err == nil || strings.Count(err.Error(), addr) != 1 || !strings.HasPrefix(err.Error(), flags[len(flags)-2]+" "+addr) {
			t.Errorf("%v: %v", flags, err)
		}
	}
}

// TestDemoSnippetIsReadme: the Sluice snippet flightd --demo prints is the
// README's first snippet (which e2e's TestReadmeFirstSnippet runs), so what
// the banner prints is what the README's top shows.
func TestDemoSnippetIsReadme(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	const open = "```sh\n.tmp/venv/bin/python -c '\n"
	_, rest, ok := strings.Cut(string(readme), open)
	if !ok {
		t.Fatalf("README.md has no snippet starting %q", open)
	}
	snippet, _, ok := strings.Cut(rest, "\n```")
	if !ok {
		t.Fatal("README.md's first snippet does not end")
	}
	var out strings.Builder
	printDemo(&out, "grpc://127.0.0.1:8815", ".tmp/venv/bin/python")
	if want := ".tmp/venv/bin/python -c '\n" + snippet; !strings.Contains(out.String(), want) {
		t.Errorf("the demo banner does not print the README's first snippet\n%s\nit prints:\n%s", want, out.String())
	}
}
