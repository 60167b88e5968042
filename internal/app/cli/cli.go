package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/lib/suggest"
	"github.com/sluicefeed/sluice/internal/lib/version"
)

// DefaultURI is the server address without --uri or SLUICE_URI.
const DefaultURI = "grpc://" + sluice.DefaultAddr

// IO is the process around a command: its output streams, whether each is
// a terminal, and its environment.
type IO struct {
	Stdout, Stderr io.Writer
	// StdoutTTY and StderrTTY say whether the streams are terminals: tables
	// and colors for a terminal on stdout, progress on stderr.
	StdoutTTY, StderrTTY bool
	// Getenv reads the environment (SLUICE_URI, SLUICE_TOKEN, SLUICE_TOKEN_FILE,
	// SLUICE_USER, SLUICE_PASSWORD, NO_COLOR); nil reads none.
	Getenv func(string) string
}

func (o IO) env(key string) string {
	if o.Getenv == nil {
		return ""
	}
	return o.Getenv(key)
}

// command is one subcommand.
type command struct {
	name, args, summary, help string
	// flags defines the command's own flags on fs and returns the function
	// that runs the command with the positional arguments.
	flags func(fs *flag.FlagSet) func(ctx context.Context, a *app, args []string) error
}

func commands() []command {
	return []command{
		tablesCommand(), snapshotsCommand(), statusCommand(), changesCommand(),
		tailCommand(), explainCommand(), consumersCommand(), ackCommand(), resetCommand(), compareCommand(),
		versionCommand(),
	}
}

// Main runs the sluice command with args (without the program name) and
// returns the process's exit status: 0, 1 for a local failure (a file that
// cannot be written), 2 for a usage error, and 10 plus the gRPC code for
// an error the server returned (see [ExitCode]).
func Main(ctx context.Context, args []string, o IO) int {
	// Everything written to stderr but the progress line has its control
	// characters escaped (see terminal.go).
	rawStderr := o.Stderr
	o.Stderr = terminalWriter{o.Stderr}
	if len(args) == 0 {
		usage(o.Stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help", "help":
		if len(args) > 1 && name == "help" {
			return Main(ctx, []string{args[1], "--help"}, o)
		}
		usage(o.Stdout)
		return 0
	case "-version", "--version":
		name = "version"
	}
	i := slices.IndexFunc(commands(), func(c command) bool { return c.name == name })
	if i < 0 {
		fmt.Fprintf(o.Stderr, "sluice: unknown command %q%s\n\n", name, commandHint(name))
		usage(o.Stderr)
		return exitUsage
	}
	cmd := commands()[i]
	a := &app{io: o, cmd: cmd.name, progressOut: rawStderr}
	fs := flag.NewFlagSet("sluice "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	run := cmd.flags(fs)
	own := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { own[f.Name] = true })
	a.g.register(fs, o)
	pos, err := parseInterspersed(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		commandUsage(o.Stdout, cmd, fs, own)
		return 0
	}
	if err != nil {
		err = suggest.FlagError(fs, args[1:], err, func(args []string) error {
			_, err := parseInterspersed(fs, args)
			return err
		})
		fmt.Fprintf(o.Stderr, "sluice %s: %v\nRun 'sluice %s --help' for its usage.\n", cmd.name, err, cmd.name)
		return exitUsage
	}
	a.uriFrom = "the default"
	if o.env("SLUICE_URI") != "" {
		a.uriFrom = "SLUICE_URI"
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "uri" {
			a.uriFrom = "--uri"
		}
	})
	defer a.close()
	if _, err := a.colored(); err != nil {
		return a.fail(err)
	}
	if err := run(ctx, a, pos); err != nil {
		return a.fail(err)
	}
	return 0
}

// commandHint is what follows `unknown command "name"`: the nearest
// commands, or that the command comes before the flags.
func commandHint(name string) string {
	if strings.HasPrefix(name, "-") {
		return ": the command comes first: sluice <command> [arguments] [flags]"
	}
	names := []string{"help"}
	for _, c := range commands() {
		names = append(names, c.name)
	}
	if near := suggest.Nearest(name, names, 3); len(near) > 0 {
		return fmt.Sprintf(" (did you mean %s?)", suggest.Or(near))
	}
	return ""
}

// parseInterspersed parses flags before, between and after the positional
// arguments (`sluice changes demo.orders --from 12`), which the flag
// package alone stops at; "--" ends the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// usageError is a mistake in the command line: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// globals are the flags every command takes.
type globals struct {
	uri, token, tokenFile  string
	user, password         string
	tlsCA, tlsCert, tlsKey string
	insecure               bool
	color                  string
	noColor                bool
}

