package delta

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	lru "github.com/hashicorp/golang-lru/v2"
)

// Cache sizes: versions are immutable, so parsed commits, snapshots and
// protocol/metadata pairs are cached by version. Snapshots hold every live
// file of the table, so few are kept.
const (
	commitCacheSize   = 256
	snapshotCacheSize = 4
	metadataCacheSize = 256
)

// DefaultCommitGrace is how long a read waits for the newest commit file
// of a table to become whole (see WithCommitGrace).
const DefaultCommitGrace = 5 * time.Second

// incrementalLimit is the most commits a state is rolled forward by from a
// cached one without listing the log first (a follower reading version
// after version).
const incrementalLimit = 100

// Table is one Delta table, read through an fs.FS rooted at the table's
// root folder (the folder holding _delta_log). A Table is safe for
// concurrent use. The values its methods return are shared with its caches:
// callers must not modify them.
type Table struct {
	fsys fs.FS
	// name names the table in messages.
	name string
	// root is the table root as a URI or an absolute path ("" when
	// unknown): absolute file paths under it are read through fsys.
	root string
	mem  memory.Allocator

	// grace is how long the newest commit file may stay incomplete.
	grace time.Duration
	// mu guards incomplete.
	mu sync.Mutex
	// incomplete holds, for each newest commit file found incomplete,
	// when it was first found so: it is corrupt once grace has passed.
	incomplete map[int64]time.Time

	// lmu guards known, and serializes listings.
	lmu sync.Mutex
	// known is the newest listing of the log (nil before the first): see
	// current.
	known *listing

	// The caches are safe for concurrent use on their own.
	commits   *lru.Cache[int64, *Commit]
	snapshots *lru.Cache[int64, *Snapshot]
	metadata  *lru.Cache[int64, protocolMetadata]
}

// protocolMetadata is the protocol and metadata of one version.
type protocolMetadata struct {
	protocol Protocol
	metadata Metadata
}

// Option configures Open.
type Option func(*Table)

// WithRoot gives the URI (file:///data/t, s3://bucket/t) or the absolute
// path of the table's root, the folder fsys is rooted at. Absolute paths in
// the log under it are then read through fsys (see FilePath); without it
// every absolute path is refused with ErrUnsupported.
func WithRoot(root string) Option {
	return func(t *Table) { t.root = root }
}

// WithCommitGrace sets how long the newest commit file of the table may be
// incomplete (default DefaultCommitGrace). Writers normally publish a
// commit file whole (put-if-absent, a rename), but a local writer, or an
// object store that shows an object while it is written, can expose a
// commit file half-written: it is not yet a commit. A read that finds the
// newest commit file malformed reads it again, waiting longer each time,
// until it parses or the grace, counted from when it was first found
// malformed, has passed; then it is ErrCorrupt (at once for every later
// read). A malformed older commit file is ErrCorrupt at once. 0: no
// grace.
func WithCommitGrace(d time.Duration) Option {
	return func(t *Table) { t.grace = d }
}

// WithAllocator sets the allocator checkpoints are decoded with (default
// memory.DefaultAllocator). Nothing decoded outlives a call.
func WithAllocator(mem memory.Allocator) Option {
	return func(t *Table) { t.mem = mem }
}

// Open opens the Delta table whose root folder fsys is rooted at. name
// names the table in messages. It fails with ErrNotTable when there is no
// _delta_log folder or the folder holds no commit and no checkpoint.
func Open(ctx context.Context, fsys fs.FS, name string, opts ...Option) (*Table, error) {
	t := &Table{fsys: fsys, name: name, mem: memory.DefaultAllocator, grace: DefaultCommitGrace,
		incomplete: map[int64]time.Time{}}
	for _, o := range opts {
		o(t)
	}
	var err error
	if t.commits, err = lru.New[int64, *Commit](commitCacheSize); err != nil {
		return nil, err
	}
	if t.snapshots, err = lru.New[int64, *Snapshot](snapshotCacheSize); err != nil {
		return nil, err
	}
	if t.metadata, err = lru.New[int64, protocolMetadata](metadataCacheSize); err != nil {
		return nil, err
	}
	l, err := t.list(ctx)
	if err != nil {
		return nil, err
	}
	if l.latest() < 0 {
		return nil, fmt.Errorf("%w: table %q: %s holds no commit and no checkpoint", ErrNotTable, name, logDir)
	}
	return t, nil
}

