package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sluice "github.com/sluicefeed/sluice/clients/go"
)

// evil is a value that, printed raw, retitles the terminal (OSC 0, ended
// by BEL) and clears the screen (CSI 2J).
const evil = "\x1b]0;pwned\x07\x1b[2J"

// evilValues hold each kind of control character: C0 (ESC, BEL, CR, a
// tab), DEL, C1 (U+009B is CSI on terminals that take C1 codes), and the
// bidirectional controls that reorder the rest of a line (an override
// U+202E, an isolate U+2066, a mark U+200F).
var evilValues = []string{evil, "bell\x07", "cr\rover", "tab\there", "del\x7f", "csi\u009b2J", "nel\u0085",
	"amount \u202e0001\u202c", "isolate\u2066x\u2069", "mark\u200f"}

// checkTerminalSafe fails unless s holds no control character but line
// feeds, once the painter's own SGR colors are taken out, and is valid
// UTF-8 (a stray byte of a C1 code is one a terminal may act on).
func checkTerminalSafe(t *testing.T, what, s string) {
	t.Helper()
	plain := stripANSI(s)
	if !utf8.ValidString(plain) {
		t.Errorf("%s: invalid UTF-8 reaches the terminal: %q", what, s)
	}
	for _, r := range plain {
		if r != '\n' && controlRune(r) {
			t.Errorf("%s: control character %U reaches the terminal: %q", what, r, s)
			return
		}
	}
}

// controlRune is the test's own idea of a control character: C0, DEL, C1,
// and Unicode's bidirectional controls (category Cf with a Bidi_Control
// property: unicode.Bidi_Control).
func controlRune(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || unicode.Is(unicode.Bidi_Control, r)
}

// evilRecord is a renderable batch whose values, column name and op are
// each of evilValues.
func evilRecord(t *testing.T) arrow.RecordBatch {
	t.Helper()
	img := arrow.StructOf(
		arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "name" + evil, Type: arrow.BinaryTypes.String, Nullable: true},
	)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "op", Type: arrow.BinaryTypes.String},
		{Name: "before", Type: img, Nullable: true},
		{Name: "after", Type: img, Nullable: true},
		{Name: "snapshot", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	var rows []string
	for i, v := range evilValues {
		j := string(appendJSONString(nil, v))
		name := string(appendJSONString(nil, "name"+evil))
		rows = append(rows,
			`{"op": "insert", "after": {"id": 1, `+name+`: `+j+`}, "snapshot": 1}`,
			`{"op": "update", "before": {"id": 1, `+name+`: `+j+`}, "after": {"id": 1, `+name+`: "x"}, "snapshot": 2}`,
			`{"op": "update_before", "before": {"id": 1, `+name+`: "x"}, "snapshot": 3}`,
			`{"op": "update_after", "after": {"id": 1, `+name+`: `+j+`}, "snapshot": 3}`)
		if i == 0 {
			rows = append(rows, `{"op": `+j+`, "after": {"id": 2, `+name+`: "y"}, "snapshot": 4}`)
		}
	}
	return record(t, checkedMem(t), sc, rows...)
}

// TestTerminalTable: `sluice changes -o table` quotes values, column
// names and change types that hold control characters, plain and in
// color.
func TestTerminalTable(t *testing.T) {
	rec := evilRecord(t)
	defer rec.Release()
	for _, color := range []bool{false, true} {
		var out bytes.Buffer
		tw := &tableWriter{w: &out, p: painter{on: color}}
		if err := tw.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		checkTerminalSafe(t, "table", out.String())
		// Quoted as tail quotes: Go's quoting of the whole value.
		if !strings.Contains(out.String(), `"\x1b]0;pwned\a\x1b[2J"`) {
			t.Errorf("color %v: the value is not quoted as tail quotes it:\n%s", color, out.String())
		}
	}
}

// TestTerminalDiff: tail's diff quotes every control character, not only
// ESC and line breaks (a lone BEL, DEL and C1 codes passed before).
func TestTerminalDiff(t *testing.T) {
	rec := evilRecord(t)
	defer rec.Release()
	for _, color := range []bool{false, true} {
		var out bytes.Buffer
		d := &diffWriter{w: &out, p: painter{on: color}}
		if err := d.write(decode(rec), sluice.BatchMeta{}); err != nil {
			t.Fatal(err)
		}
		if err := d.flush(); err != nil {
			t.Fatal(err)
		}
		checkTerminalSafe(t, "diff", out.String())
	}
}

