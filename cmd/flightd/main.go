// Command flightd serves change feeds of lakehouse tables over Arrow Flight.
// Run it with --help for its flags and subcommands; README.md describes its
// configuration, docs/SECURITY.md its authentication.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sluicefeed/sluice/internal/daemon"
)

func main() {
	if err := run(context.Background()); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "flightd:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return daemon.Main(ctx, os.Args[1:], os.Environ(), os.Stdin, os.Stdout, os.Stderr)
}
