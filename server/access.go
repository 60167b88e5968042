package server

import (
	"context"
	"iter"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sluicefeed/sluice/auth"
	"github.com/sluicefeed/sluice/feed"
)

// guard is the engine as a caller may use it: every table a call names is
// checked against the caller's grants, and a caller restricted to some
// columns of a table sees only those (its projection defaults to them, and
// its filter and identity may name no other). Without an authorizer every
// caller may read everything.
type guard struct {
	e     *feed.Engine
	authz *auth.Authorizer
}

func principalOf(ctx context.Context) auth.Principal {
	if p, ok := auth.FromContext(ctx); ok {
		return p
	}
	return auth.Principal{Name: "anonymous", Method: "anonymous"}
}

// table checks that the caller may read the table.
func (g *guard) table(ctx context.Context, name string) error {
	if g.authz == nil {
		return nil
	}
	return g.authz.Check(principalOf(ctx), name)
}

// request checks a change request and narrows its projection to the
// caller's columns.
func (g *guard) request(ctx context.Context, req feed.Request) (feed.Request, error) {
	if g.authz == nil {
		return req, nil
	}
	p := principalOf(ctx)
	if err := g.authz.Check(p, req.Table); err != nil {
		return req, err
	}
	if _, restricted := g.authz.Columns(p, req.Table); !restricted {
		return req, nil
	}
	cols, err := g.authz.Project(p, req.Table, req.Columns)
	if err != nil {
		return req, err
	}
	req.Columns = cols
	used := append([]string(nil), req.Identity...)
	if req.Filter != "" {
		fc, err := feed.FilterColumns(req.Filter)
		if err != nil {
			return req, err
		}
		for _, c := range fc {
			used = append(used, strings.SplitN(c, ".", 2)[0])
		}
	}
	if err := g.authz.CheckColumns(p, req.Table, used); err != nil {
		return req, err
	}
	return req, nil
}

func (g *guard) Plan(ctx context.Context, req feed.Request) (*feed.Plan, error) {
	req, err := g.request(ctx, req)
	if err != nil {
		return nil, err
	}
	return g.e.Plan(ctx, req)
}

func (g *guard) PlanState(ctx context.Context, req feed.Request) (*feed.StatePlan, error) {
	req, err := g.request(ctx, req)
	if err != nil {
		return nil, err
	}
	return g.e.PlanState(ctx, req)
}

func (g *guard) Schema(ctx context.Context, req feed.Request) (*arrow.Schema, error) {
	req, err := g.request(ctx, req)
	if err != nil {
		return nil, err
	}
	return g.e.Schema(ctx, req)
}

func (g *guard) Status(ctx context.Context, name string) (feed.TableStatus, error) {
	if err := g.table(ctx, name); err != nil {
		return feed.TableStatus{}, err
	}
	return g.e.Status(ctx, name)
}

func (g *guard) Snapshots(ctx context.Context, name string) ([]feed.Snapshot, error) {
	if err := g.table(ctx, name); err != nil {
		return nil, err
	}
	return g.e.Snapshots(ctx, name)
}

func (g *guard) History(ctx context.Context, name string) (feed.History, error) {
	if err := g.table(ctx, name); err != nil {
		return feed.History{}, err
	}
	return g.e.History(ctx, name)
}

// ListTables lists the tables the caller may read (allow further narrows
// them; nil: no further).
func (g *guard) ListTables(ctx context.Context, allow func(string) bool) ([]feed.TableInfo, error) {
	p := principalOf(ctx)
	return g.e.ListTables(ctx, func(name string) bool {
		if g.authz != nil && !g.authz.CanRead(p, name) {
			return false
		}
		return allow == nil || allow(name)
	})
}

func (g *guard) Read(ctx context.Context, p *feed.Plan) iter.Seq2[feed.Batch, error] {
	return g.e.Read(ctx, p)
}

func (g *guard) ReadState(ctx context.Context, sp *feed.StatePlan) iter.Seq2[feed.Batch, error] {
	return g.e.ReadState(ctx, sp)
}

func (g *guard) Stats() feed.Stats { return g.e.Stats() }
