package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/sluicefeed/sluice/feed"
)

// Replicas says where the replicas of a deployment are, for the locations
// of the endpoints of a split window (ChangeRequest.max_endpoints). Every
// replica serves every ticket: the endpoints are spread over the replicas,
// each listing all of them, its own first.
type Replicas struct {
	// Advertise is the address clients use for this replica
	// (grpc://host:port or grpc+tls://host:port; "" for none).
	Advertise string
	// Peers are the addresses of every replica, this one's included or
	// not: static addresses, or one "dns://name:port", resolved at each
	// split to every address of name, each with Advertise's scheme (grpc
	// without one).
	Peers []string
	// Resolver resolves a dns:// peer. Default: net.DefaultResolver.
	Resolver *net.Resolver
}

// ParseLocation checks a replica address: grpc://host:port,
// grpc+tcp://host:port or grpc+tls://host:port.
func ParseLocation(addr string) error {
	u, err := url.Parse(addr)
	if err != nil {
		return fmt.Errorf("%q is not an address: %v", addr, err)
	}
	switch u.Scheme {
	case "grpc", "grpc+tcp", "grpc+tls":
	default:
		return fmt.Errorf("%q: want grpc://host:port or grpc+tls://host:port", addr)
	}
	if _, port, err := net.SplitHostPort(u.Host); err != nil || port == "" || u.Path != "" {
		return fmt.Errorf("%q: want grpc://host:port or grpc+tls://host:port, with a port and nothing after it", addr)
	}
	return nil
}

// ParsePeer checks a peer: an address (see ParseLocation) or
// dns://name:port.
func ParsePeer(peer string) error {
	if rest, ok := strings.CutPrefix(peer, "dns://"); ok {
		if host, port, err := net.SplitHostPort(rest); err != nil || host == "" || port == "" {
			return fmt.Errorf("%q: want dns://name:port (every address the name resolves to, on port)", peer)
		}
		return nil
	}
	return ParseLocation(peer)
}

// locations returns the replicas' addresses, sorted, so that every
// replica spreads a split's endpoints the same way. A dns:// peer that
// cannot be resolved is left out (and logged): the endpoints still list
// the replicas that are known, this one at least.
func (s *Server) locations(ctx context.Context) []string {
	r := s.replicas
	var out []string
	add := func(a string) {
		if a != "" && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	add(r.Advertise)
	scheme := "grpc"
	if u, err := url.Parse(r.Advertise); err == nil && r.Advertise != "" {
		scheme = u.Scheme
	}
	for _, p := range r.Peers {
		rest, ok := strings.CutPrefix(p, "dns://")
		if !ok {
			add(p)
			continue
		}
		host, port, err := net.SplitHostPort(rest)
		if err != nil {
			continue // checked at start
		}
		res := r.Resolver
		if res == nil {
			res = net.DefaultResolver
		}
		addrs, err := res.LookupHost(ctx, host)
		if err != nil {
			s.log.WarnContext(ctx, "resolve peers", "peers", p, "err", err)
			continue
		}
		for _, a := range addrs {
			add(scheme + "://" + net.JoinHostPort(a, port))
		}
	}
	slices.Sort(out)
	return out
}

// splitInfo returns the endpoints of a window split into parts: one per
// part, in the window's order, each with the replicas' locations rotated
// so that the parts are spread over them. No parts: one endpoint that
// reads the whole window, with the locations too.
func (s *Server) splitInfo(ctx context.Context, r *request, p *feed.Plan, parts []feed.Part) ([]*flight.FlightEndpoint, error) {
	locs := s.locations(ctx)
	out := make([]*flight.FlightEndpoint, 0, len(parts))
	for i := range max(len(parts), 1) {
		var part *feed.Part
		if parts != nil {
			part = &parts[i]
		}
		ticket, err := pinnedTicket(r.wire, p, part)
		if err != nil {
			return nil, err
		}
		ep := &flight.FlightEndpoint{Ticket: &flight.Ticket{Ticket: ticket}}
		for j := range locs {
			ep.Location = append(ep.Location, &flight.Location{Uri: locs[(i+j)%len(locs)]})
		}
		out = append(out, ep)
	}
	if len(out) > 0 && s.log.Enabled(ctx, slog.LevelDebug) {
		s.log.DebugContext(ctx, "split", "table", clipName(p.Table), "endpoints", len(out), "replicas", len(locs))
	}
	return out, nil
}
