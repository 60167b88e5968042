package iceberg

import (
	"fmt"

	"github.com/apache/iceberg-go/table"
	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"

	"github.com/sluicefeed/sluice/lake"
)

// Sizes of the engine's caches.
const (
	// ownCacheSnapshots bounds the snapshots whose own manifest entries
	// (the files they added and removed) are kept.
	ownCacheSnapshots = 8192
	// liveCacheSnapshots bounds the snapshots whose scan plans (every live
	// file with its deletes) are kept; a plan can hold many files.
	liveCacheSnapshots = 128
	// historyCacheEntries bounds the lineages kept: each is a slice of a
	// table's retained snapshots, under a metadata file and a head (about
	// 4 MiB at 10,000 snapshots); a table's current metadata file needs
	// two (its main branch and the head of a window).
	historyCacheEntries = 8
)

// Cache keeps what planning reads from an Iceberg table's immutable
// files, so that polling clients and repeated plans do not read and decode
// manifests again: per snapshot, the entries of its own manifests, and its
// scan plan. Both are keyed by the table's UUID and the snapshot id, which
// name one immutable snapshot. One cache serves every load of the tables
// of a catalog. It is safe for concurrent use.
type Cache struct {
	own  *lru.Cache[string, ownChanges]
	live *lru.Cache[string, map[string]*table.FileScanTask]
	// history keeps lineages by metadata file and head: a metadata file
	// is immutable, and walking a long history anew on every plan would
	// make planning grow with it.
	history *lru.Cache[string, lake.History]
	// flight makes concurrent plans of one snapshot (every follower of a
	// table, when a commit lands) read its manifests once.
	flight singleflight.Group
}

// NewCache returns an empty cache.
func NewCache() *Cache {
	own, _ := lru.New[string, ownChanges](ownCacheSnapshots)
	live, _ := lru.New[string, map[string]*table.FileScanTask](liveCacheSnapshots)
	history, _ := lru.New[string, lake.History](historyCacheEntries)
	return &Cache{own: own, live: live, history: history}
}

func snapshotKey(meta table.Metadata, id int64) string {
	return fmt.Sprintf("%s/%d", meta.TableUUID(), id)
}

// historyKey names the lineage of head (nil: the main branch's current
// snapshot) under the metadata file location ("" when the table has none:
// not kept).
func historyKey(location string, head *int64) string {
	if location == "" {
		return ""
	}
	if head == nil {
		return location + "#main"
	}
	return fmt.Sprintf("%s#%d", location, *head)
}
