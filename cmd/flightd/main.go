// Command flightd serves change feeds of lakehouse tables over Arrow Flight.
// Run it with --help for its flags; README.md describes its configuration.
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
	cfg, err := daemon.LoadConfig(os.Args[1:], os.Environ(), os.Stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return daemon.Run(ctx, cfg, os.Stdout)
}
