package console

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// AnyHost, in the allowed hosts of NewHosts, accepts every Host. It
// leaves a listener open to DNS rebinding: flightd accepts it only with
// authentication on, where a rebound page has no credentials to send.
const AnyHost = "*"

// HostsSetting names the setting that lists a listener's other names, in
// the answers to refused requests.
const HostsSetting = "http.allowed_hosts (--http-allowed-hosts, SLUICE_HTTP_ALLOWED_HOSTS)"

// Hosts is what an HTTP listener answers, against DNS rebinding: a web
// page whose own name the attacker resolves again to 127.0.0.1 (or to
// another address the browser reaches) sends its requests with that name
// as Host, and reads the answers as its own. A listener therefore answers
// only requests whose Host is one of its names: the loopback names
// (localhost, 127.0.0.0/8, ::1), the host of its listen address, every
// address of the machine when it listens on all of them (0.0.0.0, ::),
// and the names the operator allows. Host names are compared without
// their port, case and final dot.
//
// A browser's cross-origin request names its page in Origin. A request
// whose Origin is present is answered only when the Origin is the
// request's own host, or one of the listener's names above (AnyHost
// aside), so that another site cannot even open a live stream.
type Hosts struct {
	any   bool
	names map[string]bool
}

// interfaceAddrs lists the machine's addresses (a variable for tests).
var interfaceAddrs = net.InterfaceAddrs

// NewHosts returns the hosts of a listener on listen (host:port), with the
// other names allowed (host names or IP addresses, without a scheme or a
// port; AnyHost for every host). Entries are checked by ParseAllowedHost
// (flightd's Config.Validate); a malformed one is ignored here.
func NewHosts(listen string, allowed []string) *Hosts {
	h := &Hosts{names: map[string]bool{"localhost": true}}
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		host = listen
	}
	host = canonicalHost(host)
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		// Every address of the machine; a failure to list them leaves
		// the loopback names and the allowed ones.
		addrs, _ := interfaceAddrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				h.names[n.IP.String()] = true
			}
		}
	} else {
		h.names[host] = true
	}
	for _, a := range allowed {
		if strings.TrimSpace(a) == AnyHost {
			h.any = true
			continue
		}
		if name, err := ParseAllowedHost(a); err == nil {
			h.names[name] = true
		}
	}
	return h
}

// ParseAllowedHost checks an entry of the allowed hosts: AnyHost, a host
// name or an IP address (IPv6 with or without brackets), without a scheme,
// a port or a path. It returns the entry as Hosts compares it.
func ParseAllowedHost(entry string) (string, error) {
	s := strings.TrimSpace(entry)
	if s == AnyHost {
		return s, nil
	}
	if s == "" {
		return "", fmt.Errorf("an empty host name")
	}
	if inner, ok := strings.CutPrefix(s, "["); ok {
		if inner, ok = strings.CutSuffix(inner, "]"); ok && net.ParseIP(inner) != nil {
			return canonicalHost(inner), nil
		}
		return "", fmt.Errorf("%q is not an IPv6 address in brackets", entry)
	}
	if net.ParseIP(s) != nil {
		return canonicalHost(s), nil
	}
	if strings.ContainsAny(s, ":/?#@*[] \t") {
		return "", fmt.Errorf("%q is not a host name: write the name alone (sluice.example.com), without a scheme, "+
			"a port or a path (or %s for every host)", entry, AnyHost)
	}
	return canonicalHost(s), nil
}

// canonicalHost is host (without a port) as Hosts compares it: lower
// case, without brackets or a final dot, an IP address in its shortest
// form.
func canonicalHost(host string) string {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if ip := net.ParseIP(host); ip != nil {
		return ip.String()
	}
	return host
}

// hostName is the host of a Host header (or an Origin's host), without
// its port, as Hosts compares it.
func hostName(hostport string) string {
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		return canonicalHost(host)
	}
	return canonicalHost(hostport)
}

// named reports whether host (a Host header: name[:port]) is one of the
// listener's names.
func (h *Hosts) named(hostport string) bool {
	name := hostName(hostport)
	if name == "" {
		return false
	}
	if h.names[name] {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}

// Allows reports whether a request's Host header (name[:port]) is one the
// listener answers.
func (h *Hosts) Allows(hostport string) bool {
	return h.any || h.named(hostport)
}

// allowsOrigin reports whether a request's Origin header, when it has
// one, is the request's own host or one of the listener's names.
func (h *Hosts) allowsOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return false // "null" (a sandboxed or file page), or no web page's origin
	}
	return strings.EqualFold(u.Host, r.Host) || h.named(u.Host)
}

// Admit answers a request the listener must not serve itself, logs it,
// and reports false: 421 Misdirected Request for a Host that is not one of
// its names, 403 Forbidden for a foreign Origin. Both answers name
// HostsSetting.
func (h *Hosts) Admit(w http.ResponseWriter, r *http.Request, log *slog.Logger) bool {
	refuse := func(status int, code, reason, msg string) bool {
		log.InfoContext(r.Context(), "http request refused", "path", r.URL.Path, "status", status, "code", code,
			"peer", r.RemoteAddr, "host", r.Host, "origin", r.Header.Get("Origin"), "error", reason)
		w.Header().Set("Cache-Control", "no-store")
		http.Error(w, code+": "+msg, status)
		return false
	}
	if !h.Allows(r.Host) {
		return refuse(http.StatusMisdirectedRequest, "Misdirected", "host is not a name of this server",
			fmt.Sprintf("this server does not answer the host %q: it answers its loopback names, its listen "+
				"address and the names of %s (a guard against DNS rebinding); if %q is a name of this server, "+
				"add it there", r.Host, HostsSetting, hostName(r.Host)))
	}
	if !h.allowsOrigin(r) {
		return refuse(http.StatusForbidden, "PermissionDenied", "cross-origin request",
			fmt.Sprintf("a request from the page of another site (Origin %q) is refused: the console answers "+
				"its own pages, and those of the names of %s", r.Header.Get("Origin"), HostsSetting))
	}
	return true
}

// Guard returns next behind Admit: what every path of an HTTP listener
// answers (flightd's metrics and profiles beside the console).
func (h *Hosts) Guard(next http.Handler, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.Admit(w, r, log) {
			next.ServeHTTP(w, r)
		}
	})
}
