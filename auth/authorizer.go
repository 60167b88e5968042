package auth

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"unicode/utf8"
)

// Rule grants principals the right to read tables, all their columns or
// only some. In YAML:
//
//	rules:
//	  - principals: ["analyst-*"]
//	    tables: ["sales.*"]
//	    columns:
//	      sales.customers: [id, country]
//
// Patterns are globs over the whole name: "*" matches any run of
// characters (dots included, so "sales.*" also matches "sales.eu.orders"),
// "?" any one character, and every other character itself.
type Rule struct {
	// Principals are globs of the principal names the rule applies to
	// ("*": everyone authenticated).
	Principals []string `yaml:"principals"`
	// Tables are globs of the table names ("namespace.table") the rule
	// grants.
	Tables []string `yaml:"tables"`
	// Columns restricts, for some of the granted tables (by exact name),
	// the columns the principals may read. A nested field is allowed when
	// it or a struct containing it is listed ("addr" allows "addr.city").
	// A granted table without an entry is readable whole.
	Columns map[string][]string `yaml:"columns"`
}

// Authorizer decides which tables and columns a principal may read. It is
// immutable and safe for concurrent use.
//
// Rules are grants and add up: a principal may read a table when any rule
// whose Principals match it has Tables matching the table; its columns are
// unrestricted when one such rule has no Columns entry for the table, else
// the union of those rules' entries. With rules, every other table is
// denied. Without rules every principal may read every table whole, or none
// with DenyByDefault.
type Authorizer struct {
	rules         []Rule
	denyByDefault bool
	consumers     []ConsumerOwner
	// resolves counts the evaluations of the rules, for tests.
	resolves atomic.Int64
}

// NewAuthorizer returns the Authorizer of cfg's Rules, DenyByDefault and
// Consumers.
func NewAuthorizer(cfg Config) (*Authorizer, error) {
	if err := checkRules(cfg.Rules); err != nil {
		return nil, err
	}
	if err := checkConsumers(cfg.Consumers); err != nil {
		return nil, err
	}
	rules := make([]Rule, len(cfg.Rules))
	for i, r := range cfg.Rules {
		rules[i] = Rule{Principals: slices.Clone(r.Principals), Tables: slices.Clone(r.Tables)}
		if r.Columns != nil {
			rules[i].Columns = make(map[string][]string, len(r.Columns))
			for t, cols := range r.Columns {
				rules[i].Columns[t] = slices.Clone(cols)
			}
		}
	}
	consumers := make([]ConsumerOwner, len(cfg.Consumers))
	for i, c := range cfg.Consumers {
		consumers[i] = ConsumerOwner{Consumers: slices.Clone(c.Consumers), Principal: c.Principal}
	}
	return &Authorizer{rules: rules, denyByDefault: cfg.DenyByDefault, consumers: consumers}, nil
}

// ConsumerOwner returns the principal that the configuration makes the
// owner of the consumer id (the first entry of Config.Consumers whose
// globs match it), and whether there is one.
func (z *Authorizer) ConsumerOwner(consumer string) (principal string, ok bool) {
	for _, c := range z.consumers {
		if matchAny(c.Consumers, consumer) {
			return c.Principal, true
		}
	}
	return "", false
}

// Grant is what the rules grant one principal on one table, evaluated once:
// a call that asks several questions of the same principal and table (may
// it read the table, which columns, are these columns allowed) resolves a
// Grant and asks it. A Grant is immutable and safe for concurrent use.
type Grant struct {
	principal, table string
	granted, whole   bool
	// columns are the allowed columns when granted and not whole, in rule
	// order.
	columns []string
}

// Grant evaluates the rules for p and table.
func (z *Authorizer) Grant(p Principal, table string) Grant {
	z.resolves.Add(1)
	g := Grant{principal: p.Name, table: table}
	if len(z.rules) == 0 {
		g.granted, g.whole = !z.denyByDefault, true
		return g
	}
	for _, r := range z.rules {
		if !matchAny(r.Principals, p.Name) || !matchAny(r.Tables, table) {
			continue
		}
		g.granted = true
		rc, ok := r.Columns[table]
		if !ok {
			g.whole, g.columns = true, nil
			return g
		}
		for _, c := range rc {
			if !slices.Contains(g.columns, c) {
				g.columns = append(g.columns, c)
			}
		}
	}
	return g
}

// CanRead reports whether p may read table (some or all of its columns).
// The server also uses it to show only readable tables in listings.
func (z *Authorizer) CanRead(p Principal, table string) bool { return z.Grant(p, table).CanRead() }

// Check returns nil when p may read table, else an error wrapping
// ErrPermissionDenied that names p and table.
func (z *Authorizer) Check(p Principal, table string) error { return z.Grant(p, table).Check() }

// Columns returns the columns of table that p may read: restricted is false
// when p may read them all, and allowed lists them (in rule order) when it
// is true. For a table p may not read it returns (nil, true).
func (z *Authorizer) Columns(p Principal, table string) (allowed []string, restricted bool) {
	return z.Grant(p, table).Columns()
}

