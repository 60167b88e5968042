package daemon

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestFlagTypoSuggestion: a mistyped flag names the nearest flags, and
// only when the parse failed at that flag.
func TestFlagTypoSuggestion(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--catalog-nam", "x"}, "flag provided but not defined: -catalog-nam (did you mean --catalog-name?)"},
		{[]string{"--demo", "--warehous=/w"}, "flag provided but not defined: -warehous (did you mean --warehouse?)"},
		{[]string{"-delta-rot", "/d"}, "flag provided but not defined: -delta-rot (did you mean --delta-root?)"},
		{[]string{"--zzzzzzzz"}, "flag provided but not defined: -zzzzzzzz"},
		{[]string{"--max-batch-rows", "many", "--catalog-nam", "x"}, `invalid value "many" for flag -max-batch-rows`},
	} {
		_, err := LoadConfig(tt.args, nil, io.Discard)
		if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v; want %q", tt.args, err, tt.want)
		}
		if !strings.Contains(tt.want, "did you mean") && strings.Contains(err.Error(), "did you mean") {
			t.Errorf("%q: %v suggests a flag", tt.args, err)
		}
	}
}
