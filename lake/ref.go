package lake

import (
	"github.com/sluicefeed/sluice/internal/lib/errclass"
)

// Kinds of refs (Ref.Kind).
const (
	// RefBranch is a branch: a line of commits whose head moves with each
	// commit to it (Iceberg's main and other branches, Paimon's branches).
	RefBranch = "branch"
	// RefTag is a tag: a name for one commit, which does not move.
	RefTag = "tag"
)

// MainBranch is the name of the branch a table's commits go to unless a
// writer names another, and the ref a request without one reads.
const MainBranch = "main"

// Errors of refs.
var (
	// ErrRefNotFound reports a branch or tag the table does not have.
	ErrRefNotFound = errclass.New(errclass.NotFound, "feed: ref not found")
	// ErrNoRefs reports a ref asked of a table whose format has no
	// branches or tags (Delta).
	ErrNoRefs = errclass.New(errclass.InvalidArgument, "feed: table format has no branches or tags")
)

// Ref is a named reference of a table: a branch or a tag.
type Ref struct {
	// Name is the ref's name.
	Name string `json:"name"`
	// Kind is RefBranch or RefTag.
	Kind string `json:"kind"`
	// Head is the commit the ref points at: a branch's latest commit, a
	// tag's commit; nil for a branch without commits.
	Head *int64 `json:"snapshot,omitempty"`
}
