package registry

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/internal/lib/fswatch"
	"github.com/sluicefeed/sluice/internal/lib/storage"
)

// FileNotifier tells the engine of a followed table's commits from file
// notifications (--watch-files), where the files that a commit changes are
// local: the SQLite file of an sql catalog (one file for all its tables:
// each commit pokes every followed table of the catalog), the metadata
// folder of a hadoop table, the _delta_log folder of a Delta table.
// Nothing else can be watched (a rest catalog, object storage): polling
// alone finds those commits, as it finds any commit a notification missed.
type FileNotifier struct {
	w   *fswatch.Watcher
	log *slog.Logger
	// sqlFile is the sql catalog's SQLite file ("" for another type);
	// hadoopDir the hadoop catalog's local warehouse ("" otherwise).
	sqlFile, hadoopDir string
	// delta serves the Delta tables (nil: none); deltaRemote is set when
	// its root is on object storage.
	delta       *catalog.DeltaTables
	deltaRemote bool
	// warned is set once a watch failed: later failures log at debug.
	warned atomic.Bool
}

// NewFileNotifier returns the notifier of the tables of cat (opened from
// cfg) and of delta (nil: none, else opened from deltaCfg); Close stops
// its watches.
func NewFileNotifier(cfg catalog.Config, deltaCfg catalog.DeltaConfig, cat *catalog.Catalog, delta *catalog.DeltaTables,
	log *slog.Logger) *FileNotifier {
	n := &FileNotifier{log: log, delta: delta, deltaRemote: storage.IsURL(deltaCfg.Root)}
	switch cfg.Type {
	case catalog.TypeSQL:
		n.sqlFile = cat.File()
	case catalog.TypeHadoop:
		n.hadoopDir, _ = cfg.LocalWarehouse()
	}
	n.w = fswatch.New(0, func(err error) {
		// The kernel's queue overflowed: events were lost, and polling
		// finds what they announced.
		log.Debug("file notifications lost", "error", err)
	})
	return n
}

// target returns the folder to watch for the table's commits and the
// names in it that a commit changes; false when nothing can be watched.
func (n *FileNotifier) target(table string) (dir string, match func(name string) bool, ok bool) {
	if n.delta != nil {
		if root, ok := n.delta.LocalDir(table); ok {
			// A commit adds the log entry NNN.json (written aside and
			// renamed, or linked, into place).
			return filepath.Join(root, "_delta_log"), func(name string) bool {
				return strings.HasSuffix(name, ".json")
			}, true
		}
		// On object storage (a name under a remote root is not looked up:
		// that would ask the storage).
		if n.deltaRemote && strings.HasPrefix(table, catalog.DeltaNamespace+".") || n.delta.Has(table) {
			return "", nil, false
		}
	}
	switch {
	case n.sqlFile != "":
		// A commit updates the table's row: the file, or its journal or
		// write-ahead log, changes.
		base := filepath.Base(n.sqlFile)
		return filepath.Dir(n.sqlFile), func(name string) bool {
			return name == base || name == base+"-wal" || name == base+"-journal"
		}, true
	case n.hadoopDir != "":
		ident, err := catalog.ParseName(table)
		if err != nil {
			return "", nil, false
		}
		// A commit renames vN.metadata.json into place, then rewrites
		// version-hint.text.
		return filepath.Join(append(append([]string{n.hadoopDir}, ident...), "metadata")...), func(name string) bool {
			return name == "version-hint.text" || strings.HasSuffix(name, ".metadata.json")
		}, true
	}
	return "", nil, false
}

// NotifyChanges calls changed after each change of the files that the
// table's commits change, until stop; nil when they cannot be watched
// (logged once at warn: polling finds the commits, a poll interval later).
func (n *FileNotifier) NotifyChanges(table string, changed func()) (stop func()) {
	dir, match, ok := n.target(table)
	if !ok {
		return nil
	}
	stop, err := n.w.Watch(dir, match, changed)
	if err != nil {
		level := slog.LevelDebug
		if n.warned.CompareAndSwap(false, true) {
			level = slog.LevelWarn
		}
		n.log.Log(context.Background(), level, "cannot watch a followed table's files: its commits are found by polling",
			"table", table, "folder", dir, "error", err.Error())
		return nil
	}
	n.log.Debug("watching a followed table's files", "table", table, "folder", dir)
	return stop
}

// Close stops every watch.
func (n *FileNotifier) Close() error { return n.w.Close() }

// NotifyChanges is the file notifications of the table's commits (see
// FileNotifier), when --watch-files is on.
func (s *Tables) NotifyChanges(table string, changed func()) (stop func()) {
	if s.notify == nil {
		return nil
	}
	return s.notify.NotifyChanges(table, changed)
}
