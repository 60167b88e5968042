package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"

	sluice "github.com/sluicefeed/sluice/clients/go"
)

var startModes = []string{sluice.StartLatest, sluice.StartLatestFull, sluice.StartFromSnapshot,
	sluice.StartFromSnapshotFull, sluice.StartFromTimestamp}

func tailCommand() command {
	return command{name: "tail", args: "TABLE [flags]", summary: "follow a table live, each change as a colored diff", help: `
Follows TABLE and prints each change as it lands, one line per change
under a line per snapshot:

  @ snapshot 3055729675574597004  2026-11-30T08:40:00Z  commit_seq 5
  + insert  order_id=1009 customer="Freja Holm" country=DK amount=230
  - delete  order_id=1002 customer="Jonas Berg" country=NO amount=42
  ~ update  order_id=1006 customer="Oskar Dahl" status=placed→shipped

An update's before- and after-image are zipped into one line, its changed
cells shown old→new and highlighted. Colors when stdout is a terminal,
unless NO_COLOR is set or --no-color is given. -o jsonl prints JSON lines
instead. It follows until interrupted (Ctrl-C), across server restarts.

--start says where a stream starts: latest (the default: only what
commits from now on), latest-full (the current rows as inserts first),
from-snapshot / from-snapshot-full / from-timestamp (with --from).
With --consumer ID it resumes after the consumer's last acknowledged
snapshot, and --ack acknowledges each snapshot once it is printed.
--ref follows a branch instead of the main branch; a consumer's progress
is kept per ref.`,
		flags: func(fs *flag.FlagSet) func(context.Context, *app, []string) error {
			start := fs.String("start", "", "where to start: "+fmt.Sprint(startModes)+" (default latest; from-snapshot with --from)")
			from := fs.String("from", "", "start after this snapshot `id` or at this commit time (2026-11-30T08:00:00Z)")
			consumer := fs.String("consumer", "", "a durable consumer `id`: resume after its last ack (on --ref)")
			ref := refFlag(fs, "to follow, and whose consumer --consumer names")
			ack := fs.Bool("ack", false, "acknowledge each snapshot for --consumer once it is printed")
			var columns, identity listFlag
			fs.Var(&columns, "columns", "the data `columns` to show, comma-separated (default: all)")
			fs.Var(&identity, "identity", "identity `columns`, comma-separated, to pair updates")
			filter := fs.String("filter", "", "a SQL boolean `expression` over data columns")
			format := fs.String("o", "diff", "the `format`: diff or jsonl")
			noFollow := fs.Bool("no-follow", false, "stop once caught up with the snapshot current at the start")
			var layout string
			layoutFlag(fs, &layout)
			return func(ctx context.Context, a *app, args []string) error {
				table, err := oneTable(args)
				if err != nil {
					return err
				}
				req := sluice.SubscribeRequest{Table: table, Consumer: *consumer, Start: *start, Columns: columns,
					Identity: identity, Filter: *filter, NoFollow: *noFollow, Reconnect: true, Ref: *ref}
				if req.Layout, err = layoutValue(layout); err != nil {
					return err
				}
				if *ack && *consumer == "" {
					return usagef("--ack needs --consumer")
				}
				if *format != "diff" && *format != "jsonl" {
					return usagef("-o %q: want diff or jsonl", *format)
				}
				pt, err := parsePoint("from", *from)
				if err != nil {
					return err
				}
				req.FromSnapshot, req.FromTimestampMs = pt.snapshot, pt.tsMs
				switch {
				case req.Start == "" && pt.snapshot != nil:
					req.Start = sluice.StartFromSnapshot
				case req.Start == "" && pt.tsMs != nil:
					req.Start = sluice.StartFromTimestamp
				case req.Start == "":
					req.Start = sluice.StartLatest
				}
				on, err := a.colored()
				if err != nil {
					return err
				}
				c, err := a.dial(ctx)
				if err != nil {
					return err
				}
				err = a.tail(ctx, c, req, *format, painter{on: on && *format == "diff"}, *ack)
				if errors.Is(err, context.Canceled) && ctx.Err() != nil {
					return nil // interrupted: the way a tail ends
				}
				return err
			}
		}}
}

func (a *app) tail(ctx context.Context, c *sluice.Client, req sluice.SubscribeRequest, format string, p painter, ack bool) error {
	sub, err := c.Subscribe(ctx, req)
	if err != nil {
		return err
	}
	defer sub.Release()
	if a.io.StderrTTY {
		fmt.Fprintf(a.io.Stderr, "following %s (Ctrl-C to stop)\n", req.Table)
	}
	dw := &diffWriter{w: a.io.Stdout, p: p}
	var jw *jsonlWriter
	if format == "jsonl" {
		jw = newJSONLWriter(a.io.Stdout)
	}
	for b, err := range sub.All() {
		if err != nil {
			// What was read goes out before the error: an update_before
			// whose update_after never came, or buffered JSON lines.
			if jw != nil {
				return errors.Join(err, jw.Close())
			}
			return errors.Join(err, dw.flush())
		}
		if jw != nil {
			if err := jw.Write(b.Record); err != nil {
				return err
			}
			if err := jw.Close(); err != nil {
				return err
			}
		} else if err := dw.write(decode(b.Record), b.Meta); err != nil {
			return err
		}
		if ack && b.Meta.SnapshotComplete && !b.Meta.Heartbeat {
			// An update_before waits for its update_after, within the
			// snapshot: print it before the checkpoint.
			if err := dw.flush(); err != nil {
				return err
			}
			if _, err := sub.Ack(ctx); err != nil {
				return err
			}
		}
	}
	if err := sub.Err(); err != nil {
		return err
	}
	if jw != nil {
		return jw.Close()
	}
	return dw.flush()
}
