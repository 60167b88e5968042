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

func tabs(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

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
				w := tabs(a.io.Stdout)
				fmt.Fprintln(w, "TABLE\tFORMAT\tSNAPSHOT\tCOMMIT_SEQ")
				for _, t := range ts {
					fmt.Fprintf(w, "%s\t%s v%d\t%s\t%d\n", t.Name, t.Format, t.FormatVersion, fmtID(t.CurrentSnapshot), t.CommitSeq)
				}
				return w.Flush()
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
				w := tabs(a.io.Stdout)
				fmt.Fprintln(w, "SNAPSHOT\tCOMMIT_SEQ\tCOMMITTED\tOPERATION\tROWS")
				for _, s := range snaps {
					fmt.Fprintf(w, "%d\t%d\t%s\t%s\t%s\n", s.ID, s.CommitSeq, fmtTime(s.TimestampMs), s.Operation, summaryRows(s.Summary))
				}
				return w.Flush()
			}
		}}
}

// summaryRows is "+added -deleted" from an Iceberg snapshot summary (or
// the Delta equivalents the server reports), "" when it has neither.
func summaryRows(s map[string]string) string {
	var parts []string
	if v, ok := s["added-records"]; ok {
		parts = append(parts, "+"+v)
	}
	if v, ok := s["deleted-records"]; ok {
		parts = append(parts, "-"+v)
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
				type row struct {
					Table       string `json:"table"`
					CommitSeq   int64  `json:"commit_seq"`
					Snapshot    *int64 `json:"snapshot"`
					TimestampMs int64  `json:"timestamp_ms"`
				}
				rows := make([]row, 0, len(ts))
				for _, t := range ts {
					seq, err := c.CommitSeq(ctx, t.Name)
					if err != nil {
						return err
					}
					rows = append(rows, row{t.Name, seq.CommitSeq, seq.Snapshot, seq.TimestampMs})
				}
				if *out == "json" {
					return writeJSON(a.io.Stdout, rows)
				}
				w := tabs(a.io.Stdout)
				fmt.Fprintln(w, "TABLE\tCOMMIT_SEQ\tSNAPSHOT\tCOMMITTED")
				for _, r := range rows {
					fmt.Fprintf(w, "%s\t%d\t%s\t%s\n", r.Table, r.CommitSeq, fmtID(r.Snapshot), fmtTime(r.TimestampMs))
				}
				return w.Flush()
			}
		}}
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
	fmt.Fprintf(out, "table %s, window (%s, %s]\n", p.Table, fmtID(p.FromSnapshot), fmtID(p.ToSnapshot))
	fmt.Fprintf(out, "columns %s", strings.Join(p.Columns, ", "))
	if len(p.Identity) > 0 {
		fmt.Fprintf(out, "; identity %s", strings.Join(p.Identity, ", "))
	}
	fmt.Fprintf(out, "\n%d snapshots; %d files read (%s, %d records), %d skipped\n\n",
		len(p.Snapshots), p.FilesRead, fmtBytes(p.BytesRead), p.RecordsRead, p.FilesSkipped)
	w := tabs(out)
	fmt.Fprintln(w, "SNAPSHOT\tCOMMIT_SEQ\tCOMMITTED\tOPERATION\tSTRATEGY\tFILES\tSKIPPED\tBYTES\tRECORDS")
	for _, s := range p.Snapshots {
		fmt.Fprintf(w, "%d\t%d\t%s\t%s\t%s\t%d\t%d\t%s\t%d\n", s.Snapshot, s.CommitSeq, fmtTime(s.TimestampMs),
			s.Operation, s.Strategy, len(s.Files), s.FilesSkipped, fmtBytes(s.BytesRead), s.RecordsRead)
	}
	if err := w.Flush(); err != nil || !files {
		return err
	}
	for _, s := range p.Snapshots {
		if len(s.Files) == 0 {
			continue
		}
		fmt.Fprintf(out, "\nsnapshot %d:\n", s.Snapshot)
		w := tabs(out)
		for _, f := range s.Files {
			fmt.Fprintf(w, "  %s\t%s\t%d records\t%s\t%s\n", f.Role, f.Content, f.RecordCount, fmtBytes(f.FileSizeBytes), f.Path)
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	return nil
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
