package console

import (
	"context"
	"embed"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/sluicefeed/sluice/auth"
	sluice "github.com/sluicefeed/sluice/clients/go"
)

// Defaults of Options.
const (
	// DefaultMaxRows is the most change rows one change view shows.
	DefaultMaxRows = 1000
	// HardMaxRows is the most a change view may ask for (its limit
	// parameter).
	HardMaxRows = 10000
	// DefaultTimelineSnapshots is the most snapshots a timeline shows: the
	// newest.
	DefaultTimelineSnapshots = 200
	// DefaultLoginsPerSecond is each client address's rate of basic
	// logins, with bursts of twice as many.
	DefaultLoginsPerSecond = 5
)

//go:embed assets
var assets embed.FS

// Options configures a Console.
type Options struct {
	// Client is the console's connection to the Flight service. Every call
	// carries the console caller's bearer token (none while authentication
	// is off), so the service authenticates it, applies its grants and
	// limits, and logs it as any other call. Required.
	Client *sluice.Client
	// Authenticator checks the callers' credentials, as the service does.
	// Nil: authentication is off, every caller is anonymous.
	Authenticator *auth.Authenticator
	// Logger receives refused requests and failed calls. Default:
	// slog.Default().
	Logger *slog.Logger
	// MaxRows is the most change rows one change view shows; the page says
	// when the window holds more. Default DefaultMaxRows.
	MaxRows int
	// TimelineSnapshots is the most snapshots a timeline shows, the
	// newest. Default DefaultTimelineSnapshots.
	TimelineSnapshots int
	// LoginsPerSecond bounds the basic logins per client address (a
	// password check each), with bursts of twice as many. Default
	// DefaultLoginsPerSecond; negative: no limit.
	LoginsPerSecond float64
	// SecureCookie marks the session cookie Secure (HTTPS only): set it
	// when the console is served over TLS, or behind a TLS-terminating
	// proxy.
	SecureCookie bool
	// Hosts are the names the console answers (Host) and the origins
	// whose pages it serves (Origin), against DNS rebinding; refused
	// requests get 421 or 403 before authentication. Default: the
	// loopback names only (NewHosts("127.0.0.1:0", nil)).
	Hosts *Hosts
}

// Console is the web console's HTTP handler.
type Console struct {
	opts   Options
	mux    *http.ServeMux
	logins *rateLimiter
}

// New returns the console over opts.Client.
func New(opts Options) *Console {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxRows <= 0 {
		opts.MaxRows = DefaultMaxRows
	}
	if opts.TimelineSnapshots <= 0 {
		opts.TimelineSnapshots = DefaultTimelineSnapshots
	}
	if opts.LoginsPerSecond == 0 {
		opts.LoginsPerSecond = DefaultLoginsPerSecond
	}
	if opts.Hosts == nil {
		opts.Hosts = NewHosts("127.0.0.1:0", nil)
	}
	c := &Console{opts: opts, mux: http.NewServeMux(), logins: newRateLimiter(opts.LoginsPerSecond)}
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded folder is part of the binary
	}
	files := http.FileServerFS(static)
	c.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		http.ServeFileFS(w, r, static, "index.html")
	})
	c.mux.Handle("GET /assets/", http.StripPrefix("/assets/", files))
	c.mux.HandleFunc("GET /api/session", c.session)
	c.mux.HandleFunc("GET /api/tables", c.tables)
	c.mux.HandleFunc("GET /api/snapshots", c.snapshots)
	c.mux.HandleFunc("GET /api/changes", c.changes)
	c.mux.HandleFunc("GET /api/live", c.live)
	return c
}

// ServeHTTP checks the request's Host and Origin (Options.Hosts),
// authenticates it, then serves it: nothing, not even an asset, reaches a
// caller without valid credentials while authentication is on.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if ctx, ok := c.admit(w, r); ok {
		c.mux.ServeHTTP(w, r.WithContext(ctx))
	}
}

// admit sets the console's security headers, checks the request's Host
// and Origin, then authenticates it: false when it has been answered.
func (c *Console) admit(w http.ResponseWriter, r *http.Request) (context.Context, bool) {
	c.secure(w)
	if !c.opts.Hosts.Admit(w, r, c.opts.Logger) {
		return nil, false
	}
	return c.authenticate(w, r)
}

// Authenticated returns next behind the console's checks: its Host and
// Origin, then its credentials (a session cookie, a bearer token or the
// basic login; 401 with a basic challenge without them). With
// authentication off every caller of an admitted host is served. flightd
// puts its profiles behind it where they share the console's address.
func (c *Console) Authenticated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, ok := c.admit(w, r)
		if !ok {
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// secure sets the headers of every answer: the page loads only its own
// files, is never framed, and sends no referrer.
func (c *Console) secure(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; "+
		"form-action 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
}

// now is the clock of the login rate limit.
var now = time.Now
