package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	sluice "github.com/sluicefeed/sluice/clients/go"
)

// outputFlag is -o of the control commands: a table for people, JSON for
// scripts.
func outputFlag(fs *flag.FlagSet) *string {
	o := fs.String("o", "table", "the `output`: table or json (also --output)")
	fs.StringVar(o, "output", "table", "the output: table or json (as -o)")
	return o
}

func checkOutput(o string) error {
	if o != "table" && o != "json" {
		return usagef("-o %q: want table or json", o)
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// textTable prints aligned columns for a person: the tables of tables,
// snapshots, status and explain. Commands print their rows through it and
// never to a tabwriter of their own.
type textTable struct{ w *tabwriter.Writer }

func newTextTable(w io.Writer, header ...string) *textTable {
	t := &textTable{w: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	if len(header) > 0 {
		t.row(header...)
	}
	return t
}

// row prints one line of cells, each through termValue: a cell that holds
// a control character (a tab among them) is quoted, as tail quotes it.
func (t *textTable) row(cells ...string) {
	for i, c := range cells {
		cells[i] = termValue(c)
	}
	fmt.Fprintln(t.w, strings.Join(cells, "\t"))
}

// flush aligns and prints the rows.
func (t *textTable) flush() error { return t.w.Flush() }

func fmtTime(ms int64) string {
	if ms == 0 {
		return "-"
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000Z")
}

func fmtID(p *int64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatInt(*p, 10)
}

func tablesCommand() command {
	return command{name: "tables", summary: "list the tables you may read", help: `
Lists the tables the server serves and you may read: name, format, format
version, current snapshot and commit_seq.`,
		flags: func(fs *flag.FlagSet) func(context.Context, *app, []string) error {
			out := outputFlag(fs)
			return func(ctx context.Context, a *app, args []string) error {
				if len(args) > 0 {
					return usagef("tables takes no arguments")
				}
				if err := checkOutput(*out); err != nil {
					return err
				}
				c, err := a.dial(ctx)
				if err != nil {
					return err
				}
				ts, err := c.ListTables(ctx)
				if err != nil {
					return err
				}
				if *out == "json" {
					type row struct {
						Name            string `json:"name"`
						Format          string `json:"format"`
						FormatVersion   int    `json:"format_version"`
						CurrentSnapshot *int64 `json:"current_snapshot"`
						CommitSeq       int64  `json:"commit_seq"`
					}
					rows := make([]row, 0, len(ts))
					for _, t := range ts {
						rows = append(rows, row{t.Name, t.Format, t.FormatVersion, t.CurrentSnapshot, t.CommitSeq})
					}
					return writeJSON(a.io.Stdout, rows)
				}
				return writeTables(a.io.Stdout, ts)
			}
		}}
}

func snapshotsCommand() command {
	return command{name: "snapshots", args: "TABLE", summary: "list a table's snapshots, oldest first", help: `
Lists the lineage of the table's main branch, oldest first: snapshot id,
commit_seq, commit time, operation and the rows it added and deleted (from
its summary). A snapshot id is what --from and --to of 'sluice changes' take.`,
		flags: func(fs *flag.FlagSet) func(context.Context, *app, []string) error {
			out := outputFlag(fs)
			return func(ctx context.Context, a *app, args []string) error {
				table, err := oneTable(args)
				if err != nil {
					return err
				}
				if err := checkOutput(*out); err != nil {
					return err
				}
				c, err := a.dial(ctx)
				if err != nil {
					return err
				}
				snaps, err := c.Snapshots(ctx, table)
				if err != nil {
					return err
				}
				if *out == "json" {
					type row struct {
						Snapshot       int64             `json:"snapshot"`
						Parent         *int64            `json:"parent"`
						SequenceNumber int64             `json:"sequence_number"`
						CommitSeq      int64             `json:"commit_seq"`
						TimestampMs    int64             `json:"timestamp_ms"`
						Operation      string            `json:"operation"`
						Summary        map[string]string `json:"summary"`
						SchemaID       int               `json:"schema_id"`
					}
					rows := make([]row, 0, len(snaps))
					for _, s := range snaps {
						rows = append(rows, row{s.ID, s.Parent, s.SequenceNumber, s.CommitSeq, s.TimestampMs, s.Operation, s.Summary, s.SchemaID})
					}
					return writeJSON(a.io.Stdout, rows)
				}
				return writeSnapshots(a.io.Stdout, snaps)
			}
		}}
}

// summaryRows is the ROWS of a snapshot, from its summary (an Iceberg
// snapshot's, or the one the server writes for a Delta version; see
// docs/PROTOCOL.md): "+added" (added-records), "-deleted" (deleted-records
// plus added-position-deletes, deletion vectors included) and "-N keys"
// (added-equality-deletes: each names a key, which may match no row or
// several). "?" is a count the summary leaves out for files it added or
// removed (a Delta writer that wrote no statistics); "" when the summary
// says nothing of rows.
func summaryRows(s map[string]string) string {
	count := func(key string) (int64, bool) {
		n, err := strconv.ParseInt(s[key], 10, 64)
		return n, err == nil
	}
	var parts []string
	if n, ok := count("added-records"); ok {
		parts = append(parts, "+"+strconv.FormatInt(n, 10))
	} else if n, ok := count("added-data-files"); ok && n > 0 {
		parts = append(parts, "+?")
	}
	deleted, rows := count("deleted-records")
	if files, ok := count("deleted-data-files"); ok && files > 0 && !rows {
		parts = append(parts, "-?")
	} else {
		pos, ok := count("added-position-deletes")
		if rows || ok {
			parts = append(parts, "-"+strconv.FormatInt(deleted+pos, 10))
		}
	}
	if n, ok := count("added-equality-deletes"); ok && n > 0 {
		parts = append(parts, "-"+strconv.FormatInt(n, 10)+" keys")
	}
	return strings.Join(parts, " ")
}

func statusCommand() command {
	return command{name: "status", summary: "the commit_seq of every table", help: `
Shows where every table you may read stands: its commit_seq (which grows
with every commit), its current snapshot and that snapshot's commit time.`,
		flags: func(fs *flag.FlagSet) func(context.Context, *app, []string) error {
			out := outputFlag(fs)
			return func(ctx context.Context, a *app, args []string) error {
				if len(args) > 0 {
					return usagef("status takes no arguments")
				}
				if err := checkOutput(*out); err != nil {
					return err
				}
				c, err := a.dial(ctx)
				if err != nil {
					return err
				}
				ts, err := c.ListTables(ctx)
				if err != nil {
					return err
				}
				rows := make([]statusRow, 0, len(ts))
				for _, t := range ts {
					seq, err := c.CommitSeq(ctx, t.Name)
					if err != nil {
						return err
					}
					rows = append(rows, statusRow{t.Name, seq.CommitSeq, seq.Snapshot, seq.TimestampMs})
				}
				if *out == "json" {
					return writeJSON(a.io.Stdout, rows)
				}
				return writeStatus(a.io.Stdout, rows)
			}
		}}
}

// writeTables prints the tables as a table.
func writeTables(out io.Writer, ts []sluice.TableInfo) error {
	w := newTextTable(out, "TABLE", "FORMAT", "SNAPSHOT", "COMMIT_SEQ")
	for _, t := range ts {
		w.row(t.Name, fmt.Sprintf("%s v%d", t.Format, t.FormatVersion), fmtID(t.CurrentSnapshot), strconv.FormatInt(t.CommitSeq, 10))
	}
	return w.flush()
}

// writeSnapshots prints a lineage as a table.
func writeSnapshots(out io.Writer, snaps []sluice.Snapshot) error {
	w := newTextTable(out, "SNAPSHOT", "COMMIT_SEQ", "COMMITTED", "OPERATION", "ROWS")
	for _, s := range snaps {
		w.row(strconv.FormatInt(s.ID, 10), strconv.FormatInt(s.CommitSeq, 10), fmtTime(s.TimestampMs), s.Operation, summaryRows(s.Summary))
	}
	return w.flush()
}

// statusRow is one table's line of `sluice status`.
type statusRow struct {
	Table       string `json:"table"`
	CommitSeq   int64  `json:"commit_seq"`
	Snapshot    *int64 `json:"snapshot"`
	TimestampMs int64  `json:"timestamp_ms"`
}

// writeStatus prints where the tables stand as a table.
func writeStatus(out io.Writer, rows []statusRow) error {
	w := newTextTable(out, "TABLE", "COMMIT_SEQ", "SNAPSHOT", "COMMITTED")
	for _, r := range rows {
		w.row(r.Table, strconv.FormatInt(r.CommitSeq, 10), fmtID(r.Snapshot), fmtTime(r.TimestampMs))
	}
	return w.flush()
}

func explainCommand() command {
	return command{name: "explain", args: "TABLE [flags]", summary: "how the server would read a window, without reading it", help: `
Plans the window as 'sluice changes' would read it, without reading data:
per snapshot its strategy and the files it reads, with counts and bytes.
Takes the request flags of 'sluice changes'.`,
		flags: func(fs *flag.FlagSet) func(context.Context, *app, []string) error {
			var rf requestFlags
			rf.register(fs)
			out := outputFlag(fs)
			files := fs.Bool("files", false, "list each file a snapshot reads")
			return func(ctx context.Context, a *app, args []string) error {
				table, err := oneTable(args)
				if err != nil {
					return err
				}
				if err := checkOutput(*out); err != nil {
					return err
				}
				req, err := rf.request(table)
				if err != nil {
					return err
				}
				c, err := a.dial(ctx)
				if err != nil {
					return err
				}
				p, err := c.Explain(ctx, req)
				if err != nil {
					return err
				}
				if *out == "json" {
					return writeJSON(a.io.Stdout, planJSON(p))
				}
				return writePlan(a.io.Stdout, p, *files)
			}
		}}
}

func writePlan(out io.Writer, p *sluice.Plan, files bool) error {
	fmt.Fprintf(out, "table %s, window (%s, %s]\n", termValue(p.Table), fmtID(p.FromSnapshot), fmtID(p.ToSnapshot))
	fmt.Fprintf(out, "columns %s", termList(p.Columns))
	if len(p.Identity) > 0 {
		fmt.Fprintf(out, "; identity %s", termList(p.Identity))
	}
	fmt.Fprintf(out, "\n%d snapshots; %d files read (%s, %d records), %d skipped\n\n",
		len(p.Snapshots), p.FilesRead, fmtBytes(p.BytesRead), p.RecordsRead, p.FilesSkipped)
	w := newTextTable(out, "SNAPSHOT", "COMMIT_SEQ", "COMMITTED", "OPERATION", "STRATEGY", "FILES", "SKIPPED", "BYTES", "RECORDS")
	for _, s := range p.Snapshots {
		w.row(strconv.FormatInt(s.Snapshot, 10), strconv.FormatInt(s.CommitSeq, 10), fmtTime(s.TimestampMs),
			s.Operation, s.Strategy, strconv.Itoa(len(s.Files)), strconv.FormatInt(s.FilesSkipped, 10),
			fmtBytes(s.BytesRead), strconv.FormatInt(s.RecordsRead, 10))
	}
	if err := w.flush(); err != nil || !files {
		return err
	}
	for _, s := range p.Snapshots {
		if len(s.Files) == 0 {
			continue
		}
		fmt.Fprintf(out, "\nsnapshot %d:\n", s.Snapshot)
		w := newTextTable(out)
		for _, f := range s.Files {
			w.row("", f.Role, f.Content, fmt.Sprintf("%d records", f.RecordCount), fmtBytes(f.FileSizeBytes), f.Path)
		}
		if err := w.flush(); err != nil {
			return err
		}
	}
	return nil
}

// termList joins names with ", ", each through termValue.
func termList(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = termValue(n)
	}
	return strings.Join(out, ", ")
}

// planJSON is the plan with the names of the explain action's JSON
// (docs/PROTOCOL.md), as far as the typed plan carries them.
func planJSON(p *sluice.Plan) any {
	type file struct {
		Path          string `json:"path"`
		Content       string `json:"content"`
		Role          string `json:"role"`
		RecordCount   int64  `json:"record_count"`
		FileSizeBytes int64  `json:"file_size_bytes"`
	}
	type snapshot struct {
		Snapshot       int64  `json:"snapshot"`
		SequenceNumber int64  `json:"sequence_number"`
		CommitSeq      int64  `json:"commit_seq"`
		TimestampMs    int64  `json:"timestamp_ms"`
		Operation      string `json:"operation"`
		Strategy       string `json:"strategy"`
		Files          []file `json:"files"`
		FilesSkipped   int64  `json:"files_skipped"`
		BytesRead      int64  `json:"bytes_read"`
		RecordsRead    int64  `json:"records_read"`
	}
	type plan struct {
		Table        string     `json:"table"`
		FromSnapshot *int64     `json:"from_snapshot"`
		ToSnapshot   *int64     `json:"to_snapshot"`
		Columns      []string   `json:"columns"`
		Identity     []string   `json:"identity"`
		Snapshots    []snapshot `json:"snapshots"`
		FilesRead    int64      `json:"files_read"`
		FilesSkipped int64      `json:"files_skipped"`
		BytesRead    int64      `json:"bytes_read"`
		RecordsRead  int64      `json:"records_read"`
	}
	out := plan{Table: p.Table, FromSnapshot: p.FromSnapshot, ToSnapshot: p.ToSnapshot, Columns: p.Columns,
		Identity: p.Identity, FilesRead: p.FilesRead, FilesSkipped: p.FilesSkipped, BytesRead: p.BytesRead,
		RecordsRead: p.RecordsRead, Snapshots: []snapshot{}}
	for _, s := range p.Snapshots {
		js := snapshot{Snapshot: s.Snapshot, SequenceNumber: s.SequenceNumber, CommitSeq: s.CommitSeq,
			TimestampMs: s.TimestampMs, Operation: s.Operation, Strategy: s.Strategy, FilesSkipped: s.FilesSkipped,
			BytesRead: s.BytesRead, RecordsRead: s.RecordsRead, Files: []file{}}
		for _, f := range s.Files {
			js.Files = append(js.Files, file{f.Path, f.Content, f.Role, f.RecordCount, f.FileSizeBytes})
		}
		out.Snapshots = append(out.Snapshots, js)
	}
	return out
}

// fmtBytes is a byte count in B, KB, MB or GB (powers of 1000).
func fmtBytes(n int64) string {
	units := []string{"B", "KB", "MB", "GB", "TB"}
	f := float64(n)
	i := 0
	for f >= 1000 && i < len(units)-1 {
		f /= 1000
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f %s", f, units[i])
}
