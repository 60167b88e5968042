package server

import (
	"context"
	"strings"

	"github.com/sluicefeed/sluice/auth"
	"github.com/sluicefeed/sluice/feed"
)

// Every call authorizes once, before it reads anything: a call that names
// a table checks the caller's grant (authorizeTable), a ChangeRequest is
// narrowed to the caller's columns (authorize), and listings show only the
// tables the caller may read (readable). Without an authorizer every caller
// may read everything.

func principalOf(ctx context.Context) auth.Principal {
	if p, ok := auth.FromContext(ctx); ok {
		return p
	}
	return auth.Principal{Name: "anonymous", Method: "anonymous"}
}

// authorizeTable checks that the caller may read the table.
func (s *Server) authorizeTable(ctx context.Context, table string) error {
	if s.authz == nil {
		return nil
	}
	return s.authz.Check(principalOf(ctx), table)
}

// authorize checks that the caller may read the request's table, and
// narrows a column-restricted caller's request to its columns: its
// projection defaults to them, and its projection, filter and identity may
// name no other.
func (s *Server) authorize(ctx context.Context, r *request) error {
	if r.stream != nil {
		narrowed, err := s.authorizeShape(ctx, r.stream.Request)
		r.stream.Request = narrowed
		return err
	}
	narrowed, err := s.authorizeShape(ctx, r.window)
	r.window = narrowed
	return err
}

// authorizeShape checks a change request and narrows its projection to the
// caller's columns.
func (s *Server) authorizeShape(ctx context.Context, req feed.Request) (feed.Request, error) {
	if s.authz == nil {
		return req, nil
	}
	// One resolution of the caller's grant answers every question below.
	g := s.authz.Grant(principalOf(ctx), req.Table)
	if err := g.Check(); err != nil {
		return req, err
	}
	if !g.Restricted() {
		return req, nil
	}
	cols, err := g.Project(req.Columns)
	if err != nil {
		return req, err
	}
	req.Columns = cols
	used := append([]string(nil), req.Identity...)
	fc, err := req.FilterColumns()
	if err != nil {
		return req, err
	}
	for _, c := range fc {
		used = append(used, strings.SplitN(c, ".", 2)[0])
	}
	return req, g.CheckColumns(used)
}

// readable returns whether the caller may read a table, for listings.
func (s *Server) readable(ctx context.Context) func(string) bool {
	if s.authz == nil {
		return nil
	}
	p := principalOf(ctx)
	return func(name string) bool { return s.authz.CanRead(p, name) }
}
