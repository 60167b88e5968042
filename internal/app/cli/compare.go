package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	sluice "github.com/sluicefeed/sluice/clients/go"
)

// errBackendsDiffer is the error of a compare whose two reads differ.
var errBackendsDiffer = errors.New("the backends differ")

func compareCommand() command {
	return command{name: "compare", args: "TABLE [flags]", summary: "read a window through Spark and natively, and print the differences", help: `
Reads the window (--from, --to] of TABLE twice, through its Spark Connect
server ("backend": "spark") and with Sluice's own engine ("backend":
"native"), and prints each side's verdict and time, then every change row
that one side has and the other does not (- through Spark only, + natively
only), in the order they came. It exits 0 when the two reads are the same
rows in the same order, 1 when they differ. TABLE must be configured for a
Spark Connect server (flightd's spark:). Takes the request flags of
'sluice changes'.`,
		flags: func(fs *flag.FlagSet) func(context.Context, *app, []string) error {
			var rf requestFlags
			rf.register(fs)
			return func(ctx context.Context, a *app, args []string) error {
				table, err := oneTable(args)
				if err != nil {
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
				var sides [2][]string
				for i, backend := range []string{"spark", "native"} {
					r := req
					r.Backend = backend
					p, err := c.Explain(ctx, r)
					if err != nil {
						return fmt.Errorf("%s: %w", backend, err)
					}
					began := time.Now()
					if sides[i], err = changeLines(ctx, c, r); err != nil {
						return fmt.Errorf("%s: %w", backend, err)
					}
					engine := backend
					if p.Backend != nil {
						engine = p.Backend.Chosen
					}
					fmt.Fprintf(a.io.Stdout, "%-6s %-22s %d rows in %s\n", backend, engine, len(sides[i]),
						time.Since(began).Round(time.Millisecond))
				}
				n := writeDifferences(a.io.Stdout, sides[0], sides[1])
				if n > 0 {
					return fmt.Errorf("%w: %d rows of %s differ", errBackendsDiffer, n, table)
				}
				fmt.Fprintln(a.io.Stdout, "same rows, same order")
				return nil
			}
		}}
}

// changeLines reads a window and renders each change row as a JSON line.
func changeLines(ctx context.Context, c *sluice.Client, req sluice.ChangeRequest) ([]string, error) {
	rdr, err := c.Changes(ctx, req)
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	var buf bytes.Buffer
	rw, err := newRecordWriter("jsonl", &buf, rdr.Schema(), memory.DefaultAllocator, painter{})
	if err != nil {
		return nil, err
	}
	for b, err := range rdr.All() {
		if err != nil {
			return nil, err
		}
		if err := rw.Write(b.Record); err != nil {
			return nil, err
		}
	}
	if err := rw.Close(); err != nil {
		return nil, err
	}
	if buf.Len() == 0 {
		return nil, nil
	}
	return strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n"), nil
}

// maxDiffCells bounds the table of a line diff: beyond it, the rows are
// compared as multisets (writeCounts).
const maxDiffCells = 1 << 22

// writeDifferences prints the rows that differ between a (through Spark)
// and b (natively) as a line diff: a longest common subsequence keeps the
// rows both have in the same order, every other row is printed with - (a
// only) or + (b only). It returns how many rows differ.
func writeDifferences(w io.Writer, a, b []string) int {
	if (len(a)+1)*(len(b)+1) > maxDiffCells {
		return writeCounts(w, a, b)
	}
	// lcs[i][j] is the length of the longest common subsequence of a[i:]
	// and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	n := 0
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			i, j = i+1, j+1
		case j == len(b) || i < len(a) && lcs[i+1][j] >= lcs[i][j+1]:
			fmt.Fprintln(w, "- "+termValue(a[i]))
			i, n = i+1, n+1
		default:
			fmt.Fprintln(w, "+ "+termValue(b[j]))
			j, n = j+1, n+1
		}
	}
	return n
}

// writeCounts prints the rows that one side has more often than the other
// (order aside), and returns how many rows differ, or, when the sides have
// the same rows, how many stand in another order.
func writeCounts(w io.Writer, a, b []string) int {
	count := map[string]int{}
	for _, r := range a {
		count[r]++
	}
	for _, r := range b {
		count[r]--
	}
	n := 0
	for _, r := range append(append([]string(nil), a...), b...) {
		k := count[r]
		switch {
		case k > 0:
			fmt.Fprintln(w, "- "+termValue(r))
			count[r]--
			n++
		case k < 0:
			fmt.Fprintln(w, "+ "+termValue(r))
			count[r]++
			n++
		}
	}
	if n > 0 {
		return n
	}
	for i := range a {
		if a[i] != b[i] {
			n++
		}
	}
	if n > 0 {
		fmt.Fprintf(w, "the same rows, %d of them in another order\n", n)
	}
	return n
}
