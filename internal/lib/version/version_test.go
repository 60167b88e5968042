package version

import (
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// semver is the form of the VERSION file: MAJOR.MINOR.PATCH with an
// optional pre-release, which is also a valid Python (PEP 440) version when
// the pre-release is aN, bN or rcN.
var semver = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)((a|b|rc)(0|[1-9][0-9]*))?$`)

func TestVersionFile(t *testing.T) {
	b, err := os.ReadFile("../../../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	if v := strings.TrimSuffix(string(b), "\n"); !semver.MatchString(v) {
		t.Fatalf("VERSION is %q: want one line MAJOR.MINOR.PATCH, optionally followed by aN, bN or rcN", v)
	}
}

func TestVersion(t *testing.T) {
	defer func(s string) { stamped = s }(stamped)
	for _, tc := range []struct {
		stamped, want string
	}{
		{"0.1.0", "0.1.0"},
		{"v0.2.0\n", "0.2.0"},
		{"1.0.0rc1", "1.0.0rc1"},
		{"", Devel}, // a test binary records no module version
	} {
		t.Run(tc.stamped, func(t *testing.T) {
			stamped = tc.stamped
			if got := Version(); got != tc.want {
				t.Errorf("Version() = %q with %q stamped, want %q", got, tc.stamped, tc.want)
			}
		})
	}
}

func TestString(t *testing.T) {
	defer func(s string) { stamped = s }(stamped)
	stamped = "0.1.0"
	got := String("flightd")
	if want := "flightd 0.1.0 ("; !strings.HasPrefix(got, want) {
		t.Errorf("String() = %q, want a prefix %q", got, want)
	}
	if want := runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")"; !strings.HasSuffix(got, want) {
		t.Errorf("String() = %q, want a suffix %q", got, want)
	}
}
