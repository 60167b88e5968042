package catalog

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync"

	icecatalog "github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	lru "github.com/hashicorp/golang-lru/v2"
)

// Bounds of the parsed table metadata a catalog keeps: at most
// loadedTablesKept tables, and together at most loadedSnapshotsKept
// snapshots (a parsed snapshot takes about a kilobyte of heap with its
// summary, so a table of 10,000 snapshots about 10 MiB). The tables
// being followed or read now stay; the others are parsed again when
// loaded.
const (
	loadedTablesKept    = 16
	loadedSnapshotsKept = 40_000
)

// loadedTables keeps the tables an sql catalog loaded, by name and
// metadata file. A metadata file is immutable, so while the catalog points
// a table at the same file, its parsed metadata is the table's current
// state: a load then costs one indexed query of the catalog, not a read
// and parse of a metadata file that grows with the table's history. It is
// safe for concurrent use.
type loadedTables struct {
	tables *lru.Cache[string, *table.Table]
	// maxSnapshots bounds the snapshots the kept tables hold together.
	maxSnapshots int
	// mu guards snapshots, the snapshots the kept tables hold together.
	mu        sync.Mutex
	snapshots int
}

func newLoadedTables() *loadedTables { return newLoadedTablesOf(loadedTablesKept, loadedSnapshotsKept) }

// newLoadedTablesOf keeps at most tables tables of at most snapshots
// snapshots together.
func newLoadedTablesOf(tables, snapshots int) *loadedTables {
	l := &loadedTables{maxSnapshots: snapshots}
	l.tables, _ = lru.NewWithEvict[string, *table.Table](tables, func(_ string, tbl *table.Table) {
		l.mu.Lock()
		l.snapshots -= snapshotCount(tbl)
		l.mu.Unlock()
	})
	return l
}

// snapshotCount is the number of snapshots tbl's metadata holds, plus one
// for the rest of it.
func snapshotCount(tbl *table.Table) int { return len(tbl.Metadata().Snapshots()) + 1 }

// add keeps tbl under key, evicting the least recently used tables while
// the kept ones hold more than maxSnapshots snapshots. A table larger
// than that alone is not kept.
func (l *loadedTables) add(key string, tbl *table.Table) {
	n := snapshotCount(tbl)
	if n > l.maxSnapshots {
		return
	}
	l.mu.Lock()
	l.snapshots += n
	over := l.snapshots > l.maxSnapshots
	l.mu.Unlock()
	for over {
		if _, _, ok := l.tables.RemoveOldest(); !ok {
			break
		}
		l.mu.Lock()
		over = l.snapshots > l.maxSnapshots
		l.mu.Unlock()
	}
	if _, ok, _ := l.tables.PeekOrAdd(key, tbl); ok {
		// Another load kept it first: this one's count goes.
		l.mu.Lock()
		l.snapshots -= n
		l.mu.Unlock()
	}
}

// encodedNamespaceMarker starts the storage key iceberg-go's sql catalog
// gives a namespace that a plain join of its parts cannot spell.
const encodedNamespaceMarker = "__iceberg_namespace_v1__:"

func loadedKey(name, location string) string { return name + "\x00" + location }

// metadataLocation returns the metadata file the sql catalog in db (the
// catalog named catalogName) points table ident at, as iceberg-go's sql
// catalog reads it; ok is false when the name has a namespace whose
// storage key iceberg-go spells otherwise (a dot or its encoding marker in
// a part), when the table is absent, or when the query fails: the caller
// then loads the table through iceberg-go.
func metadataLocation(ctx context.Context, db *sql.DB, catalogName string, ident table.Identifier) (string, bool) {
	ns, name := ident[:len(ident)-1], ident[len(ident)-1]
	for _, part := range ns {
		if strings.Contains(part, ".") || strings.Contains(part, encodedNamespaceMarker) {
			return "", false
		}
	}
	var loc sql.NullString
	err := db.QueryRowContext(ctx, "SELECT metadata_location FROM iceberg_tables WHERE catalog_name = ? AND "+
		"table_namespace = ? AND table_name = ? AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)",
		catalogName, strings.Join(ns, "."), name).Scan(&loc)
	if err != nil || !loc.Valid || loc.String == "" {
		return "", false
	}
	return loc.String, true
}

// openLocationDB opens a read-only connection pool to the SQLite file at
// path, for metadataLocation.
func openLocationDB(path string) (*sql.DB, error) {
	dsn := (&url.URL{Scheme: "file", Opaque: filepath.ToSlash(path),
		RawQuery: fmt.Sprintf("mode=ro&_pragma=busy_timeout(%d)", sqliteBusyTimeoutMs)}).String()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(2)
	return db, nil
}

// loadCached returns the table name of the sql catalog ice from the
// tables loaded before when the catalog still points it at the same
// metadata file, and otherwise loads it and keeps it. Each call returns a
// table of its own (a writer may refresh it in place) over the shared
// parsed metadata.
func (c *Catalog) loadCached(ctx context.Context, ice icecatalog.Catalog, name string,
	ident table.Identifier) (*table.Table, error) {
	c.mu.Lock()
	db := c.locDB
	c.mu.Unlock()
	loc, ok := "", false
	if db != nil {
		loc, ok = metadataLocation(ctx, db, c.cfg.Name, ident)
	}
	if ok {
		if tbl, hit := c.loaded.tables.Get(loadedKey(name, loc)); hit {
			return own(tbl, ice), nil
		}
	}
	tbl, err := ice.LoadTable(ctx, ident)
	if err != nil {
		return nil, err
	}
	if ok && tbl.MetadataLocation() == loc {
		c.loaded.add(loadedKey(name, loc), tbl)
		return own(tbl, ice), nil
	}
	return tbl, nil
}

// own returns a table of its own over tbl's metadata and storage.
func own(tbl *table.Table, ice icecatalog.Catalog) *table.Table {
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(),
		func(ctx context.Context) (iceio.IO, error) { return tbl.FS(ctx) }, ice)
}
