package suggest

import (
	"errors"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
)

func TestNearest(t *testing.T) {
	commands := []string{"tables", "snapshots", "status", "changes", "tail", "explain", "version", "help"}
	for _, tt := range []struct {
		word string
		want []string
	}{
		{"change", []string{"changes"}},
		{"tabels", []string{"tables"}}, // a swap is one edit
		{"TABLES", []string{"tables"}},
		{"stat", []string{"status"}},
		{"tables", nil}, // never the word itself
		{"frobnicate", nil},
		{"x", nil},
		{"tai", []string{"tail"}},
	} {
		if got := Nearest(tt.word, commands, 3); !slices.Equal(got, tt.want) {
			t.Errorf("Nearest(%q) = %q, want %q", tt.word, got, tt.want)
		}
	}
	// Ties in name order, at most n.
	if got := Nearest("ab", []string{"ac", "aa", "ad", "zz"}, 2); !slices.Equal(got, []string{"aa", "ac"}) {
		t.Errorf("ties: %q", got)
	}
}

func TestOr(t *testing.T) {
	for n, want := range []string{"", "a", "a or b", "a, b or c"} {
		if got := Or([]string{"a", "b", "c"}[:n]); got != want {
			t.Errorf("Or of %d = %q, want %q", n, got, want)
		}
	}
}

func TestFlagError(t *testing.T) {
	newFS := func() *flag.FlagSet {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.String("catalog-name", "", "")
		fs.String("catalog-uri", "", "")
		fs.Bool("demo", false, "")
		fs.Int("max-batch-rows", 0, "")
		fs.String("o", "", "")
		return fs
	}
	for _, tt := range []struct {
		args []string
		want string // "" for no suggestion
	}{
		{[]string{"--catalog-nam", "x"}, "(did you mean --catalog-name?)"},
		{[]string{"-catalog-nam=x"}, "(did you mean --catalog-name?)"},
		{[]string{"--demo", "--catalog-nam", "x"}, "(did you mean --catalog-name?)"},
		{[]string{"--catalog-uri", "--catalog-nam", "--catalog-nam"}, "(did you mean --catalog-name?)"},
		{[]string{"--oo", "x"}, "(did you mean -o?)"},
		{[]string{"--nothing-like-it"}, ""},
		{[]string{"--max-batch-rows", "many", "--catalog-nam", "x"}, ""},
		{[]string{"---demo"}, ""},
	} {
		fs := newFS()
		err := fs.Parse(tt.args)
		if err == nil {
			t.Fatalf("%q parses", tt.args)
		}
		got := FlagError(newFS(), tt.args, err, newFS().Parse)
		if !errors.Is(got, err) {
			t.Errorf("%q: %v does not wrap %v", tt.args, got, err)
		}
		suffix := strings.TrimPrefix(got.Error(), err.Error())
		if strings.TrimSpace(suffix) != tt.want {
			t.Errorf("%q: %q, want the suggestion %q", tt.args, got, tt.want)
		}
	}
}
