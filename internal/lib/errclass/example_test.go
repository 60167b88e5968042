package errclass_test

import (
	"errors"
	"fmt"

	"github.com/sluicefeed/sluice/internal/lib/errclass"
)

// ErrTableNotFound is declared as a package declares its sentinels.
var ErrTableNotFound = errclass.New(errclass.NotFound, "catalog: table not found")

func Example() {
	err := fmt.Errorf("%w: %q", ErrTableNotFound, "db.orders")
	class, ok := errclass.Of(err)
	fmt.Println(err)
	fmt.Println(errors.Is(err, ErrTableNotFound), class, ok)
	// Output:
	// catalog: table not found: "db.orders"
	// true NotFound true
}
