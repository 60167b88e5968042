package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	sluice "github.com/sluicefeed/sluice/clients/go"
)

// renderDiff renders batches of historyRows split at the given row
// indices, as tail does.
func renderDiff(t *testing.T, color bool, splits ...int) string {
	t.Helper()
	mem := checkedMem(t)
	var out bytes.Buffer
	d := &diffWriter{w: &out, p: painter{on: color}}
	prev := 0
	for _, end := range append(splits, len(historyRows)) {
		rec := record(t, mem, changeSchema(), historyRows[prev:end]...)
		if err := d.write(decode(rec), sluice.BatchMeta{CommitSeq: 3}); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		prev = end
	}
	if err := d.flush(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestDiffPlain(t *testing.T) {
	want := strings.Join([]string{
		"@ snapshot 7036874417766400001  2026-11-30T08:00:00Z  commit_seq 3",
		"+ insert  id=1 name=ann amount=10.5",
		"@ snapshot 7036874417766400002  2026-11-30T09:00:00Z  commit_seq 3",
		"~ update  id=1 name=ann amount=10.5→12",
		`~ update  id=2 name=bo→"Bo Ek" amount=1`,
		"@ snapshot 7036874417766400003  2026-11-30T10:00:00.5Z  commit_seq 3",
		"- delete  id=3 name=null amount=3",
		""}, "\n")
	// The update pair zips the same whether or not a batch ends between
	// its two rows.
	for _, splits := range [][]int{nil, {2}, {1, 2, 3, 4}} {
		if got := renderDiff(t, false, splits...); got != want {
			t.Errorf("split at %v:\n%s\nwant:\n%s", splits, got, want)
		}
	}
}

func TestDiffColor(t *testing.T) {
	got := renderDiff(t, true)
	lines := strings.Split(got, "\n")
	// The changed cell: the old value struck through in red, the new one
	// bold green; the unchanged cells plain.
	if want := "\x1b[2mamount=\x1b[0m\x1b[31;9m10.5\x1b[0m→\x1b[1;32;48;5;22m12\x1b[0m"; !strings.Contains(lines[3], want) {
		t.Errorf("update line %q lacks the highlighted change %q", lines[3], want)
	}
	if !strings.Contains(lines[3], "\x1b[2mname=\x1b[0mann ") {
		t.Errorf("update line %q: the unchanged name is not plain", lines[3])
	}
	if !strings.HasPrefix(lines[1], "\x1b[32m+ insert \x1b[0m") || !strings.HasPrefix(lines[6], "\x1b[31m- delete \x1b[0m") {
		t.Errorf("insert and delete marks not green and red:\n%q\n%q", lines[1], lines[6])
	}
	// Without the escapes it is the plain rendering.
	if plain := stripANSI(got); plain != renderDiff(t, false) {
		t.Errorf("colored minus escapes:\n%s\nplain:\n%s", plain, renderDiff(t, false))
	}
}

// stripANSI removes SGR escape sequences.
func stripANSI(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := strings.IndexByte(s[i:], 'm')
			if j > 0 {
				i += j
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func TestColorChoice(t *testing.T) {
	for _, tt := range []struct {
		name    string
		tty     bool
		noColor string
		args    []string
		want    bool
	}{
		{"terminal", true, "", nil, true},
		{"pipe", false, "", nil, false},
		{"NO_COLOR on a terminal", true, "1", nil, false},
		{"NO_COLOR empty counts as unset", true, "", nil, true},
		{"--no-color", true, "", []string{"--no-color"}, false},
		{"--color always into a pipe", false, "", []string{"--color", "always"}, true},
		{"--color always beats NO_COLOR", true, "1", []string{"--color=always"}, true},
		{"--color never", true, "", []string{"--color", "never"}, false},
		{"--no-color beats --color always", true, "", []string{"--color", "always", "--no-color"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := IO{StdoutTTY: tt.tty, Getenv: func(k string) string {
				if k == "NO_COLOR" {
					return tt.noColor
				}
				return ""
			}}
			a := &app{io: o}
			fs := newTestFlagSet()
			a.g.register(fs, o)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			got, err := a.colored()
			if err != nil || got != tt.want {
				t.Fatalf("colored() = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// The flat layout renders as the renderable row does: its update pair
// zipped, its change types in the table.
func TestFlatLayout(t *testing.T) {
	mem := checkedMem(t)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: sluice.ColumnChangeType, Type: arrow.BinaryTypes.String},
		{Name: sluice.ColumnCommitVersion, Type: arrow.PrimitiveTypes.Int64},
		{Name: sluice.ColumnCommitTimestamp, Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	}, nil)
	rec := record(t, mem, sc,
		`{"id": 1, "name": "ann", "_change_type": "insert", "_commit_version": 3, "_commit_timestamp": "2026-11-30T08:00:00Z"}`,
		`{"id": 1, "name": "ann", "_change_type": "update_preimage", "_commit_version": 4, "_commit_timestamp": "2026-11-30T09:00:00Z"}`,
		`{"id": 1, "name": "Ann", "_change_type": "update_postimage", "_commit_version": 4, "_commit_timestamp": "2026-11-30T09:00:00Z"}`,
		`{"id": 2, "name": null, "_change_type": "delete", "_commit_version": 4, "_commit_timestamp": "2026-11-30T09:00:00Z"}`)
	defer rec.Release()
	var out bytes.Buffer
	d := &diffWriter{w: &out}
	if err := d.write(decode(rec), sluice.BatchMeta{}); err != nil {
		t.Fatal(err)
	}
	want := "@ snapshot 3  2026-11-30T08:00:00Z\n+ insert  id=1 name=ann\n" +
		"@ snapshot 4  2026-11-30T09:00:00Z\n~ update  id=1 name=ann→Ann\n- delete  id=2 name=null\n"
	if out.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out.String(), want)
	}
	out.Reset()
	tw := &tableWriter{w: &out}
	if err := tw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	want = strings.Join([]string{
		"OP                SNAPSHOT  TS                    ID  NAME",
		"insert            3         2026-11-30T08:00:00Z  1   ann",
		"update_preimage   4         2026-11-30T09:00:00Z  1   ann",
		"update_postimage  4         2026-11-30T09:00:00Z  1   Ann",
		"delete            4         2026-11-30T09:00:00Z  2   null",
		""}, "\n")
	if out.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}
