package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestTablePlain(t *testing.T) {
	mem := checkedMem(t)
	rec := record(t, mem, changeSchema(), historyRows...)
	defer rec.Release()
	var out bytes.Buffer
	tw := &tableWriter{w: &out}
	if err := tw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"OP             SNAPSHOT             TS                      ID  NAME        AMOUNT",
		"insert         7036874417766400001  2026-11-30T08:00:00Z    1   ann         10.5",
		"update_before  7036874417766400002  2026-11-30T09:00:00Z    1   ann         10.5",
		"update_after   7036874417766400002  2026-11-30T09:00:00Z    1   ann         12",
		"update         7036874417766400002  2026-11-30T09:00:00Z    2   bo → Bo Ek  1",
		"delete         7036874417766400003  2026-11-30T10:00:00.5Z  3   null        3",
		""}, "\n")
	if out.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestTableHighlightsChangedCells(t *testing.T) {
	mem := checkedMem(t)
	rec := record(t, mem, changeSchema(), historyRows...)
	defer rec.Release()
	var out bytes.Buffer
	tw := &tableWriter{w: &out, p: painter{on: true}}
	if err := tw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	// update_after: only amount (10.5 → 12) is highlighted.
	if !strings.Contains(lines[3], ansiNew+"12"+ansiReset) || strings.Contains(lines[3], ansiNew+"ann") {
		t.Errorf("update_after line %q", lines[3])
	}
	// The folded update: the name cell shows old → new, highlighted.
	if !strings.Contains(lines[4], ansiNew+"bo → Bo Ek"+ansiReset) {
		t.Errorf("update line %q", lines[4])
	}
	// Alignment does not count the escapes.
	if stripANSI(lines[1])[:15] != "insert         " {
		t.Errorf("insert line %q", stripANSI(lines[1]))
	}
}
