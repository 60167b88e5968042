package daemon

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluicefeed/sluice/internal/app/demo"
)

// venvPython is where `make venv` puts the Python interpreter with pyarrow,
// pandas and the Sluice client, relative to the repository's root.
const venvPython = ".tmp/venv/bin/python"

// demoPython returns the Python interpreter the demo's snippets name: the
// repository's venv, found next to the flightd that `make build` writes
// into .tmp/bin, or in the working directory; "" when there is none.
func demoPython() string {
	var candidates []string
	if exe, err := os.Executable(); err == nil {
		candidates = append(candidates, filepath.Join(filepath.Dir(exe), "..", "venv", "bin", "python"))
	}
	for _, c := range append(candidates, venvPython) {
		if fi, err := os.Stat(c); err == nil && !fi.IsDir() {
			return shortPath(c)
		}
	}
	return ""
}

// shortPath returns path relative to the working directory when it is
// below it, else absolute.
func shortPath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, abs); err == nil && rel != ".." &&
			!strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return rel
		}
	}
	return abs
}

// printDemo prints how to read the demo table served at uri, with the
// Python interpreter py ("": none known).
func printDemo(out io.Writer, uri, py string) {
	pyarrowSnippet := fmt.Sprintf(`-c '
import json, pandas as pd, pyarrow.flight as flight
client = flight.connect("%[1]s")
ticket = flight.Ticket(json.dumps({"table": "%[2]s"}).encode())
print(client.do_get(ticket).read_all().to_pandas(types_mapper=pd.ArrowDtype))'`, uri, demo.Table)
	// The README's first snippet (TestDemoSnippetIsReadme): the history,
	// each change with its commit numbered and named.
	sluiceSnippet := fmt.Sprintf(`-c '
import sluice
client = sluice.connect("%[1]s")
commits = {s["snapshot"]: "(%%d) %%s" %% (i, s["operation"]) for i, s in enumerate(client.snapshots("%[2]s"), 1)}
changes = sluice.to_pandas(client.changes("%[2]s", columns=["order_id", "status", "amount"]))
changes["snapshot"] = changes["snapshot"].map(commits)
print(changes.drop(columns="ts").to_string(index=False))'`, uri, demo.Table)

	fmt.Fprintf(out, "\nSluice is serving the demo table %s on %s\n\n", demo.Table, uri)
	if py != "" {
		fmt.Fprintf(out, `Read its change feed with the Sluice client, from the repository's Python venv:

    %[1]s %[2]s

or with plain pyarrow:

    %[1]s %[3]s
`, py, sluiceSnippet, pyarrowSnippet)
	} else {
		fmt.Fprintf(out, `Read its change feed from a Python with pyarrow and pandas (in the repository,
make venv creates .tmp/venv with them and the Sluice client; elsewhere,
pip install pyarrow pandas):

    python3 %[1]s

or with the Sluice client (pip install ./clients/python, in the repository):

    python3 %[2]s
`, pyarrowSnippet, sluiceSnippet)
	}
	fmt.Fprint(out, "\nStop with Ctrl-C.\n")
}
