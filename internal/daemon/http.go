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
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/test/bufconn"

	"github.com/sluicefeed/sluice/auth"
	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/console"
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

// serveHTTP starts the HTTP servers and returns the console's URL ("" when
// it is off); stop closes them (ending the console's live streams) and the
// console's connection to the service.
func (h httpServices) serveHTTP() (consoleURL string, stop func(), err error) {
	var stops []func()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			for i := len(stops) - 1; i >= 0; i-- {
				stops[i]()
			}
		})
	}
	type site struct {
		addr, flag string
		mux        *http.ServeMux
		tls        bool
	}
	var sites []*site
	siteOf := func(addr, flag string) *site {
		for _, s := range sites {
			if s.addr == addr {
				return s
			}
		}
		s := &site{addr: addr, flag: flag, mux: http.NewServeMux()}
		sites = append(sites, s)
		return s
	}
	if h.cfg.MetricsListen != "" {
		s := siteOf(h.cfg.MetricsListen, "--metrics-listen")
		s.mux.Handle("/metrics", h.metrics.Handler())
		s.mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
		if h.cfg.Pprof {
			s.mux.HandleFunc("/debug/pprof/", pprof.Index)
			s.mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
			s.mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
			s.mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
			s.mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		}
	}
	if h.cfg.HTTPListen != "" {
		c, closeConsole, err := h.console()
		if err != nil {
			return "", nil, err
		}
		stops = append(stops, closeConsole)
		s := siteOf(h.cfg.HTTPListen, "--http-listen")
		s.mux.Handle("/", c)
		s.tls = h.tlsConfig != nil
	}
	for _, s := range sites {
		addr := s.addr
		lis, err := net.Listen("tcp", addr)
		if err != nil {
			stop()
			return "", nil, fmt.Errorf("%s %s: %w", s.flag, addr, listenError(err))
		}
		scheme := "http"
		if s.tls {
			lis = tls.NewListener(lis, h.tlsConfig.Clone())
			scheme = "https"
		}
		// No write timeout: the console's live streams last as long as the
		// page is open.
		hs := &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
			ErrorLog: slog.NewLogLogger(h.log.Handler(), slog.LevelWarn)}
		go func() {
			if err := hs.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
				h.log.Error("http server", "address", addr, "error", err)
			}
		}()
		stops = append(stops, func() { _ = hs.Close() })
		bound := lis.Addr().String()
		if addr == h.cfg.MetricsListen {
			h.log.Info("serving metrics", "address", bound)
		}
		if addr == h.cfg.HTTPListen {
			consoleURL = scheme + "://" + bound + "/"
			h.log.Info("serving console", "address", bound, "url", consoleURL)
		}
	}
	return consoleURL, stop, nil
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
		LoginsPerSecond: loginRate(h.cfg.Limits.CallsPerSecond), SecureCookie: h.tlsConfig != nil})
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