// Name returns the name the table was opened with.
func (t *Table) Name() string { return t.name }

// Versions are the versions of a table that can be read.
type Versions struct {
	// Latest is the newest version with a commit file (or a checkpoint).
	Latest int64
	// EarliestStart is the earliest version a change window may start
	// right after: -1 when commit 0 and every later commit exist (the whole
	// history is readable); otherwise the oldest version v whose state can
	// be rebuilt (a checkpoint at v) with every commit v+1..Latest present.
	EarliestStart int64
	// Origin identifies the log's oldest file (its name, size and
	// modification time, from the same listing): a table deleted and
	// created again in the same folder has another one, and so has a log
	// whose oldest files were cleaned up.
	Origin string
	// FirstCommit is the oldest version whose commit file, and every later
	// one up to Latest, is in the log: Latest+1 when the latest version has
	// only a checkpoint.
	FirstCommit int64
}

// Versions brings the listing of the log up to date (on each call: tables
// change; without listing the whole log when it only grew, see current)
// and returns the readable versions. A log whose latest state cannot be
// rebuilt (a gap in the commits after the last checkpoint) fails with
// ErrCorrupt.
func (t *Table) Versions(ctx context.Context) (Versions, error) {
	l, err := t.current(ctx)
	if err != nil {
		return Versions{}, err
	}
	latest := l.latest()
	if latest < 0 {
		return Versions{}, fmt.Errorf("%w: table %q: %s holds no commit and no checkpoint", ErrNotTable, t.name, logDir)
	}
	es, ok := l.earliestStart()
	if !ok {
		return Versions{}, fmt.Errorf("%w: table %q: no checkpoint is followed by every commit up to the latest version %d (oldest commit %d)",
			ErrCorrupt, t.name, latest, l.oldestCommit())
	}
	return Versions{Latest: latest, EarliestStart: es, Origin: l.origin, FirstCommit: l.runStart()}, nil
}

// schemeRE matches a URI scheme (RFC 3986) at the start of a path.
var schemeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// FilePath turns the path of an add, remove or cdc action (a URI relative
// to the table root, URL-encoded as the protocol says: "%25" is "%") into a
// path inside the table's fs.FS. An absolute URI or path is accepted only
// when it lies under the root given with WithRoot; others fail with
// ErrUnsupported. A relative path that leaves the table fails with
// ErrCorrupt.
func (t *Table) FilePath(raw string) (string, error) {
	if schemeRE.MatchString(raw) || strings.HasPrefix(raw, "/") {
		if rel, ok := t.underRoot(raw); ok {
			return rel, nil
		}
		return "", fmt.Errorf("%w: table %q: file %q is outside the table root (only files under it are read)",
			ErrUnsupported, t.name, raw)
	}
	p, err := url.PathUnescape(raw)
	if err != nil {
		return "", fmt.Errorf("%w: table %q: file path %q: %w", ErrCorrupt, t.name, raw, err)
	}
	if p == "." || !fs.ValidPath(p) {
		return "", fmt.Errorf("%w: table %q: file path %q is not a path inside the table", ErrCorrupt, t.name, raw)
	}
	return p, nil
}

// underRoot returns the path of the absolute URI or path raw relative to
// the table root, when the root is known and raw lies under it.
func (t *Table) underRoot(raw string) (string, bool) {
	if t.root == "" {
		return "", false
	}
	root, err := parseLocation(t.root, false)
	if err != nil {
		return "", false
	}
	u, err := parseLocation(raw, true)
	if err != nil || !strings.EqualFold(u.Scheme, root.Scheme) || u.Host != root.Host {
		return "", false
	}
	prefix := strings.TrimSuffix(root.Path, "/") + "/"
	rel, ok := strings.CutPrefix(u.Path, prefix)
	if !ok || rel == "" || !fs.ValidPath(rel) {
		return "", false
	}
	return rel, true
}

// parseLocation parses a URI, or an absolute path as a file: URI; an
// absolute path is URL-encoded when encoded is true (a path from the log),
// literal otherwise (the root given to WithRoot).
func parseLocation(s string, encoded bool) (*url.URL, error) {
	if strings.HasPrefix(s, "/") && !encoded {
		return &url.URL{Scheme: "file", Path: s}, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	if u.Opaque != "" {
		return nil, errors.New("opaque URI")
	}
	if u.Scheme == "" {
		u.Scheme = "file"
	}
	return u, nil
}
