package feed

import (
	"os"
	"testing"

	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
)

// The engine's batches come from the shared pool of Arrow buffers (as in
// flightd; here it is the default allocator), which poisons every freed buffer
// and pools every size: a value read from a batch after its last release
// (a string kept past its batch, a buffer used after free) reads garbage,
// which the feeds compared with the oracles and fixtures show.
func TestMain(m *testing.M) {
	arrowpool.Shared().Poison()
	defaultAllocator = arrowpool.Shared()
	os.Exit(m.Run())
}