// TestTerminalControlTables: tables, snapshots, status and explain quote
// names and operations.
func TestTerminalControlTables(t *testing.T) {
	snap := int64(7)
	for _, v := range evilValues {
		var out bytes.Buffer
		if err := writeTables(&out, []sluice.TableInfo{{Name: "ns." + v, Format: v, CurrentSnapshot: &snap}}); err != nil {
			t.Fatal(err)
		}
		if err := writeSnapshots(&out, []sluice.Snapshot{{ID: 7, Operation: v, Summary: map[string]string{"added-records": v}}}); err != nil {
			t.Fatal(err)
		}
		if err := writeStatus(&out, []statusRow{{Table: "ns." + v, Snapshot: &snap}}); err != nil {
			t.Fatal(err)
		}
		p := &sluice.Plan{Table: "ns." + v, Columns: []string{v}, Identity: []string{v},
			Snapshots: []sluice.SnapshotPlan{{Snapshot: 7, Operation: v, Strategy: v,
				Files: []sluice.FilePlan{{Path: "/w/" + v, Role: v, Content: v}}}}}
		if err := writePlan(&out, p, true); err != nil {
			t.Fatal(err)
		}
		checkTerminalSafe(t, "control tables", out.String())
	}
	// The quoting is tail's, and cells stay aligned.
	var out bytes.Buffer
	if err := writeTables(&out, []sluice.TableInfo{{Name: "ns.a\tb", Format: "iceberg"}, {Name: "ns.c", Format: "delta"}}); err != nil {
		t.Fatal(err)
	}
	want := "TABLE      FORMAT      SNAPSHOT  COMMIT_SEQ\n" +
		`"ns.a\tb"  iceberg v0  -         0` + "\n" +
		"ns.c       delta v0    -         0\n"
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestTerminalErrors: errors, the server's and the command line's, reach
// stderr with their control characters escaped.
func TestTerminalErrors(t *testing.T) {
	// The server's error, through Main.
	srv := startFakeServer(t, status.Error(codes.NotFound, `catalog: table not found: "ns.`+evil+`"`))
	code, _, stderr := run(t, IO{}, "snapshots", "ns.x", "--uri", srv.uri)
	if code != exitServer+int(codes.NotFound) {
		t.Errorf("exit %d: %s", code, stderr)
	}
	checkTerminalSafe(t, "server error", stderr)
	if !strings.Contains(stderr, `\x1b]0;pwned\a\x1b[2J`) {
		t.Errorf("the escaped text is not in %q", stderr)
	}
	// Through Main: a usage error, a flag and a command.
	for _, args := range [][]string{
		{"changes", "a.b", "c" + evil},
		{"changes", "a.b", "--from", evil},
		{"changes", "a.b", "--" + evil},
		{"changes", "a.b", "-o", evil},
		{"tail", "a.b", "-o", evil},
		{evil},
	} {
		code, out, stderr := run(t, IO{}, args...)
		if code != exitUsage {
			t.Errorf("%q: exit %d", args, code)
		}
		checkTerminalSafe(t, "stderr", stderr)
		checkTerminalSafe(t, "stdout", out)
	}
}

// TestTerminalProgress: the summary line names an --out file quoted.
func TestTerminalProgress(t *testing.T) {
	var errb bytes.Buffer
	p := startProgress(&errb, true, true)
	p.stop(true, filepath.Join("d", "out"+evil+".jsonl"))
	checkTerminalSafe(t, "progress", strings.ReplaceAll(errb.String(), "\r\x1b[K", ""))
}

// TestTerminalMachineOutputsExact: jsonl and csv carry the value exactly.
func TestTerminalMachineOutputsExact(t *testing.T) {
	rec := evilRecord(t)
	defer rec.Release()
	var out bytes.Buffer
	jw := newJSONLWriter(&out)
	if err := jw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := jw.Close(); err != nil {
		t.Fatal(err)
	}
	if want := `"name\u001b]0;pwned\u0007\u001b[2J":"\u001b]0;pwned\u0007\u001b[2J"`; !strings.Contains(out.String(), want) {
		t.Errorf("jsonl lacks %s:\n%s", want, out.String())
	}
	out.Reset()
	cw := newCSVWriter(&out, rec.Schema(), checkedMem(t))
	if err := cw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := cw.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), evil) {
		t.Errorf("csv lacks the exact value:\n%q", out.String())
	}
}
