package feed

import (
	"os"
	"testing"

	"github.com/sluicefeed/sluice/internal/arrowpool"
)

// The engine's batches come from the shared pool of Arrow buffers, which
// here poisons every freed buffer: a batch used after it was released
// reads garbage, which the feeds compared with the oracles show.
func TestMain(m *testing.M) {
	arrowpool.Shared().Poison()
	os.Exit(m.Run())
}
