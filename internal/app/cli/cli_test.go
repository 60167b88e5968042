package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func run(t *testing.T, o IO, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	o.Stdout, o.Stderr = &out, &errb
	code = Main(context.Background(), args, o)
	return code, out.String(), errb.String()
}

func TestHelp(t *testing.T) {
	code, out, _ := run(t, IO{}, "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, c := range commands() {
		if !strings.Contains(out, "\n  "+c.name+" ") {
			t.Errorf("sluice --help does not list %s:\n%s", c.name, out)
		}
		code, help, _ := run(t, IO{}, c.name, "--help")
		if code != 0 || !strings.HasPrefix(help, "Usage: sluice "+c.name) {
			t.Errorf("sluice %s --help: exit %d\n%s", c.name, code, help)
		}
		if code2, help2, _ := run(t, IO{}, "help", c.name); code2 != 0 || help2 != help {
			t.Errorf("sluice help %s differs from sluice %s --help", c.name, c.name)
		}
	}
	_, help, _ := run(t, IO{}, "changes", "--help")
	for _, f := range []string{"--from", "--to", "--columns", "--filter", "--identity", "--net", "--fold", "-o format", "--out",
		"--ref name", "--lineage"} {
		if !strings.Contains(help, "\n  "+f) {
			t.Errorf("sluice changes --help lacks %s", f)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		msg  string
	}{
		{nil, "Usage:"},
		{[]string{"nope"}, `unknown command "nope"`},
		{[]string{"changes"}, "name a table"},
		{[]string{"changes", "a.b", "c.d"}, "one table, not 2 arguments"},
		{[]string{"changes", "a.b", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"changes", "a.b", "--from", "yesterday"}, `--from "yesterday": want a snapshot id`},
		{[]string{"changes", "a.b", "-o", "xml"}, `-o "xml": want one of table, jsonl, csv, parquet, arrow`},
		{[]string{"changes", "a.b", "--out", "x.bin"}, "--out x.bin: name the format with -o"},
		{[]string{"tail", "a.b", "--ack"}, "--ack needs --consumer"},
		{[]string{"tables", "--token", "t", "--user", "u"}, "--token and --user both given"},
		{[]string{"tables", "--user", "u"}, "--user u needs --password"},
		{[]string{"tables", "--tls-cert", "c.pem"}, "--tls-cert and --tls-key go together"},
		{[]string{"tables", "--color", "sometimes"}, ""},
		{[]string{"tables", "a.b"}, "tables takes no arguments"},
		{[]string{"consumers"}, "name a table"},
		{[]string{"ack", "a.b", "--snapshot", "5"}, "--consumer is required"},
		{[]string{"ack", "a.b", "--consumer", "c", "--snapshot", "x", "--ref", "audit"}, `--snapshot "x": want a snapshot id`},
		{[]string{"reset", "a.b", "--ref", "audit"}, "--consumer is required"},
		{[]string{"snapshots", "a.b", "-o", "xml"}, `-o "xml": want table or json`},
	} {
		code, _, stderr := run(t, IO{}, tt.args...)
		if code != exitUsage || !strings.Contains(stderr, tt.msg) {
			t.Errorf("sluice %v: exit %d, stderr %q; want 2 and %q", tt.args, code, stderr, tt.msg)
		}
	}
	// Parquet and Arrow never go to a terminal.
	code, _, stderr := run(t, IO{StdoutTTY: true}, "changes", "a.b", "-o", "parquet")
	if code != exitUsage || !strings.Contains(stderr, "-o parquet to a terminal") {
		t.Errorf("parquet to a terminal: exit %d %q", code, stderr)
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, _ := run(t, IO{}, args...)
		if code != 0 || !strings.HasPrefix(out, "sluice ") {
			t.Errorf("%v: exit %d %q", args, code, out)
		}
	}
}

func TestParseInterspersed(t *testing.T) {
	fs := newTestFlagSet()
	from := fs.String("from", "", "")
	net := fs.Bool("net", false, "")
	pos, err := parseInterspersed(fs, []string{"--net", "a.b", "--from", "5", "c", "--", "--d"})
	if err != nil || *from != "5" || !*net || !slices.Equal(pos, []string{"a.b", "c", "--d"}) {
		t.Fatalf("pos %q from %q net %v err %v", pos, *from, *net, err)
	}
}

func TestParsePoint(t *testing.T) {
	for _, tt := range []struct {
		in   string
		snap int64
		ms   int64
	}{
		{"4742367066457966793", 4742367066457966793, 0},
		{"0", 0, 0},
		{"2026-11-30T08:00:00Z", 0, 1796025600000},
		{"2026-11-30T09:00:00+01:00", 0, 1796025600000},
		{"2026-11-30 08:00:00", 0, 1796025600000},
		{"2026-11-30", 0, 1795996800000},
	} {
		p, err := parsePoint("from", tt.in)
		if err != nil {
			t.Fatalf("%s: %v", tt.in, err)
		}
		switch {
		case tt.ms == 0 && (p.snapshot == nil || *p.snapshot != tt.snap || p.tsMs != nil):
			t.Errorf("%s: %+v, want snapshot %d", tt.in, p, tt.snap)
		case tt.ms != 0 && (p.tsMs == nil || *p.tsMs != tt.ms || p.snapshot != nil):
			t.Errorf("%s: %+v, want %d ms", tt.in, p, tt.ms)
		}
	}
}

func TestExitCode(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want int
	}{
		{usagef("x"), 2},
		{errors.New("disk full"), 1},
		{status.Error(codes.NotFound, "no table"), 15},
		{fmt.Errorf("wrapped: %w", status.Error(codes.InvalidArgument, "bad filter")), 13},
		{status.Error(codes.Unauthenticated, "no token"), 26},
		{status.Error(codes.Unavailable, "down"), 24},
	} {
		if got := ExitCode(tt.err); got != tt.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

func TestChangesFormat(t *testing.T) {
	for _, tt := range []struct {
		tty         bool
		format, out string
		want        string
	}{
		{true, "", "", "table"},
		{false, "", "", "jsonl"},
		{false, "", "x.parquet", "parquet"},
		{true, "", "x.ARROW", "arrow"},
		{true, "", "x.csv", "csv"},
		{true, "csv", "x.parquet", "csv"},
		{false, "parquet", "", "parquet"},
	} {
		a := &app{io: IO{StdoutTTY: tt.tty}}
		if got, err := a.changesFormat(tt.format, tt.out); err != nil || got != tt.want {
			t.Errorf("%+v: %q %v", tt, got, err)
		}
	}
}
