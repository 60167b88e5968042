package daemon

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/sluicefeed/sluice/auth"
)

// The subcommands of flightd that prepare its authentication files. Each
// reads its secret from standard input, never from the command line (where
// it would end up in the shell's history and in the process list), and
// prints the line to put in the file.
const (
	// CmdNewToken prints a new random bearer token (auth.NewToken).
	CmdNewToken = "new-token"
	// CmdHashToken reads a bearer token from standard input and prints its
	// hash for the tokens file (auth.HashToken).
	CmdHashToken = "hash-token"
	// CmdHashPassword reads a password from standard input and prints its
	// bcrypt hash for the users file (auth.HashPassword).
	CmdHashPassword = "hash-password"
)

// minTokenLen is the shortest token hash-token accepts: tokens are stored
// with a fast hash, so a short one could be guessed from a leaked tokens
// file.
const minTokenLen = 16

// maxSecretLine bounds what the subcommands read from standard input.
const maxSecretLine = 4096

// usage is printed before the flags by --help.
const usage = `Usage:
  flightd [flags]                         serve (flags below)
  flightd new-token                       print a new random bearer token
  flightd hash-token [--principal NAME]   read a token on stdin, print its tokens-file entry
  flightd hash-password [--user NAME]     read a password on stdin, print its users-file entry
  flightd --version                       print the version

Flags:
`

// Main runs flightd with its command-line arguments (without the program
// name): one of the subcommands, or else the server, configured by
// LoadConfig from args and environ, until ctx is done. The subcommands read
// stdin and write stdout; the server writes its notices to stdout and its
// logs and flag errors to stderr.
func Main(ctx context.Context, args, environ []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case CmdNewToken:
			return newToken(args[1:], stdout, stderr)
		case CmdHashToken:
			return hashToken(args[1:], stdin, stdout, stderr)
		case CmdHashPassword:
			return hashPassword(args[1:], stdin, stdout, stderr)
		}
	}
	cfg, err := LoadConfig(args, environ, stderr)
	if err != nil {
		return err
	}
	return Run(ctx, cfg, stdout)
}

func newToken(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("flightd "+CmdNewToken, flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := parseToolFlags(fs, args); err != nil {
		return err
	}
	tok, err := auth.NewToken()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, tok)
	return err
}

func hashToken(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("flightd "+CmdHashToken, flag.ContinueOnError)
	fs.SetOutput(stderr)
	principal := fs.String("principal", "", "print a tokens-file entry for this principal (default: the hash alone)")
	if err := parseToolFlags(fs, args); err != nil {
		return err
	}
	tok, err := readSecret(stdin, CmdHashToken, "token")
	if err != nil {
		return err
	}
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; c <= ' ' || c >= 0x7f {
			return fmt.Errorf("%s: the token contains a space, a control character or a non-ASCII byte, "+
				"which an authorization header cannot carry", CmdHashToken)
		}
	}
	if len(tok) < minTokenLen {
		return fmt.Errorf("%s: a token of %d bytes is too easy to guess: use at least %d (flightd %s makes one)",
			CmdHashToken, len(tok), minTokenLen, CmdNewToken)
	}
	hash := auth.HashToken(tok)
	if *principal == "" {
		_, err = fmt.Fprintln(stdout, hash)
		return err
	}
	_, err = fmt.Fprintf(stdout, "  - principal: %s\n    sha256: %s\n", strconv.Quote(*principal), hash)
	return err
}

func hashPassword(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("flightd "+CmdHashPassword, flag.ContinueOnError)
	fs.SetOutput(stderr)
	user := fs.String("user", "", "print a users-file entry for this user (default: the hash alone)")
	if err := parseToolFlags(fs, args); err != nil {
		return err
	}
	password, err := readSecret(stdin, CmdHashPassword, "password")
	if err != nil {
		return err
	}
	hash, err := auth.HashPassword(password)
	if err != nil {
		return fmt.Errorf("%s: %v", CmdHashPassword, err)
	}
	if *user == "" {
		_, err = fmt.Fprintln(stdout, hash)
		return err
	}
	_, err = fmt.Fprintf(stdout, "  - name: %s\n    bcrypt: %s\n", strconv.Quote(*user), strconv.Quote(hash))
	return err
}

func parseToolFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected arguments %q (a secret is read from standard input)",
			strings.TrimPrefix(fs.Name(), "flightd "), fs.Args())
	}
	return nil
}

// readSecret reads one line from r: the secret, without its line break.
func readSecret(r io.Reader, cmd, what string) (string, error) {
	br := bufio.NewReaderSize(io.LimitReader(r, maxSecretLine+1), maxSecretLine+1)
	line, err := br.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("%s: read the %s from standard input: %w", cmd, what, err)
	}
	if len(line) > maxSecretLine {
		return "", fmt.Errorf("%s: the %s is longer than %d bytes", cmd, what, maxSecretLine)
	}
	secret := strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	if rest, _ := io.ReadAll(br); strings.TrimSpace(string(rest)) != "" {
		return "", fmt.Errorf("%s: standard input holds more than one line: give the %s alone", cmd, what)
	}
	if secret == "" {
		return "", fmt.Errorf("%s: no %s on standard input (one line)", cmd, what)
	}
	return secret, nil
}
