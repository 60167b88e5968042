package cli

import (
	"strings"
	"testing"
)

// TestDidYouMean: a mistyped command or flag gets the nearest names.
func TestDidYouMean(t *testing.T) {
	for _, tt := range []struct {
		args []string
		msg  string
	}{
		{[]string{"change"}, `unknown command "change" (did you mean changes?)`},
		{[]string{"snapshot", "a.b"}, `unknown command "snapshot" (did you mean snapshots?)`},
		{[]string{"tabels"}, `unknown command "tabels" (did you mean tables?)`},
		{[]string{"changes", "a.b", "--filtr", "x"}, "flag provided but not defined: -filtr (did you mean --filter?)"},
		{[]string{"changes", "a.b", "--fro=5"}, "flag provided but not defined: -fro (did you mean --from?)"},
		{[]string{"tables", "--tokn", "x"}, "flag provided but not defined: -tokn (did you mean --token?)"},
		{[]string{"tail", "a.b", "--consumr", "c"}, "flag provided but not defined: -consumr (did you mean --consumer?)"},
		{[]string{"--uri", "grpc://h:1", "tables"}, `unknown command "--uri": the command comes first`},
	} {
		code, _, stderr := run(t, IO{}, tt.args...)
		if code != exitUsage || !strings.Contains(stderr, tt.msg) {
			t.Errorf("sluice %q: exit %d, stderr %q; want 2 and %q", tt.args, code, stderr, tt.msg)
		}
	}
	for _, tt := range []struct {
		args []string
		msg  string
	}{
		// Nothing near: no suggestion.
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"changes", "a.b", "--zzzzzz"}, "flag provided but not defined: -zzzzzz"},
		// The failure is another flag's: no suggestion for a later typo.
		{[]string{"changes", "a.b", "--net=maybe", "--filtr", "x"}, `invalid boolean value "maybe" for -net`},
	} {
		code, _, stderr := run(t, IO{}, tt.args...)
		if code != exitUsage || !strings.Contains(stderr, tt.msg) || strings.Contains(stderr, "did you mean") {
			t.Errorf("sluice %q: exit %d, stderr %q; want 2, %q and no suggestion", tt.args, code, stderr, tt.msg)
		}
	}
}

// TestUnavailableNamesTheURI: when no server answers, the error says
// which address was tried and how to name another.
func TestUnavailableNamesTheURI(t *testing.T) {
	for _, tt := range []struct {
		o    IO
		args []string
		want string
	}{
		{IO{}, []string{"tables", "--uri", "grpc://127.0.0.1:1"}, "grpc://127.0.0.1:1 (--uri)"},
		{IO{Getenv: env("SLUICE_URI", "grpc://127.0.0.1:1")}, []string{"tables"}, "grpc://127.0.0.1:1 (SLUICE_URI)"},
	} {
		code, _, stderr := run(t, tt.o, tt.args...)
		if code != 24 || !strings.Contains(stderr, tt.want) || !strings.Contains(stderr, "--uri or SLUICE_URI") {
			t.Errorf("%q: exit %d, stderr %q; want 24 and %q", tt.args, code, stderr, tt.want)
		}
	}
}
