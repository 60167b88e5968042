package registry

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/sluicefeed/sluice/auth"
	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// TestTablesSuggest: an unknown table's error names the nearest tables
// the caller may read, and no other.
func TestTablesSuggest(t *testing.T) {
	ctx := context.Background()
	cat, err := tablewrite.OpenWarehouse(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	for _, name := range []string{"demo.orders", "secret.orders"} {
		if _, err := tablewrite.CreateTable(ctx, cat, name, sc); err != nil {
			t.Fatal(err)
		}
	}
	authz, err := auth.NewAuthorizer(auth.Config{Rules: []auth.Rule{
		{Principals: []string{"alice"}, Tables: []string{"demo.*"}},
		{Principals: []string{"bob"}, Tables: []string{"*"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	tables := New(cat, Options{Authorizer: authz})
	for _, tt := range []struct {
		ctx  context.Context
		want string
	}{
		{auth.NewContext(ctx, auth.Principal{Name: "bob"}), "demo.order (did you mean demo.orders or secret.orders?)"},
		{auth.NewContext(ctx, auth.Principal{Name: "alice"}), "demo.order (did you mean demo.orders?)"},
		{auth.NewContext(ctx, auth.Principal{Name: "eve"}), "table not found: demo.order"},
		{ctx, "table not found: demo.order"},
	} {
		_, err := tables.LoadTable(tt.ctx, "demo.order")
		if !errors.Is(err, catalog.ErrTableNotFound) || !strings.HasSuffix(err.Error(), tt.want) {
			t.Errorf("%v, want ...%s", err, tt.want)
		}
	}
	if _, err := tables.LoadTable(ctx, "demo.orders"); err != nil {
		t.Fatal(err)
	}
}
