package auth

import (
	"errors"
	"slices"
	"testing"
)

// TestGrantResolvedOnce: authorizing a column-restricted request (the
// table, its projection, and the filter and identity columns beyond it)
// evaluates the rules for the principal and table once, and so does each
// of the Authorizer's one-shot calls.
func TestGrantResolvedOnce(t *testing.T) {
	z, err := NewAuthorizer(Config{Rules: []Rule{
		{Principals: []string{"analyst-*"}, Tables: []string{"sales.*"},
			Columns: map[string][]string{"sales.customers": {"id", "country", "addr"}}},
		{Principals: []string{"analyst-eu"}, Tables: []string{"sales.customers"},
			Columns: map[string][]string{"sales.customers": {"email"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	p := user("analyst-eu")
	count := func(t *testing.T, what string, fn func()) {
		t.Helper()
		before := z.resolves.Load()
		fn()
		if n := z.resolves.Load() - before; n != 1 {
			t.Errorf("%s resolved the grant %d times, want once", what, n)
		}
	}

	count(t, "the authorization of a column-restricted request", func() {
		g := z.Grant(p, "sales.customers")
		if err := g.Check(); err != nil {
			t.Fatal(err)
		}
		allowed, restricted := g.Columns()
		if !restricted || !slices.Equal(allowed, []string{"id", "country", "addr", "email"}) {
			t.Fatalf("Columns = %q, %v", allowed, restricted)
		}
		cols, err := g.Project([]string{"id", "addr.city"})
		if err != nil || !slices.Equal(cols, []string{"id", "addr.city"}) {
			t.Fatalf("Project = %q, %v", cols, err)
		}
		if err := g.CheckColumns([]string{"country", "email"}); err != nil {
			t.Fatal(err)
		}
		if err := g.CheckColumns([]string{"salary"}); !errors.Is(err, ErrPermissionDenied) {
			t.Fatalf("CheckColumns of a column not granted: %v", err)
		}
	})
	count(t, "Project", func() { _, _ = z.Project(p, "sales.customers", []string{"id"}) })
	count(t, "Project of all columns", func() { _, _ = z.Project(p, "sales.customers", nil) })
	count(t, "CheckColumns", func() { _ = z.CheckColumns(p, "sales.customers", []string{"id"}) })
	count(t, "Check", func() { _ = z.Check(p, "sales.customers") })
	count(t, "Columns", func() { _, _ = z.Columns(p, "sales.customers") })

	g := z.Grant(p, "hr.salaries")
	if g.CanRead() || !errors.Is(g.Check(), ErrPermissionDenied) {
		t.Fatalf("a grant of a table not granted: CanRead %v, Check %v", g.CanRead(), g.Check())
	}
	if _, err := g.Project(nil); !errors.Is(err, ErrPermissionDenied) {
		t.Fatalf("Project of a table not granted: %v", err)
	}
	if err := g.CheckColumns(nil); !errors.Is(err, ErrPermissionDenied) {
		t.Fatalf("CheckColumns of a table not granted: %v", err)
	}
}
