// Command flightd serves change feeds of lakehouse tables over Arrow Flight.
// Run it with --help for its flags and subcommands, and with --version for
// its version; README.md describes its configuration, docs/SECURITY.md its
// authentication.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sluicefeed/sluice/internal/app/daemon"
	"github.com/sluicefeed/sluice/internal/lib/version"
)

func main() {
	if err := run(context.Background()); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "flightd:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	if len(os.Args) == 2 && (os.Args[1] == "--version" || os.Args[1] == "-version") {
		_, err := fmt.Println(version.String("flightd"))
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return daemon.Main(ctx, os.Args[1:], os.Environ(), os.Stdin, os.Stdout, os.Stderr)
}
