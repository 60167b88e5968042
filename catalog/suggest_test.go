package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sluicefeed/sluice/catalog"
)

func TestNearest(t *testing.T) {
	names := []string{"demo.orders", "demo.orders_pii", "demo.items", "sales.orders", "hr.salaries", "a.b", "a.c", "a.d", "a.e"}
	for _, tt := range []struct {
		name string
		want []string
	}{
		{"demo.order", []string{"demo.orders", "sales.orders"}},
		{"demo.ordres", []string{"demo.orders", "sales.orders"}},
		{"dmeo.orders", []string{"demo.orders", "sales.orders"}},
		{"Demo.Orders", []string{"demo.orders", "sales.orders"}},
		{"demo.orders", []string{"sales.orders"}},
		{"shop.orders", []string{"demo.orders", "sales.orders"}},
		{"demo.orders_pi", []string{"demo.orders_pii", "demo.orders", "sales.orders"}},
		{"a.x", []string{"a.b", "a.c", "a.d"}},
		{"finance.ledger", nil},
		{"demo.customers", nil},
	} {
		if got := catalog.Nearest(tt.name, names, catalog.MaxSuggestions); !slices.Equal(got, tt.want) {
			t.Errorf("Nearest(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
	if got := catalog.Nearest("demo.order", names, 1); !slices.Equal(got, []string{"demo.orders"}) {
		t.Errorf("n=1: %q", got)
	}
}

// TestSuggest: suggestions come from the catalog's tables that allow
// accepts, never from the others.
func TestSuggest(t *testing.T) {
	ctx := context.Background()
	wh := t.TempDir()
	writeTables(t, wh, "", "sluice", "demo.orders", "secret.orders", "demo.items")
	cat, err := catalog.Open(ctx, catalog.Config{Warehouse: wh})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	got, err := cat.Suggest(ctx, "demo.order", nil)
	if err != nil || !slices.Equal(got, []string{"demo.orders", "secret.orders"}) {
		t.Fatalf("every table: %q %v", got, err)
	}
	got, err = cat.Suggest(ctx, "demo.order", func(n string) bool { return !strings.HasPrefix(n, "secret.") })
	if err != nil || !slices.Equal(got, []string{"demo.orders"}) {
		t.Fatalf("without secret.*: %q %v", got, err)
	}
	got, err = cat.Suggest(ctx, "demo.order", func(string) bool { return false })
	if err != nil || len(got) != 0 {
		t.Fatalf("nothing allowed: %q %v", got, err)
	}

	_, lerr := cat.LoadTable(ctx, "demo.order")
	for _, tt := range []struct {
		names []string
		want  string
	}{
		{nil, "catalog: table not found: demo.order"},
		{[]string{"demo.orders"}, "catalog: table not found: demo.order (did you mean demo.orders?)"},
		{[]string{"a.b", "a.c"}, "(did you mean a.b or a.c?)"},
		{[]string{"a.b", "a.c", "a.d"}, "(did you mean a.b, a.c or a.d?)"},
	} {
		err := catalog.DidYouMean(lerr, tt.names)
		if !errors.Is(err, catalog.ErrTableNotFound) || !strings.HasSuffix(err.Error(), tt.want) {
			t.Errorf("DidYouMean(%q) = %v, want ... %s", tt.names, err, tt.want)
		}
	}
}

func ExampleNearest() {
	tables := []string{"demo.orders", "demo.customers", "sales.orders"}
	fmt.Println(catalog.Nearest("demo.ordrs", tables, catalog.MaxSuggestions))
	// Output: [demo.orders sales.orders]
}
