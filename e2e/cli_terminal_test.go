package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// pwned, printed raw, retitles the terminal (OSC 0 ended by BEL) and
// clears it (CSI 2J).
const pwned = "\x1b]0;pwned\x07\x1b[2J"

// sgr is a color of sluice's own painter.
var sgr = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// checkNoEscapes fails if out, without sluice's own colors, holds an ESC,
// a BEL or any other control character but a line feed.
func checkNoEscapes(t *testing.T, what, out string) {
	t.Helper()
	for _, r := range sgr.ReplaceAllString(out, "") {
		if r != '\n' && (r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0)) {
			t.Errorf("%s: control character %U reaches the terminal:\n%q", what, r, out)
			return
		}
	}
}

// TestCLITerminalEscapes writes a row whose value and a column whose name
// are escape sequences, and reads them with the sluice binary from a real
// flightd: no human output (changes -o table, on a pseudo-terminal too,
// tail's diff, tables, snapshots, status, explain, an error of the server
// naming the table) lets an ESC or a BEL through, and -o jsonl carries
// the value exactly.
func TestCLITerminalEscapes(t *testing.T) {
	const table = "e2e.evil"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	cat, err := tablewrite.OpenWarehouse(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	sc := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "note" + pwned, Type: iceberg.PrimitiveTypes.String})
	tbl, err := tablewrite.CreateTable(ctx, cat, table, sc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tablewrite.Append(ctx, tbl, []tablewrite.Row{
		{"id": int64(1), "name": pwned, "note" + pwned: "x"},
		{"id": int64(2), "name": "plain", "note" + pwned: pwned},
	}); err != nil {
		t.Fatal(err)
	}
	cat.Close()
	srv := startFlightd(t, "--warehouse", dir)

	for _, args := range [][]string{
		{"changes", table, "-o", "table"},
		{"changes", table, "-o", "table", "--color", "always"},
		{"tail", table, "--start", "latest-full", "--no-follow"},
		{"tail", table, "--start", "latest-full", "--no-follow", "--color", "always"},
		{"tables"},
		{"snapshots", table},
		{"status"},
		{"explain", table, "--files"},
	} {
		out := mustCLI(t, ctx, srv.URI(), args...)
		checkNoEscapes(t, strings.Join(args, " "), out)
		if !strings.Contains(out, `\x1b]0;pwned\a\x1b[2J`) && args[0] != "tables" && args[0] != "status" && args[0] != "snapshots" {
			t.Errorf("sluice %s: the value is not shown quoted:\n%s", strings.Join(args, " "), out)
		}
	}

	// The server's error names the table it did not find.
	res := runCLI(t, ctx, srv.URI(), "changes", "e2e.evil"+pwned)
	if res.code != 15 {
		t.Fatalf("exit %d: %q", res.code, res.stderr)
	}
	checkNoEscapes(t, "the server's error", res.stderr)
	if !strings.Contains(res.stderr, `e2e.evil\x1b]0;pwned\a\x1b[2J`) {
		t.Errorf("the error does not name the table escaped: %q", res.stderr)
	}

	// jsonl is exact.
	jl := mustCLI(t, ctx, srv.URI(), "changes", table, "-o", "jsonl")
	var names, notes []string
	for _, line := range strings.Split(strings.TrimSpace(jl), "\n") {
		var row struct {
			After map[string]any `json:"after"`
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		names = append(names, row.After["name"].(string))
		notes = append(notes, row.After["note"+pwned].(string))
	}
	if strings.Join(names, "|") != pwned+"|plain" || strings.Join(notes, "|") != "x|"+pwned {
		t.Fatalf("jsonl names %q notes %q:\n%s", names, notes, jl)
	}

	// On a pseudo-terminal, where the table is the default output and
	// stdout and stderr are the terminal's.
	script, err := exec.LookPath("script")
	if err != nil {
		t.Fatal("runs sluice under a pseudo-terminal with script(1), from util-linux (Debian: bsdutils): not found")
	}
	for _, line := range []string{
		sluiceBin + " changes " + table,
		sluiceBin + " changes 'e2e.evil" + pwned + "'",
	} {
		cmd := exec.CommandContext(ctx, script, "-qfec", line, "/dev/null")
		cmd.Env = cliEnv("SLUICE_URI="+srv.URI(), "TERM=xterm")
		out, _ := cmd.Output() // the second exits 15
		tty := strings.ReplaceAll(string(out), "\r\n", "\n")
		if !strings.Contains(tty, "pwned") {
			t.Fatalf("script -c %q:\n%q", line, tty)
		}
		checkNoEscapes(t, "pty: "+line, tty)
	}
}
