package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// stamped is the VERSION file's content, set at link time with
// -ldflags "-X github.com/sluicefeed/sluice/internal/version.stamped=...".
var stamped string

// Devel is the version of a build that was neither stamped nor installed at
// a module version.
const Devel = "devel"

// Version returns the version of this binary without a leading "v": the
// stamped one, else the module version that `go install ...@version`
// recorded, else Devel.
func Version() string {
	if v := strings.TrimSpace(stamped); v != "" {
		return strings.TrimPrefix(v, "v")
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			return strings.TrimPrefix(v, "v")
		}
	}
	return Devel
}

// String returns the line a program prints for --version: its name, the
// version, the commit it was built from when the build recorded it, and the
// Go toolchain and platform, as in
//
//	flightd 0.1.0 (commit 21e4aed1c0de, modified; go1.26.8 linux/amd64)
func String(program string) string {
	var extra []string
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev string
		var modified bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if rev != "" {
			if len(rev) > 12 {
				rev = rev[:12]
			}
			c := "commit " + rev
			if modified {
				c += ", modified"
			}
			extra = append(extra, c)
		}
	}
	extra = append(extra, runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH)
	return fmt.Sprintf("%s %s (%s)", program, Version(), strings.Join(extra, "; "))
}