// Project returns the columns a read of table by p must project, given the
// columns the request asks for (empty: all of them): the request's columns
// when p may read each of them, p's allowed columns when the request asks
// for all and p's columns are restricted, nil (all) when they are not. A
// table p may not read, or a column it may not read, is an error wrapping
// ErrPermissionDenied.
func (z *Authorizer) Project(p Principal, table string, columns []string) ([]string, error) {
	return z.Grant(p, table).Project(columns)
}

// CheckColumns returns nil when p may read every one of columns of table,
// else an error wrapping ErrPermissionDenied naming the first column it may
// not read. The server checks with it every column a request uses beyond
// its projection: filter and identity columns, whose values a client could
// otherwise infer.
func (z *Authorizer) CheckColumns(p Principal, table string, columns []string) error {
	return z.Grant(p, table).CheckColumns(columns)
}

// CanRead reports whether the grant lets its principal read its table
// (some or all of its columns).
func (g Grant) CanRead() bool { return g.granted }

// Check returns nil when the grant lets its principal read its table, else
// an error wrapping ErrPermissionDenied that names them.
func (g Grant) Check() error {
	if g.granted {
		return nil
	}
	return fmt.Errorf("%w: principal %q may not read table %q", ErrPermissionDenied, g.principal, g.table)
}

// Columns returns the columns the grant allows, as Authorizer.Columns does.
// The caller must not modify allowed.
func (g Grant) Columns() (allowed []string, restricted bool) {
	switch {
	case !g.granted:
		return nil, true
	case g.whole:
		return nil, false
	default:
		return g.columns, true
	}
}

// Restricted reports whether the grant allows only some of the table's
// columns (or none: a table not granted).
func (g Grant) Restricted() bool { return !g.granted || !g.whole }

// Project returns the columns a read must project given the columns the
// request asks for, as Authorizer.Project does.
func (g Grant) Project(columns []string) ([]string, error) {
	if err := g.Check(); err != nil {
		return nil, err
	}
	if g.whole {
		return columns, nil
	}
	if len(columns) == 0 {
		return slices.Clone(g.columns), nil
	}
	return columns, g.CheckColumns(columns)
}

// CheckColumns returns nil when the grant allows every one of columns, as
// Authorizer.CheckColumns does.
func (g Grant) CheckColumns(columns []string) error {
	if err := g.Check(); err != nil {
		return err
	}
	if g.whole {
		return nil
	}
	for _, c := range columns {
		if !columnAllowed(g.columns, c) {
			return fmt.Errorf("%w: principal %q may not read column %q of table %q", ErrPermissionDenied,
				g.principal, c, g.table)
		}
	}
	return nil
}

// columnAllowed reports whether column c, or a struct containing it, is in
// allowed.
func columnAllowed(allowed []string, c string) bool {
	for _, a := range allowed {
		if c == a || strings.HasPrefix(c, a) && c[len(a)] == '.' {
			return true
		}
	}
	return false
}

func matchAny(patterns []string, s string) bool {
	for _, p := range patterns {
		if globMatch(p, s) {
			return true
		}
	}
	return false
}

// globMatch reports whether s matches pattern, where "*" matches any run of
// characters and "?" any one character. It runs in O(len(pattern) *
// len(s)) at worst, never exponentially.
func globMatch(pattern, s string) bool {
	p, n := 0, 0
	starP, starN := -1, 0
	for n < len(s) {
		if p < len(pattern) {
			switch pattern[p] {
			case '*':
				starP, starN = p, n
				p++
				continue
			case '?':
				_, w := utf8.DecodeRuneInString(s[n:])
				p++
				n += w
				continue
			case s[n]:
				p++
				n++
				continue
			}
		}
		if starP < 0 {
			return false
		}
		// Let the last star swallow one more character and retry.
		_, w := utf8.DecodeRuneInString(s[starN:])
		starN += w
		p, n = starP+1, starN
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// checkConsumers reports whether the consumer owners are well formed.
func checkConsumers(owners []ConsumerOwner) error {
	for i, c := range owners {
		if len(c.Consumers) == 0 || slices.Contains(c.Consumers, "") || strings.TrimSpace(c.Principal) == "" {
			return fmt.Errorf("%w: consumers entry %d: needs consumer patterns and a principal", ErrInvalidConfig, i+1)
		}
	}
	return nil
}

// checkRules reports whether rules are well formed.
func checkRules(rules []Rule) error {
	for i, r := range rules {
		if len(r.Principals) == 0 || len(r.Tables) == 0 {
			return fmt.Errorf("%w: rule %d: needs principals and tables", ErrInvalidConfig, i+1)
		}
		if slices.Contains(r.Principals, "") || slices.Contains(r.Tables, "") {
			return fmt.Errorf("%w: rule %d: empty principal or table pattern", ErrInvalidConfig, i+1)
		}
		for t, cols := range r.Columns {
			if !matchAny(r.Tables, t) {
				return fmt.Errorf("%w: rule %d: columns of table %q, which the rule's tables %q do not match",
					ErrInvalidConfig, i+1, t, r.Tables)
			}
			if len(cols) == 0 || slices.Contains(cols, "") {
				return fmt.Errorf("%w: rule %d: table %q: an empty column list or column name", ErrInvalidConfig, i+1, t)
			}
		}
	}
	return nil
}
