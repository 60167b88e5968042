package suggest

import (
	"flag"
	"fmt"
	"slices"
	"strings"
)

// Nearest returns up to n of names nearest to word, in name order: those
// at the least edit distance from it (characters inserted, deleted,
// replaced, or two neighbours swapped; case ignored), when that distance
// is within a third of word's length (at least 2). It never returns word
// itself, and nothing when no name is that near.
func Nearest(word string, names []string, n int) []string {
	w := []rune(strings.ToLower(word))
	limit := max(2, len(w)/3)
	best := limit + 1
	var found []string
	for _, name := range names {
		if name == word {
			continue
		}
		d := Distance(w, []rune(strings.ToLower(name)))
		switch {
		case d > limit:
		case d < best:
			best, found = d, []string{name}
		case d == best:
			found = append(found, name)
		}
	}
	slices.Sort(found)
	found = slices.Compact(found)
	return found[:min(n, len(found))]
}

// Distance is the optimal string alignment distance of a and b: the
// Levenshtein distance, with a swap of two adjacent characters as one edit.
func Distance(a, b []rune) int {
	// d[i][j] is the distance of a[:i] and b[:j]; three rows suffice.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// Or joins names as "a", "a or b", "a, b or c".
func Or(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// maxFlags is the most flags a suggestion names.
const maxFlags = 3

// FlagError returns err, the failure of parse(args) over fs, with the
// flags nearest to the one it stopped at appended when that flag is one
// fs does not define: "flag provided but not defined: -catalog-nam (did
// you mean --catalog-name?)". Otherwise, or when no flag is near, it
// returns err as it is. parse is how the caller parses args with fs (it
// may parse a prefix of args again: call FlagError only on the way out).
func FlagError(fs *flag.FlagSet, args []string, err error, parse func([]string) error) error {
	name := unknownFlag(fs, args, parse)
	if name == "" {
		return err
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	near := Nearest(name, names, maxFlags)
	if len(near) == 0 {
		return err
	}
	for i, n := range near {
		near[i] = dashes(n) + n
	}
	return fmt.Errorf("%w (did you mean %s?)", err, Or(near))
}

// dashes is how a flag is written: -o, --from.
func dashes(name string) string {
	if len(name) == 1 {
		return "-"
	}
	return "--"
}

// unknownFlag returns the flag of args that fs does not define, if the
// parse of args failed there: it reads args as the flag package does
// (a flag's value follows it unless the flag is boolean or written
// name=value; "--" ends the flags), skipping positional arguments, and
// checks that the arguments before the unknown flag parse. "" when the
// failure was another (a bad value, a bad syntax).
func unknownFlag(fs *flag.FlagSet, args []string, parse func([]string) error) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return ""
		}
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		name := strings.TrimPrefix(a[1:], "-")
		name, _, hasValue := strings.Cut(name, "=")
		if name == "" || name[0] == '-' || name[0] == '=' {
			return ""
		}
		f := fs.Lookup(name)
		if f == nil {
			if name == "h" || name == "help" || parse(args[:i]) != nil {
				return ""
			}
			return name
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		if !hasValue {
			i++
		}
	}
	return ""
}
