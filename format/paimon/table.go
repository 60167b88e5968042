package paimon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
	lru "github.com/hashicorp/golang-lru/v2"
)

const (
	schemaDir    = "schema"
	schemaPrefix = "schema-"

	snapshotCacheSize = 1024
)

// Table is a Paimon table opened on the folder an fs.FS is rooted at. It
// is safe for concurrent use.
type Table struct {
	fsys fs.FS
	name string
	mem  memory.Allocator

	snapshots *lru.Cache[int64, *Snapshot]

	// mu guards schemas.
	mu      sync.Mutex
	schemas map[int64]*Schema
}

// Option configures Open.
type Option func(*Table)

// WithAllocator sets the allocator of the record batches the table's
// readers return (default memory.DefaultAllocator; nil keeps it).
func WithAllocator(mem memory.Allocator) Option {
	return func(t *Table) {
		if mem != nil {
			t.mem = mem
		}
	}
}

// Open opens the Paimon table whose folder fsys is rooted at (local or
// object storage, through internal/lib/storage). name names the table in
// messages. It fails with ErrNotTable when schema/ holds no schema.
func Open(ctx context.Context, fsys fs.FS, name string, opts ...Option) (*Table, error) {
	t := &Table{fsys: fsys, name: name, mem: memory.DefaultAllocator, schemas: map[int64]*Schema{}}
	for _, o := range opts {
		o(t)
	}
	var err error
	if t.snapshots, err = lru.New[int64, *Snapshot](snapshotCacheSize); err != nil {
		return nil, err
	}
	ids, err := t.SchemaIDs(ctx)
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("%w: table %q: %s/ holds no schema", ErrNotTable, name, schemaDir)
	}
	return t, nil
}

// Name returns the name the table was opened with.
func (t *Table) Name() string { return t.name }

// FS returns the file system the table was opened on.
func (t *Table) FS() fs.FS { return t.fsys }

// SchemaIDs returns the ids of the schemas in schema/, ascending.
func (t *Table) SchemaIDs(ctx context.Context) ([]int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	entries, err := fs.ReadDir(t.fsys, schemaDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: table %q: no %s/ folder", ErrNotTable, t.name, schemaDir)
	}
	if err != nil {
		return nil, fmt.Errorf("table %q: listing %s: %w", t.name, schemaDir, err)
	}
	var ids []int64
	for _, e := range entries {
		if id, ok := numbered(e.Name(), schemaPrefix); ok && !e.IsDir() {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// Schema reads schema id (schema/schema-ID).
func (t *Table) Schema(ctx context.Context, id int64) (*Schema, error) {
	t.mu.Lock()
	s, ok := t.schemas[id]
	t.mu.Unlock()
	if ok {
		return s, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data, err := fs.ReadFile(t.fsys, path.Join(schemaDir, schemaPrefix+strconv.FormatInt(id, 10)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: table %q: schema %d is missing", ErrCorrupt, t.name, id)
	}
	if err != nil {
		return nil, fmt.Errorf("table %q: schema %d: %w", t.name, id, err)
	}
	s, err = parseSchema(data)
	if err != nil {
		return nil, fmt.Errorf("%w: table %q: schema %d: %w", ErrCorrupt, t.name, id, err)
	}
	if s.ID != id {
		return nil, fmt.Errorf("%w: table %q: file of schema %d holds schema %d", ErrCorrupt, t.name, id, s.ID)
	}
	t.mu.Lock()
	t.schemas[id] = s
	t.mu.Unlock()
	return s, nil
}

// SnapshotSchema reads the schema snapshot s was written with.
func (t *Table) SnapshotSchema(ctx context.Context, s *Snapshot) (*Schema, error) {
	return t.Schema(ctx, s.SchemaID)
}
