package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/test/bufconn"

	"github.com/sluicefeed/sluice/auth"
	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/app/console"
	"github.com/sluicefeed/sluice/server"
)

// httpServices are what flightd serves over HTTP: the metrics
// (--metrics-listen) and the web console (--http-listen), on one server
// when both name the same address.
type httpServices struct {
	cfg       Config
	metrics   *server.Metrics
	srv       *server.Server
	authn     *auth.Authenticator
	tlsConfig *tls.Config
	log       *slog.Logger
}

// httpSites are flightd's HTTP servers, each bound to its address: serve
// starts them. Every listener is bound before any is served, so that
// nothing says "serving" for a flightd that then fails to start.
type httpSites struct {
	sites []*site
	log   *slog.Logger
	// stops close what was started, in reverse order.
	stops []func()
	once  sync.Once
}

// site is one HTTP server: its address, the paths its mux serves, and its
// listener once bound.
type site struct {
	addr, flag string
	mux        *http.ServeMux
	// patterns are the mux's patterns, in the order they were registered.
	patterns []string
	tls      bool
	console  bool
	// hosts are the names the server answers.
	hosts *console.Hosts
	lis   net.Listener
}

func (s *site) handle(pattern string, h http.Handler) {
	s.mux.Handle(pattern, h)
	s.patterns = append(s.patterns, pattern)
}

// bindHTTP builds the HTTP servers and binds their addresses; nothing is
// served until serve. The metrics address serves /metrics, /healthz and,
// with --pprof, /debug/pprof/; the console's address serves the console
// under /. On an address that serves both, the profiles need the console's
// credentials (when authentication is on), /metrics and /healthz do not.
// Every path of every server answers only the hosts of console.Hosts.
func (h httpServices) bindHTTP() (*httpSites, error) {
	hs := &httpSites{log: h.log}
	siteOf := func(addr, flag string) *site {
		for _, s := range hs.sites {
			if s.addr == addr {
				return s
			}
		}
		s := &site{addr: addr, flag: flag, mux: http.NewServeMux(),
			hosts: console.NewHosts(addr, h.cfg.HTTP.AllowedHosts)}
		hs.sites = append(hs.sites, s)
		return s
	}
	var c *console.Console
	if h.cfg.HTTPListen != "" {
		var closeConsole func()
		var err error
		c, closeConsole, err = h.console()
		if err != nil {
			return nil, err
		}
		hs.stops = append(hs.stops, closeConsole)
	}
	if h.cfg.MetricsListen != "" {
		s := siteOf(h.cfg.MetricsListen, "--metrics-listen")
		s.handle("/metrics", h.metrics.Handler())
		s.handle("/healthz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte("ok\n"))
		}))
		if h.cfg.Pprof {
			profiles := pprofHandler()
			if h.cfg.MetricsListen == h.cfg.HTTPListen {
				// The console's callers may read the profiles (the
				// command line among them); nobody else.
				profiles = c.Authenticated(profiles)
			}
			s.handle("/debug/pprof/", profiles)
		}
	}
	if c != nil {
		s := siteOf(h.cfg.HTTPListen, "--http-listen")
		s.handle("/", c)
		s.tls = h.tlsConfig != nil
		s.console = true
	}
	for _, s := range hs.sites {
		lis, err := net.Listen("tcp", s.addr)
		if err != nil {
			hs.stop()
			return nil, fmt.Errorf("%s %s: %w", s.flag, s.addr, listenError(err))
		}
		hs.stops = append(hs.stops, func() { _ = lis.Close() })
		if s.tls {
			lis = tls.NewListener(lis, h.tlsConfig.Clone())
		}
		s.lis = lis
	}
	return hs, nil
}

// pprofHandler serves Go's runtime profiles under /debug/pprof/.
func pprofHandler() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("/debug/pprof/", pprof.Index)
	m.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	m.HandleFunc("/debug/pprof/profile", pprof.Profile)
	m.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	m.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return m
}

// serve serves every bound server, logs each address, and returns the
// console's URL ("" when it is off).
func (hs *httpSites) serve() (consoleURL string) {
	for _, s := range hs.sites {
		// No write timeout: the console's live streams last as long as the
		// page is open.
		srv := &http.Server{Handler: s.hosts.Guard(s.mux, hs.log), ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout: 2 * time.Minute, ErrorLog: slog.NewLogLogger(hs.log.Handler(), slog.LevelWarn)}
		lis, addr := s.lis, s.addr
		go func() {
			if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
				hs.log.Error("http server", "address", addr, "error", err)
			}
		}()
		hs.stops = append(hs.stops, func() { _ = srv.Close() })
		bound := lis.Addr().String()
		if slices.Contains(s.patterns, "/metrics") {
			hs.log.Info("serving metrics", "address", bound)
		}
		if s.console {
			scheme := "http"
			if s.tls {
				scheme = "https"
			}
			consoleURL = scheme + "://" + bound + "/"
			hs.log.Info("serving console", "address", bound, "url", consoleURL)
		}
	}
	return consoleURL
}

// stop closes the servers (ending the console's live streams), their
// listeners, and the console's connection to the service.
func (hs *httpSites) stop() {
	hs.once.Do(func() {
		for i := len(hs.stops) - 1; i >= 0; i-- {
			hs.stops[i]()
		}
	})
}

// console returns the web console and what closes its connection to the
// service: a second gRPC server over the same service (the same
// interceptors: authentication, grants, limits, logs, metrics) on an
// in-memory listener, so that its calls never leave the process.
func (h httpServices) console() (*console.Console, func(), error) {
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer(h.srv.ServerOptions()...)
	h.srv.Register(gs)
	go func() { _ = gs.Serve(lis) }()
	dial := func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }
	// The address is never dialled: the dialer connects to the listener.
	client, err := sluice.Dial(context.Background(), "grpc://127.0.0.1:1", sluice.WithDialOptions(
		grpc.WithContextDialer(dial)))
	if err != nil {
		gs.Stop()
		return nil, nil, fmt.Errorf("console: %w", err)
	}
	authn := h.authn
	if authOff(h.cfg.Auth.Mode) {
		authn = nil // every caller is anonymous, as on the gRPC side
	}
	c := console.New(console.Options{Client: client, Authenticator: authn, Logger: h.log,
		LoginsPerSecond: loginRate(h.cfg.Limits.CallsPerSecond), SecureCookie: h.tlsConfig != nil,
		Hosts: console.NewHosts(h.cfg.HTTPListen, h.cfg.HTTP.AllowedHosts)})
	return c, func() {
		_ = client.Close()
		gs.Stop()
	}, nil
}

// loginRate is the console's basic-login rate per client address: the
// service's call rate (the Handshake's limit per address), or none.
func loginRate(callsPerSecond float64) float64 {
	if callsPerSecond <= 0 {
		return -1
	}
	return callsPerSecond
}

// authOff reports whether an auth mode is off (the default).
func authOff(mode string) bool {
	m := strings.ToLower(strings.TrimSpace(mode))
	return m == "" || m == auth.ModeOff
}
