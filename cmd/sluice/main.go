// Command sluice reads the change feeds of a Sluice server from the
// terminal: its tables and snapshots, a window's changes as a table, JSON
// lines, CSV, Parquet or Arrow, and a live tail of a table. Run
// `sluice --help` for its commands and flags.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/mattn/go-isatty"

	"github.com/sluicefeed/sluice/internal/app/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.IO{
		Stdout:    os.Stdout,
		Stderr:    os.Stderr,
		StdoutTTY: isatty.IsTerminal(os.Stdout.Fd()),
		StderrTTY: isatty.IsTerminal(os.Stderr.Fd()),
		Getenv:    os.Getenv,
	})
	stop()
	os.Exit(code)
}
