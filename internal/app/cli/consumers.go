package cli

import (
	"context"
	"flag"
	"io"
	"strconv"
	"time"

	sluice "github.com/sluicefeed/sluice/clients/go"
)

// writeConsumers prints consumers' progress as a table: the main branch's
// ref shows as "-".
func writeConsumers(out io.Writer, ps []sluice.ConsumerProgress) error {
	w := newTextTable(out, "CONSUMER", "REF", "SNAPSHOT", "COMMIT_SEQ", "LAG", "LAG_TIME", "ACKED", "OWNER", "FLAGS")
	for _, p := range ps {
		ref := p.Ref
		if ref == "" {
			ref = "-"
		}
		flags := ""
		switch {
		case p.Expired && p.Protected:
			flags = "expired,protected"
		case p.Expired:
			flags = "expired"
		case p.Protected:
			flags = "protected"
		}
		w.row(p.Consumer, ref, strconv.FormatInt(p.Snapshot, 10), strconv.FormatInt(p.CommitSeq, 10),
			strconv.FormatInt(p.LagCommits, 10), fmtLag(p.LagMs), fmtTime(p.AckedAtMs), p.Owner, flags)
	}
	return w.flush()
}

// fmtLag is a lag in milliseconds as a duration ("0s" when caught up).
func fmtLag(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).String()
}

func consumersCommand() command {
	return controlCommand(controlSpec{name: "consumers", args: "TABLE", table: true,
		summary: "list a table's durable consumers and their lag", help: `
Lists every durable consumer with progress on TABLE, on any branch or tag:
its id, the ref it follows ("-": the main branch), its acknowledged
snapshot and commit_seq, its lag in commits and in commit time on its ref,
when it acknowledged, its owner, and whether it is expired (its snapshot
left the history: reset it) or protected from expiry.`,
		flags: noFlags(func(ctx context.Context, c *sluice.Client, table string) (output, error) {
			ps, err := c.ListConsumers(ctx, table)
			if err != nil {
				return output{}, err
			}
			if ps == nil {
				ps = []sluice.ConsumerProgress{} // -o json prints [], not null
			}
			return output{JSON: ps, Text: func(w io.Writer) error { return writeConsumers(w, ps) }}, nil
		})})
}

// consumerFlags are the flags that name a durable consumer: its id and
// the ref it follows.
type consumerFlags struct{ consumer, ref *string }

func registerConsumer(fs *flag.FlagSet) consumerFlags {
	return consumerFlags{consumer: fs.String("consumer", "", "the durable consumer's `id` (required)"),
		ref: refFlag(fs, "the consumer follows")}
}

func (f consumerFlags) check() error {
	if *f.consumer == "" {
		return usagef("--consumer is required")
	}
	return nil
}

func ackCommand() command {
	return controlCommand(controlSpec{name: "ack", args: "TABLE --consumer ID --snapshot ID [flags]", table: true,
		summary: "acknowledge a durable consumer's snapshot", help: `
Records, durably, that the consumer has processed every change of TABLE up
to and including --snapshot, which must be on the lineage of the main
branch (or of --ref, the branch or tag the consumer follows). A stream
naming the consumer resumes right after it. --protect asks the server
(started with --protect-consumers) to keep the snapshot from the table's
expiry.`,
		flags: func(fs *flag.FlagSet) controlCall {
			cf := registerConsumer(fs)
			snapshot := fs.String("snapshot", "", "the processed snapshot's `id` (required)")
			protect := fs.Bool("protect", false, "keep the snapshot from the table's expiry until the next ack")
			var snap int64
			return controlCall{
				check: func(string) error {
					if err := cf.check(); err != nil {
						return err
					}
					n, err := strconv.ParseInt(*snapshot, 10, 64)
					if err != nil {
						return usagef("--snapshot %q: want a snapshot id", *snapshot)
					}
					snap = n
					return nil
				},
				call: func(ctx context.Context, c *sluice.Client, table string) (output, error) {
					opts := []sluice.AckOption{sluice.OnRef(*cf.ref)}
					if *protect {
						opts = append(opts, sluice.WithProtect())
					}
					p, err := c.Ack(ctx, *cf.consumer, table, snap, opts...)
					if err != nil {
						return output{}, err
					}
					return consumerOutput(p), nil
				},
			}
		}})
}

// consumerOutput is the output of one consumer's progress.
func consumerOutput(p sluice.ConsumerProgress) output {
	return output{JSON: p,
		Text: func(w io.Writer) error { return writeConsumers(w, []sluice.ConsumerProgress{p}) }}
}

func resetCommand() command {
	return controlCommand(controlSpec{name: "reset", args: "TABLE --consumer ID [flags]", table: true,
		summary: "forget a durable consumer's progress", help: `
Forgets the consumer's progress on TABLE (on --ref, the branch or tag it
follows; the consumers of the same id on other refs are left alone) and
drops its protection: its next stream starts by its start mode again.`,
		flags: func(fs *flag.FlagSet) controlCall {
			cf := registerConsumer(fs)
			return controlCall{
				check: func(string) error { return cf.check() },
				call: func(ctx context.Context, c *sluice.Client, table string) (output, error) {
					removed, err := c.ResetConsumer(ctx, *cf.consumer, table, sluice.OnRef(*cf.ref))
					if err != nil {
						return output{}, err
					}
					res := struct {
						Consumer string `json:"consumer"`
						Table    string `json:"table"`
						Ref      string `json:"ref,omitempty"`
						Removed  bool   `json:"removed"`
					}{*cf.consumer, table, *cf.ref, removed}
					return output{JSON: res, Text: func(w io.Writer) error {
						t := newTextTable(w, "CONSUMER", "REF", "REMOVED")
						ref := res.Ref
						if ref == "" {
							ref = "-"
						}
						t.row(res.Consumer, ref, strconv.FormatBool(removed))
						return t.flush()
					}}, nil
				},
			}
		}})
}
