// Package version says which version of Sluice a binary is.
//
// The version has one source, the repository's VERSION file, which the
// Python client's build reads too. Builds from a clone (make build, make
// image, the Dockerfile) stamp it at link time:
//
//	go build -ldflags "-X github.com/sluicefeed/sluice/internal/version.stamped=$(cat VERSION)" ./cmd/flightd
//
// A binary built by `go install github.com/sluicefeed/sluice/cmd/flightd@v0.1.0`
// is not stamped: it reports the module version the go command recorded in
// it (a release is tagged v + VERSION). Any other build reports "devel".
package version
