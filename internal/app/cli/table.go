package cli

import (
	"io"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"

	sluice "github.com/sluicefeed/sluice/clients/go"
)

// tableBlock is how many rows the table output aligns at once: the widths
// of a block's columns are known before it prints, and later blocks widen
// them when they must.
const tableBlock = 1000

// tableWriter prints changes as aligned columns for a terminal: op,
// snapshot, commit time, then each data column holding the row's image
// (the after-image of an insert or update_after, the before-image of a
// delete or update_before; "old → new" in a folded update's changed
// cells). An update_after's changed cells are highlighted in color.
type tableWriter struct {
	w       io.Writer
	p       painter
	columns []string
	widths  []int
	rows    [][]styled
	header  bool
	// prev is the image of the last update_before, to highlight the cells
	// its update_after changes.
	prev []cell
}

// styled is a cell's text, made safe for a terminal (termValue), and the
// style it is painted with.
type styled struct {
	text, style string
}

func (t *tableWriter) Write(rec arrow.RecordBatch) error {
	d := decode(rec)
	if t.columns == nil {
		t.columns = append([]string{"op", "snapshot", "ts"}, d.columns...)
	}
	for _, c := range d.rows {
		row := []styled{{termValue(c.label), opStyle(c.op)}, {termValue(c.snapshot), ""}, {termValue(c.ts), ""}}
		img := c.image()
		for j, v := range img {
			s := styled{text: termValue(v.text)}
			if v.null {
				s.style = ansiDim
			}
			switch {
			case c.op == sluice.OpUpdate && j < len(c.before) && !c.before[j].equal(v):
				s = styled{termValue(c.before[j].text) + " → " + s.text, ansiNew}
			case c.op == sluice.OpUpdateAfter && j < len(t.prev) && !t.prev[j].equal(v):
				s.style = ansiNew
			}
			row = append(row, s)
		}
		if c.op == sluice.OpUpdateBefore {
			t.prev = img
		} else {
			t.prev = nil
		}
		t.rows = append(t.rows, row)
	}
	if len(t.rows) >= tableBlock {
		return t.flush()
	}
	return nil
}

func (t *tableWriter) flush() error {
	if t.columns == nil {
		return nil
	}
	if len(t.widths) < len(t.columns) {
		t.widths = make([]int, len(t.columns))
		for j, c := range t.columns {
			t.widths[j] = utf8.RuneCountInString(c)
		}
	}
	for _, r := range t.rows {
		for j, s := range r {
			if j < len(t.widths) {
				t.widths[j] = max(t.widths[j], utf8.RuneCountInString(s.text))
			}
		}
	}
	var b strings.Builder
	if !t.header {
		t.header = true
		hdr := make([]styled, len(t.columns))
		for j, c := range t.columns {
			hdr[j] = styled{termValue(strings.ToUpper(c)), ansiBold}
		}
		t.line(&b, hdr)
	}
	for _, r := range t.rows {
		t.line(&b, r)
	}
	t.rows = t.rows[:0]
	_, err := io.WriteString(t.w, b.String())
	return err
}

func (t *tableWriter) line(b *strings.Builder, r []styled) {
	for j, s := range r {
		if j > 0 {
			b.WriteString("  ")
		}
		b.WriteString(t.p.paint(s.style, s.text))
		if j < len(r)-1 && j < len(t.widths) {
			b.WriteString(strings.Repeat(" ", max(0, t.widths[j]-utf8.RuneCountInString(s.text))))
		}
	}
	b.WriteString("\n")
}

func (t *tableWriter) Close() error { return t.flush() }

// Flush prints the rows written so far.
func (t *tableWriter) Flush() error { return t.flush() }
