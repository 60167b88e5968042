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

// controlSpec is a control command: one call whose result prints as a
// table for people or as JSON (-o json). controlCommand runs every such
// command the same way: the arguments checked, -o checked, the client
// dialed, the call made, its result written.
type controlSpec struct {
	name, args, summary, help string
	// table says the command names one table, its only argument; without
	// it the command takes none.
	table bool
	// flags defines the command's own flags on fs and returns its call.
	flags func(fs *flag.FlagSet) controlCall
}

// controlCall is what a control command does with its table ("" for a
// command that names none): check the flags, before anything is dialed
// (nil: nothing to check), then make the call.
type controlCall struct {
	check func(table string) error
	call  func(ctx context.Context, c *sluice.Client, table string) (output, error)
}

// output is a control command's result: JSON is written as indented JSON
// with -o json, Text writes the table otherwise.
type output struct {
	JSON any
	Text func(w io.Writer) error
}

// controlCommand is the command of a controlSpec.
func controlCommand(spec controlSpec) command {
	return command{name: spec.name, args: spec.args, summary: spec.summary, help: spec.help,
		flags: func(fs *flag.FlagSet) func(context.Context, *app, []string) error {
			out := outputFlag(fs)
			call := spec.flags(fs)
			return func(ctx context.Context, a *app, args []string) error {
				var table string
				if spec.table {
					t, err := oneTable(args)
					if err != nil {
						return err
					}
					table = t
				} else if len(args) > 0 {
					return usagef("%s takes no arguments", spec.name)
				}
				if err := checkOutput(*out); err != nil {
					return err
				}
				if call.check != nil {
					if err := call.check(table); err != nil {
						return err
					}
				}
				c, err := a.dial(ctx)
				if err != nil {
					return err
				}
				res, err := call.call(ctx, c, table)
				if err != nil {
					return err
				}
				if *out == "json" {
					return writeJSON(a.io.Stdout, res.JSON)
				}
				return res.Text(a.io.Stdout)
			}
		}}
}

// noFlags is the flags of a control command that has none of its own and
// nothing to check.
func noFlags(call func(ctx context.Context, c *sluice.Client, table string) (output, error)) func(*flag.FlagSet) controlCall {
	return func(*flag.FlagSet) controlCall { return controlCall{call: call} }
}

// refFlag is --ref: the branch or tag a command reads, or whose consumer
// it names.
func refFlag(fs *flag.FlagSet, what string) *string {
	return fs.String("ref", "", "the branch or tag `name` "+what+" (default: the main branch)")
}

func tablesCommand() command {
	return controlCommand(controlSpec{name: "tables", summary: "list the tables you may read", help: `
Lists the tables the server serves and you may read: name, format, format
version, current snapshot and commit_seq.`,
		flags: noFlags(func(ctx context.Context, c *sluice.Client, _ string) (output, error) {
			ts, err := c.ListTables(ctx)
			if err != nil {
				return output{}, err
			}
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
			return output{JSON: rows, Text: func(w io.Writer) error { return writeTables(w, ts) }}, nil
		})})
}

func snapshotsCommand() command {
	return controlCommand(controlSpec{name: "snapshots", args: "TABLE", table: true,
		summary: "list a table's snapshots, oldest first", help: `
Lists the lineage of the table's main branch (or, with --ref, of that
branch or tag), oldest first: snapshot id, commit_seq, commit time,
operation and the rows it added and deleted (from its summary). A snapshot
id is what --from and --to of 'sluice changes' take.`,
		flags: func(fs *flag.FlagSet) controlCall {
			ref := refFlag(fs, "whose lineage to list")
			return controlCall{call: func(ctx context.Context, c *sluice.Client, table string) (output, error) {
				snaps, err := c.SnapshotsOn(ctx, table, *ref)
				if err != nil {
					return output{}, err
				}
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
					rows = append(rows, row{s.ID, s.Parent, s.SequenceNumber, s.CommitSeq, s.TimestampMs, s.Operation,
						s.Summary, s.SchemaID})
				}
				return output{JSON: rows, Text: func(w io.Writer) error { return writeSnapshots(w, snaps) }}, nil
			}}
		}})
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
	return controlCommand(controlSpec{name: "status", summary: "the commit_seq of every table", help: `
Shows where every table you may read stands: its commit_seq (which grows
with every commit), its current snapshot and that snapshot's commit time.`,
		flags: noFlags(func(ctx context.Context, c *sluice.Client, _ string) (output, error) {
			ts, err := c.ListTables(ctx)
			if err != nil {
				return output{}, err
			}
			rows := make([]statusRow, 0, len(ts))
			for _, t := range ts {
				seq, err := c.CommitSeq(ctx, t.Name)
				if err != nil {
					return output{}, err
				}
				rows = append(rows, statusRow{t.Name, seq.CommitSeq, seq.Snapshot, seq.TimestampMs})
			}
			return output{JSON: rows, Text: func(w io.Writer) error { return writeStatus(w, rows) }}, nil
		})})
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
	return controlCommand(controlSpec{name: "explain", args: "TABLE [flags]", table: true,
		summary: "how the server would read a window, without reading it", help: `
Plans the window as 'sluice changes' would read it, without reading data:
per snapshot its strategy and the files it reads, with counts and bytes.
Takes the request flags of 'sluice changes'.`,
		flags: func(fs *flag.FlagSet) controlCall {
			var rf requestFlags
			rf.register(fs)
			files := fs.Bool("files", false, "list each file a snapshot reads")
			var req sluice.ChangeRequest
			return controlCall{
				check: func(table string) (err error) {
					req, err = rf.request(table)
					return err
				},
				call: func(ctx context.Context, c *sluice.Client, _ string) (output, error) {
					p, err := c.Explain(ctx, req)
					if err != nil {
						return output{}, err
					}
					return output{JSON: planJSON(p), Text: func(w io.Writer) error { return writePlan(w, p, *files) }}, nil
				},
			}
		}})
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
