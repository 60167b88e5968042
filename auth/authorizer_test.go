package auth

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func user(name string) Principal { return Principal{Name: name, Method: MethodToken} }

func TestAuthorizer(t *testing.T) {
	rules := []Rule{
		{Principals: []string{"admin"}, Tables: []string{"*"}},
		{Principals: []string{"analyst-*"}, Tables: []string{"sales.*"},
			Columns: map[string][]string{"sales.customers": {"id", "country"}}},
		{Principals: []string{"analyst-eu"}, Tables: []string{"sales.customers", "hr.?eam"},
			Columns: map[string][]string{"sales.customers": {"country", "email"}}},
		{Principals: []string{"analyst-*"}, Tables: []string{"sales.orders"},
			Columns: map[string][]string{"sales.orders": {"id", "addr"}}},
		{Principals: []string{"*"}, Tables: []string{"public.*"}},
	}
	z, err := NewAuthorizer(Config{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	rules[0].Tables[0] = "nothing" // the Authorizer keeps its own copy
	open, _ := NewAuthorizer(Config{})
	closed, _ := NewAuthorizer(Config{DenyByDefault: true})
	denyWithRules, _ := NewAuthorizer(Config{Rules: rules[1:2], DenyByDefault: true})

	tests := []struct {
		name       string
		z          *Authorizer
		p          Principal
		table      string
		read       bool
		restricted bool
		columns    []string
	}{
		{"no rules: anyone reads anything", open, user("x"), "sales.customers", true, false, nil},
		{"no rules: anonymous too", open, Anonymous, "a.b", true, false, nil},
		{"deny by default", closed, user("admin"), "sales.customers", false, true, nil},
		{"admin reads everything", z, user("admin"), "hr.salaries", true, false, nil},
		{"admin is not a glob of admins", z, user("admin2"), "hr.salaries", false, true, nil},
		{"analyst, restricted table", z, user("analyst-us"), "sales.customers", true, true, []string{"id", "country"}},
		{"analyst, whole table", z, user("analyst-us"), "sales.products", true, false, nil},
		{"analyst, nested namespace", z, user("analyst-us"), "sales.eu.returns", true, false, nil},
		{"analyst, other namespace", z, user("analyst-us"), "hr.salaries", false, true, nil},
		{"grants add up", z, user("analyst-eu"), "sales.customers", true, true, []string{"id", "country", "email"}},
		{"whole table wins over a restriction", z, user("analyst-us"), "sales.orders", true, false, nil},
		{"question mark", z, user("analyst-eu"), "hr.team", true, false, nil},
		{"question mark is one character", z, user("analyst-eu"), "hr.steam", false, true, nil},
		{"everyone reads public", z, user("nobody"), "public.holidays", true, false, nil},
		{"anonymous reads public", z, Anonymous, "public.holidays", true, false, nil},
		{"nobody reads private", z, user("nobody"), "sales.customers", false, true, nil},
		{"prefix is not a match", z, user("analyst-us"), "salesx.customers", false, true, nil},
		{"names are case-sensitive", z, user("Admin"), "sales.orders", false, true, nil},
		{"rules with deny by default", denyWithRules, user("analyst-x"), "sales.customers", true, true, []string{"id", "country"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.z.CanRead(tt.p, tt.table); got != tt.read {
				t.Fatalf("CanRead = %v, want %v", got, tt.read)
			}
			cols, restricted := tt.z.Columns(tt.p, tt.table)
			if restricted != tt.restricted || !slices.Equal(cols, tt.columns) {
				t.Fatalf("Columns = %q, %v; want %q, %v", cols, restricted, tt.columns, tt.restricted)
			}
			err := tt.z.Check(tt.p, tt.table)
			if tt.read != (err == nil) {
				t.Fatalf("Check = %v", err)
			}
			if err != nil {
				if !errors.Is(err, ErrPermissionDenied) || !strings.Contains(err.Error(), tt.p.Name) || !strings.Contains(err.Error(), tt.table) {
					t.Fatalf("Check = %v: want ErrPermissionDenied naming the principal and the table", err)
				}
				// No other table's name, nor any rule's pattern.
				for _, leak := range []string{"hr.?eam", "public", "sales.orders", "sales.*"} {
					if leak != tt.table && strings.Contains(err.Error(), leak) {
						t.Fatalf("Check = %v: leaks %q", err, leak)
					}
				}
			}
		})
	}
}

func TestAuthorizerProject(t *testing.T) {
	z, err := NewAuthorizer(Config{Rules: []Rule{
		{Principals: []string{"bi"}, Tables: []string{"crm.*"},
			Columns: map[string][]string{"crm.people": {"id", "addr", "tags.name"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	bi := user("bi")
	tests := []struct {
		name    string
		table   string
		request []string
		want    []string
		denied  bool
	}{
		{"all of a restricted table", "crm.people", nil, []string{"id", "addr", "tags.name"}, false},
		{"allowed columns", "crm.people", []string{"addr", "id"}, []string{"addr", "id"}, false},
		{"a field of an allowed struct", "crm.people", []string{"addr.city"}, []string{"addr.city"}, false},
		{"an allowed field", "crm.people", []string{"tags.name"}, []string{"tags.name"}, false},
		{"the struct of an allowed field", "crm.people", []string{"tags"}, nil, true},
		{"a sibling of an allowed field", "crm.people", []string{"tags.secret"}, nil, true},
		{"a column that shares a prefix", "crm.people", []string{"address"}, nil, true},
		{"a column not allowed", "crm.people", []string{"id", "email"}, nil, true},
		{"all of a whole table", "crm.deals", nil, nil, false},
		{"some of a whole table", "crm.deals", []string{"x"}, []string{"x"}, false},
		{"a table not granted", "hr.people", nil, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := z.Project(bi, tt.table, tt.request)
			if tt.denied {
				if !errors.Is(err, ErrPermissionDenied) || !strings.Contains(err.Error(), tt.table) {
					t.Fatalf("Project = %q, %v; want ErrPermissionDenied", got, err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("Project = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if err := z.CheckColumns(bi, "crm.people", []string{"id", "addr.zip"}); err != nil {
		t.Fatalf("CheckColumns of allowed columns: %v", err)
	}
	if err := z.CheckColumns(bi, "crm.people", nil); err != nil {
		t.Fatalf("CheckColumns of no columns: %v", err)
	}
	err = z.CheckColumns(bi, "crm.people", []string{"id", "salary"})
	if !errors.Is(err, ErrPermissionDenied) || !strings.Contains(err.Error(), `"salary"`) {
		t.Fatalf("CheckColumns of a filter column: %v", err)
	}
	if err := z.CheckColumns(bi, "hr.people", nil); !errors.Is(err, ErrPermissionDenied) {
		t.Fatalf("CheckColumns of a table not granted: %v", err)
	}
}

func TestCheckRules(t *testing.T) {
	tests := []struct {
		name string
		rule Rule
		ok   bool
	}{
		{"fine", Rule{Principals: []string{"*"}, Tables: []string{"a.*"}, Columns: map[string][]string{"a.b": {"x"}}}, true},
		{"no principals", Rule{Tables: []string{"*"}}, false},
		{"no tables", Rule{Principals: []string{"*"}}, false},
		{"empty principal", Rule{Principals: []string{""}, Tables: []string{"*"}}, false},
		{"empty table", Rule{Principals: []string{"*"}, Tables: []string{""}}, false},
		{"columns of a table not granted", Rule{Principals: []string{"*"}, Tables: []string{"a.*"}, Columns: map[string][]string{"b.c": {"x"}}}, false},
		{"no columns", Rule{Principals: []string{"*"}, Tables: []string{"a.b"}, Columns: map[string][]string{"a.b": {}}}, false},
		{"empty column", Rule{Principals: []string{"*"}, Tables: []string{"a.b"}, Columns: map[string][]string{"a.b": {"x", ""}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewAuthorizer(Config{Rules: []Rule{tt.rule}})
			if tt.ok != (err == nil) {
				t.Fatalf("NewAuthorizer: %v", err)
			}
			if err != nil && !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("NewAuthorizer: %v, want ErrInvalidConfig", err)
			}
		})
	}
}

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true},
		{"*", "anything.at.all", true},
		{"", "", true},
		{"", "a", false},
		{"a", "a", true},
		{"a", "ab", false},
		{"ab", "a", false},
		{"a*", "a", true},
		{"a*", "abc", true},
		{"*c", "abc", true},
		{"*c", "abd", false},
		{"a*c", "ac", true},
		{"a*c", "abbbc", true},
		{"a*c", "abbbd", false},
		{"a*b*c", "axbyc", true},
		{"a*b*c", "axbyd", false},
		{"?", "é", true},
		{"?", "", false},
		{"??", "é", false},
		{"a?c", "abc", true},
		{"*.orders", "demo.orders", true},
		{"*.orders", "demo.orders2", false},
		{"demo.*", "demo.", true},
		{"demo.*", "demo", false},
		{"spiffe://*", "spiffe://acme/ingest", true},
		{"[a]", "[a]", true},
		{"[a]", "a", false},
		{"a**", "a", true},
		{"*a*a*a*a*a*a*b", strings.Repeat("a", 200), false},
	}
	for _, tt := range tests {
		if got := globMatch(tt.pattern, tt.s); got != tt.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}

func TestConsumerOwners(t *testing.T) {
	z, err := NewAuthorizer(Config{Consumers: []ConsumerOwner{
		{Consumers: []string{"orders-mirror", "billing-*"}, Principal: "ingest"},
		{Consumers: []string{"*"}, Principal: "fallback"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for consumer, want := range map[string]string{"orders-mirror": "ingest", "billing-eu": "ingest",
		"orders-mirror-2": "fallback"} {
		if got, ok := z.ConsumerOwner(consumer); !ok || got != want {
			t.Errorf("owner of %s: %q %v, want %q", consumer, got, ok, want)
		}
	}
	none, err := NewAuthorizer(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := none.ConsumerOwner("x"); ok {
		t.Errorf("an owner %q without configuration", got)
	}
	for _, bad := range [][]ConsumerOwner{{{Principal: "p"}}, {{Consumers: []string{"c"}}},
		{{Consumers: []string{""}, Principal: "p"}}} {
		if _, err := NewAuthorizer(Config{Consumers: bad}); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("consumers %+v: %v, want ErrInvalidConfig", bad, err)
		}
		if err := (Config{Consumers: bad}).Validate("127.0.0.1:1"); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("Validate of consumers %+v: %v, want ErrInvalidConfig", bad, err)
		}
	}
}
