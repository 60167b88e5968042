package server

import (
	"os"
	"testing"

	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
)

// The engine's and the server's batches come from the shared pool of Arrow
// buffers (as in flightd; the tests pass it), which here poisons every freed buffer
// and pools every size: a value read from a batch after its last release
// (a string kept past its batch, a buffer used after free) reads garbage,
// which the feeds compared with the oracles and fixtures show.
func TestMain(m *testing.M) {
	arrowpool.Shared().Poison()
	os.Exit(m.Run())
}
