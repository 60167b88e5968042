package catalog

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicefeed/sluice/internal/lib/suggest"
)

// MaxSuggestions is the most table names Suggest returns.
const MaxSuggestions = 3

// Nearest returns up to n of names nearest to name, nearest first, then
// in name order. The distance is suggest.Distance (characters inserted,
// deleted or replaced, two neighbours swapped; case ignored) of the whole names, or of their table
// parts (after the last dot) plus one: a misspelling anywhere, or the right
// table in another namespace. It returns only names within a third of
// name's length (at least 2), not any name at all, and never name itself.
func Nearest(name string, names []string, n int) []string {
	full := []rune(strings.ToLower(name))
	tbl := []rune(strings.ToLower(tablePart(name)))
	limit := max(2, len(full)/3)
	type candidate struct {
		name string
		dist int
	}
	var found []candidate
	for _, c := range names {
		if c == name {
			continue
		}
		d := min(suggest.Distance(full, []rune(strings.ToLower(c))),
			suggest.Distance(tbl, []rune(strings.ToLower(tablePart(c))))+1)
		if d <= limit {
			found = append(found, candidate{c, d})
		}
	}
	slices.SortFunc(found, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(a.dist, b.dist), strings.Compare(a.name, b.name))
	})
	out := make([]string, 0, min(n, len(found)))
	for _, c := range found[:min(n, len(found))] {
		out = append(out, c.name)
	}
	return out
}

// tablePart is the table of "namespace.table".
func tablePart(name string) string { return name[strings.LastIndexByte(name, '.')+1:] }

// Suggest returns up to MaxSuggestions names of tables nearest to name
// (see Nearest) among those allow accepts (nil: every table). A server
// passes the caller's grants as allow, so that a suggestion never names a
// table the caller may not read.
func (c *Catalog) Suggest(ctx context.Context, name string, allow func(table string) bool) ([]string, error) {
	names, err := c.ListTables(ctx)
	if err != nil {
		return nil, err
	}
	if allow != nil {
		names = slices.DeleteFunc(names, func(n string) bool { return !allow(n) })
	}
	return Nearest(name, names, MaxSuggestions), nil
}

// DidYouMean returns err, an ErrTableNotFound, with the names appended as
// suggestions: "catalog: table not found: demo.order (did you mean
// demo.orders?)". Without names it returns err as it is.
func DidYouMean(err error, names []string) error {
	if len(names) == 0 {
		return err
	}
	return fmt.Errorf("%w (did you mean %s?)", err, orList(names))
}

// orList joins names as "a", "a or b", "a, b or c".
func orList(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
