package cli

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"

	sluice "github.com/sluicefeed/sluice/clients/go"
)

// Exit statuses other than the server's.
const (
	exitLocal = 1
	exitUsage = 2
	// exitServer plus the gRPC code is the status of a server's error.
	exitServer = 10
)

// ExitCode returns the exit status of a command that failed with err: 2 for
// a usage error, 10 plus the gRPC code for an error with a gRPC status (15
// for NotFound, 13 for InvalidArgument, ...), 1 for anything else.
func ExitCode(err error) int {
	var ue usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	if c := sluice.Code(err); c != codes.Unknown && c != codes.OK {
		return exitServer + int(c)
	}
	return exitLocal
}

// fail prints err on stderr, with its gRPC code when it has one, and
// returns the exit status.
func (a *app) fail(err error) int {
	var se *sluice.Error
	switch {
	case errors.As(err, &se):
		fmt.Fprintf(a.io.Stderr, "sluice %s: %s: %s\n", a.cmd, se.Code, se.Message)
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(a.io.Stderr, "sluice %s: interrupted\n", a.cmd)
	default:
		fmt.Fprintf(a.io.Stderr, "sluice %s: %v\n", a.cmd, err)
	}
	if _, ok := err.(usageError); ok {
		fmt.Fprintf(a.io.Stderr, "Run 'sluice %s --help' for its usage.\n", a.cmd)
	}
	if sluice.Code(err) == codes.Unavailable {
		// Most often no server listens there (connection refused).
		fmt.Fprintf(a.io.Stderr, "sluice: the server at %s (%s) is unavailable: is flightd running there? "+
			"--uri or SLUICE_URI names another.\n", redactURI(a.g.uri), a.uriFrom)
	}
	return ExitCode(err)
}