func (g *globals) register(fs *flag.FlagSet, o IO) {
	fs.StringVar(&g.uri, "uri", orDefault(o.env("SLUICE_URI"), DefaultURI),
		"the server: grpc://host:port, grpc+tls://host:port, or replicas as grpc://a:8815,b:8815 (env SLUICE_URI)")
	fs.StringVar(&g.token, "token", o.env("SLUICE_TOKEN"),
		"a bearer token (env SLUICE_TOKEN, which keeps it out of the process list, as --token-file does)")
	fs.StringVar(&g.tokenFile, "token-file", o.env("SLUICE_TOKEN_FILE"),
		"read the bearer token from this `file`, surrounding whitespace ignored (env SLUICE_TOKEN_FILE)")
	fs.StringVar(&g.user, "user", o.env("SLUICE_USER"), "log in with this user and --password (the server's basic auth; env SLUICE_USER)")
	fs.StringVar(&g.password, "password", o.env("SLUICE_PASSWORD"), "the password of --user (env SLUICE_PASSWORD, which keeps it out of the process list)")
	fs.StringVar(&g.tlsCA, "tls-ca", "", "PEM `file` of the certificate authorities to trust (default: the system's)")
	fs.StringVar(&g.tlsCert, "tls-cert", "", "PEM `file` of a client certificate to present (with --tls-key)")
	fs.StringVar(&g.tlsKey, "tls-key", "", "PEM `file` of the client certificate's key")
	fs.BoolVar(&g.insecure, "insecure-skip-verify", false, "do not verify the server's certificate (testing only)")
	fs.StringVar(&g.color, "color", "auto", "color the output: auto (when stdout is a terminal and NO_COLOR is unset), always or never")
	fs.BoolVar(&g.noColor, "no-color", false, "no color (as --color never)")
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// app is one run of a command.
type app struct {
	io IO
	// progressOut is the stderr that io.Stderr escapes: the progress line
	// draws on it with a carriage return and an erase sequence.
	progressOut io.Writer
	g           globals
	cmd         string
	// uriFrom says where g.uri came from: "--uri", "SLUICE_URI" or "the
	// default".
	uriFrom string
	client  *sluice.Client
}

// dial connects to the server once.
func (a *app) dial(ctx context.Context) (*sluice.Client, error) {
	if a.client != nil {
		return a.client, nil
	}
	if strings.Contains(a.g.uri, "@") {
		return nil, usagef("--uri %s: sluice takes no credentials in the address: use --user with --password "+
			"(or SLUICE_PASSWORD), --token-file or SLUICE_TOKEN", redactURI(a.g.uri))
	}
	opts, err := a.g.options()
	if err != nil {
		return nil, err
	}
	c, err := sluice.Dial(ctx, a.g.uri, opts...)
	if err != nil {
		var se *sluice.Error
		if errors.As(err, &se) {
			return nil, err
		}
		return nil, usagef("--uri %s: %v", redactURI(a.g.uri), err)
	}
	a.client = c
	return c, nil
}

func (a *app) close() {
	if a.client != nil {
		a.client.Close()
	}
}

// options turns the global flags into client options, naming a bad
// combination before anything connects.
func (g *globals) options() ([]sluice.Option, error) {
	var opts []sluice.Option
	token, err := g.bearer()
	if err != nil {
		return nil, err
	}
	switch {
	case token != "" && g.user != "":
		return nil, usagef("--token and --user both given: use one (SLUICE_TOKEN, SLUICE_TOKEN_FILE and SLUICE_USER count too)")
	case token != "":
		opts = append(opts, sluice.WithToken(token))
	case g.user != "":
		if g.password == "" {
			return nil, usagef("--user %s needs --password (or SLUICE_PASSWORD)", g.user)
		}
		opts = append(opts, sluice.WithBasicAuth(g.user, g.password))
	case g.password != "":
		return nil, usagef("--password without --user")
	}
	if g.tlsCA == "" && g.tlsCert == "" && g.tlsKey == "" && !g.insecure {
		return opts, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: g.insecure} //nolint:gosec // asked for by --insecure-skip-verify
	if g.tlsCA != "" {
		pem, err := os.ReadFile(g.tlsCA)
		if err != nil {
			return nil, usagef("--tls-ca: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, usagef("--tls-ca %s: no PEM certificate in it", g.tlsCA)
		}
		cfg.RootCAs = pool
	}
	if (g.tlsCert == "") != (g.tlsKey == "") {
		return nil, usagef("--tls-cert and --tls-key go together")
	}
	if g.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(g.tlsCert, g.tlsKey)
		if err != nil {
			return nil, usagef("--tls-cert/--tls-key: %v", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return append(opts, sluice.WithTLSConfig(cfg)), nil
}

// bearer returns the bearer token of --token or --token-file, "" for
// none. Surrounding whitespace is trimmed (a token read raw from a file
// ends in a line feed); a token holding any other control character, or
// anything but printable ASCII, which a gRPC header cannot carry, is a
// usage error that does not print it.
func (g *globals) bearer() (string, error) {
	switch {
	case g.token != "" && g.tokenFile != "":
		return "", usagef("--token and --token-file both given: use one (SLUICE_TOKEN and SLUICE_TOKEN_FILE count too)")
	case g.tokenFile != "":
		b, err := os.ReadFile(g.tokenFile)
		if err != nil {
			return "", usagef("--token-file: %v", err)
		}
		tok := strings.TrimSpace(string(b))
		if tok == "" {
			return "", usagef("--token-file %s: no token in it", g.tokenFile)
		}
		return tok, checkToken("--token-file "+g.tokenFile, tok)
	case g.token != "":
		tok := strings.TrimSpace(g.token)
		if tok == "" {
			return "", usagef("--token (or SLUICE_TOKEN) is blank")
		}
		return tok, checkToken("--token (or SLUICE_TOKEN)", tok)
	}
	return "", nil
}

// checkToken refuses a token a gRPC header cannot carry, naming where it
// came from but not the token.
func checkToken(from, tok string) error {
	for _, r := range tok {
		switch {
		case isControl(r):
			return usagef("%s holds a control character: a token is one line of printable ASCII", from)
		case r < 0x20 || r > 0x7e:
			return usagef("%s holds a character that is not printable ASCII, which a gRPC header cannot carry", from)
		}
	}
	return nil
}

// redactURI is uri with the password of each address's user information
// replaced by xxxxx, as url.URL.Redacted writes it:
// "grpc://user:xxxxx@host:8815". A password holding a comma cannot be told
// from a list of addresses: do not put one in an address.
func redactURI(uri string) string {
	parts := strings.Split(uri, ",")
	for i, p := range parts {
		scheme, rest := "", p
		if k := strings.Index(p, "://"); k >= 0 {
			scheme, rest = p[:k+3], p[k+3:]
		}
		at := strings.LastIndexByte(rest, '@')
		if at < 0 {
			continue
		}
		if user, _, ok := strings.Cut(rest[:at], ":"); ok {
			parts[i] = scheme + user + ":xxxxx" + rest[at:]
		}
	}
	return strings.Join(parts, ",")
}

// colored says whether stdout gets ANSI colors.
func (a *app) colored() (bool, error) {
	if a.g.noColor {
		return false, nil
	}
	switch a.g.color {
	case "always":
		return true, nil
	case "never":
		return false, nil
	case "auto":
		return a.io.StdoutTTY && a.io.env("NO_COLOR") == "", nil
	}
	return false, usagef("--color %q: want auto, always or never", a.g.color)
}

func usage(w io.Writer) {
	fmt.Fprint(w, `sluice reads the change feeds of a Sluice server.

Usage:
  sluice <command> [arguments] [flags]

Commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, `
Global flags (every command; also from the environment):
  --uri URI            the server (default %s; env SLUICE_URI)
  --token TOKEN        a bearer token (env SLUICE_TOKEN); as a flag it shows in the process list
  --token-file FILE    read the bearer token from FILE (env SLUICE_TOKEN_FILE)
  --user U --password P  log in with the server's basic auth (env SLUICE_USER, SLUICE_PASSWORD)
  --tls-ca FILE        certificate authorities to trust, for grpc+tls:// servers
  --tls-cert FILE --tls-key FILE  a client certificate
  --insecure-skip-verify  do not verify the server's certificate (testing only)
  --color auto|always|never, --no-color  colors (auto: stdout is a terminal and NO_COLOR is unset)

Exit status: 0 on success, 1 for a local failure (a file that cannot be
written), 2 for a usage error, and 10 + the gRPC code for an error of the
server: 13 InvalidArgument, 15 NotFound, 17 PermissionDenied,
18 ResourceExhausted, 19 FailedPrecondition, 24 Unavailable, 26 Unauthenticated.

Run 'sluice <command> --help' for a command's flags.
`, DefaultURI)
}

func commandUsage(w io.Writer, c command, fs *flag.FlagSet, own map[string]bool) {
	fmt.Fprintf(w, "Usage: sluice %s %s\n\n%s\n", c.name, c.args, strings.TrimSpace(c.help))
	var lines []string
	fs.VisitAll(func(f *flag.Flag) {
		if !own[f.Name] || f.Name == "output" {
			return
		}
		name, text := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if len(f.Name) == 1 {
			line = "  -" + f.Name
		}
		if name != "" {
			line += " " + name
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			text += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		lines = append(lines, line+"\n    \t"+text)
	})
	if len(lines) > 0 {
		fmt.Fprintf(w, "\nFlags:\n%s\n", strings.Join(lines, "\n"))
	}
	fmt.Fprintln(w, "\nGlobal flags: --uri, --token, --token-file, --user/--password, --tls-ca, --tls-cert/--tls-key, --insecure-skip-verify, --color, --no-color (see sluice --help).")
}

func versionCommand() command {
	return command{name: "version", summary: "print the version", help: "Prints the version of this sluice binary.",
		flags: func(*flag.FlagSet) func(context.Context, *app, []string) error {
			return func(_ context.Context, a *app, args []string) error {
				if len(args) > 0 {
					return usagef("version takes no arguments")
				}
				_, err := fmt.Fprintln(a.io.Stdout, version.String("sluice"))
				return err
			}
		}}
}
