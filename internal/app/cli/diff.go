package cli

import (
	"fmt"
	"io"
	"strings"

	sluice "github.com/sluicefeed/sluice/clients/go"
)

// diffWriter prints changes as a compact diff, one line per change:
//
//	@ snapshot 3055729675574597004  2026-11-30T08:40:00Z  commit_seq 5
//	+ insert  order_id=1009 customer="Freja Holm" country=DK amount=230
//	- delete  order_id=1002 customer="Jonas Berg" country=NO amount=42
//	~ update  order_id=1006 customer="Oskar Dahl" status=placed→shipped
//
// An update_before and its update_after (and a folded update) are zipped
// into one line: every cell once, a changed one as old→new, highlighted
// in color.
type diffWriter struct {
	w io.Writer
	p painter
	// last is the snapshot of the last header printed.
	last string
	// pending is an update_before waiting for its update_after, which may
	// come in the next batch.
	pending *change
	columns []string
}

// header prints the snapshot's header line when the snapshot changes.
func (d *diffWriter) header(m sluice.BatchMeta, snapshot, ts string) error {
	if snapshot == d.last {
		return nil
	}
	d.last = snapshot
	h := "@ snapshot " + termValue(snapshot)
	if ts != "" {
		h += "  " + termValue(ts)
	}
	if m.CommitSeq > 0 {
		h += fmt.Sprintf("  commit_seq %d", m.CommitSeq)
	}
	if m.FullState {
		h += "  (full state)"
	}
	_, err := fmt.Fprintln(d.w, d.p.paint(ansiCyan, h))
	return err
}

// write prints a batch's changes.
func (d *diffWriter) write(b decoded, m sluice.BatchMeta) error {
	for _, c := range b.rows {
		d.columns = b.columns
		if c.op == sluice.OpUpdateBefore {
			if err := d.flush(); err != nil {
				return err
			}
			c := c
			d.pending = &c
			continue
		}
		if err := d.header(m, c.snapshot, c.ts); err != nil {
			return err
		}
		var line string
		switch {
		case c.op == sluice.OpUpdateAfter && d.pending != nil:
			line = d.update(d.pending.before, c.after)
			d.pending = nil
		case c.op == sluice.OpUpdate:
			line = d.update(c.before, c.after)
		default:
			if err := d.flush(); err != nil {
				return err
			}
			line = d.single(c)
		}
		if _, err := fmt.Fprintln(d.w, line); err != nil {
			return err
		}
	}
	return nil
}

// flush prints an update_before that no update_after followed.
func (d *diffWriter) flush() error {
	if d.pending == nil {
		return nil
	}
	c := *d.pending
	d.pending = nil
	if err := d.header(sluice.BatchMeta{}, c.snapshot, c.ts); err != nil {
		return err
	}
	_, err := fmt.Fprintln(d.w, d.single(c))
	return err
}

// single is the line of an insert, a delete or an unpaired image.
func (d *diffWriter) single(c change) string {
	label := c.op
	if label == sluice.OpInsert || label == sluice.OpDelete {
		label += " "
	}
	var b strings.Builder
	b.WriteString(d.p.paint(opStyle(c.op), opMark(c.op)+" "+termValue(label)))
	for j, v := range c.image() {
		b.WriteString(" ")
		b.WriteString(d.p.paint(ansiDim, d.name(j)+"="))
		b.WriteString(d.value(v))
	}
	return b.String()
}

// update is the zipped line of an update: each cell once, a changed one
// as old→new.
func (d *diffWriter) update(before, after []cell) string {
	var b strings.Builder
	b.WriteString(d.p.paint(ansiYellow, "~ update "))
	for j := range max(len(before), len(after)) {
		var o, n cell
		if j < len(before) {
			o = before[j]
		}
		if j < len(after) {
			n = after[j]
		}
		b.WriteString(" ")
		b.WriteString(d.p.paint(ansiDim, d.name(j)+"="))
		if o.equal(n) {
			b.WriteString(d.value(n))
			continue
		}
		b.WriteString(d.p.paint(ansiOld, quote(o)))
		b.WriteString("→")
		b.WriteString(d.p.paint(ansiNew, quote(n)))
	}
	return b.String()
}

func (d *diffWriter) name(j int) string {
	if j < len(d.columns) {
		return termValue(d.columns[j])
	}
	return fmt.Sprintf("col%d", j)
}

func (d *diffWriter) value(c cell) string {
	if c.null {
		return d.p.paint(ansiDim, c.text)
	}
	return quote(c)
}
