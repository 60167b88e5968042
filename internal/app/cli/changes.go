package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/memory"

	sluice "github.com/sluicefeed/sluice/clients/go"
)

func changesCommand() command {
	return command{name: "changes", args: "TABLE [flags]", summary: "read a window's changes as a table, JSON lines, CSV, Parquet or Arrow", help: `
Reads the changes of the window (--from, --to] of TABLE and writes them to
stdout or to --out FILE. The formats (-o):

  table    aligned columns for a terminal: op, snapshot, ts, then the row's
           image (the after-image of an insert or update_after, the
           before-image of a delete or update_before); an update's changed
           cells highlighted (the default when stdout is a terminal)
  jsonl    one JSON object per change (the default otherwise)
  csv      a header, then one line per change; before and after flattened
           into before.<column> and after.<column>
  parquet  one Parquet file (zstd), the change rows as they stream
  arrow    one Arrow IPC file (Feather v2)

With --out the format defaults to the file's extension, the file appears
only when the whole window was read (it is written to a temporary file and
renamed), and a read that fails midway exits non-zero and leaves no file.
A progress line (rows and bytes per second) goes to stderr when stderr is
a terminal and stdout is not, or with --progress.`,
		flags: func(fs *flag.FlagSet) func(context.Context, *app, []string) error {
			var rf requestFlags
			rf.register(fs)
			format := fs.String("o", "", "the `format`: table, jsonl, csv, parquet or arrow (see above; also --output)")
			fs.StringVar(format, "output", "", "the `format` (as -o)")
			out := fs.String("out", "", "write to this `file` instead of stdout")
			prog := fs.Bool("progress", false, "show progress on stderr even when it is not a terminal")
			noProg := fs.Bool("no-progress", false, "never show progress")
			return func(ctx context.Context, a *app, args []string) error {
				table, err := oneTable(args)
				if err != nil {
					return err
				}
				req, err := rf.request(table)
				if err != nil {
					return err
				}
				f, err := a.changesFormat(*format, *out)
				if err != nil {
					return err
				}
				on, err := a.colored()
				if err != nil {
					return err
				}
				// Progress for a person watching stderr while the output
				// goes elsewhere; never in the middle of a table on the
				// same terminal.
				show := !*noProg && (*prog || (a.io.StderrTTY && (*out != "" || !a.io.StdoutTTY)))
				c, err := a.dial(ctx)
				if err != nil {
					return err
				}
				return a.readChanges(ctx, c, req, f, *out, painter{on: on && *out == "" && f == "table"}, show)
			}
		}}
}

// changesFormat picks the output format of `sluice changes`.
func (a *app) changesFormat(format, out string) (string, error) {
	switch {
	case format != "":
	case out != "":
		if format = formatOfPath(out); format == "" {
			return "", usagef("--out %s: name the format with -o (%v); the extension does not tell", out, formats)
		}
	case a.io.StdoutTTY:
		format = "table"
	default:
		format = "jsonl"
	}
	if !slices.Contains(formats, format) {
		return "", usagef("-o %q: want one of %s", format, strings.Join(formats, ", "))
	}
	if out == "" && a.io.StdoutTTY && binaryFormat(format) {
		return "", usagef("-o %s to a terminal: write it to a file with --out FILE, or redirect stdout", format)
	}
	return format, nil
}

// readChanges streams the window into the format's writer.
func (a *app) readChanges(ctx context.Context, c *sluice.Client, req sluice.ChangeRequest, format, out string, p painter, show bool) error {
	rdr, err := c.Changes(ctx, req)
	if err != nil {
		return err
	}
	defer rdr.Release()
	write := func(w io.Writer) (err error) {
		pr := startProgress(a.progressOut, show, out != "")
		defer func() { pr.stop(err == nil, out) }()
		cw := &countingWriter{w: w, n: &pr.bytes}
		rw, err := newRecordWriter(format, cw, rdr.Schema(), memory.DefaultAllocator, p)
		if err != nil {
			return err
		}
		for b, err := range rdr.All() {
			if err != nil {
				// The rows read so far go out (a text format only: a
				// Parquet or Arrow file without its footer is unreadable,
				// never mistaken for whole); the exit status says the
				// feed is not.
				if f, ok := rw.(interface{ Flush() error }); ok && out == "" {
					return errors.Join(err, f.Flush())
				}
				return err
			}
			if err := rw.Write(b.Record); err != nil {
				return fmt.Errorf("writing %s: %w", format, err)
			}
			pr.rows.Add(b.Record.NumRows())
			pr.snapshot.Store(b.Meta.Snapshot)
		}
		if err := rw.Close(); err != nil {
			return fmt.Errorf("writing %s: %w", format, err)
		}
		return nil
	}
	if out == "" {
		return write(a.io.Stdout)
	}
	return writeFileAtomically(out, write)
}

// writeFileAtomically writes path through a temporary file in its folder,
// renamed over path only when write succeeds: a failed read never leaves
// a short file that looks whole.
func writeFileAtomically(path string, write func(io.Writer) error) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			_ = os.Remove(tmp.Name()) // the error above is the one to report
		}
	}()
	if err := write(tmp); err != nil {
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return errors.Join(err, os.Remove(tmp.Name()))
	}
	return nil
}
