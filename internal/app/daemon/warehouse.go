package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/internal/lib/storage"
)

// prepareWarehouse checks the catalog configuration before it is opened
// (catalog.Preflight: a missing warehouse, an empty catalog about to be
// created beside another catalog's files, tables under another catalog
// name), after creating the warehouse directory of --demo when it is
// absent: the demo starts from nothing.
func prepareWarehouse(ctx context.Context, cfg Config) error {
	if cfg.Demo && cfg.Catalog.Type != catalog.TypeREST {
		if dir, ok := cfg.Catalog.LocalWarehouse(); ok {
			if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return fmt.Errorf("demo: create the warehouse %s: %w", dir, err)
				}
			}
		}
	}
	return catalog.Preflight(ctx, cfg.Catalog)
}

// checkProgressDir names the directory of the default consumer progress
// store when it does not exist, rather than let SQLite say "unable to open
// database file". (The default is in the warehouse, which the catalog's
// preflight checks too; a REST catalog's warehouse is not checked there.)
func checkProgressDir(cfg Config) error {
	if cfg.Progress.DSN != "" {
		return nil
	}
	dsn := cfg.ProgressDSN()
	dir := filepath.Dir(dsn)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: the consumer progress store's default place is %s, but the warehouse directory %s does not exist: check --warehouse, or set --progress-dsn",
			ErrConfig, dsn, dir)
	}
	return nil
}

// storageProperties returns the catalog's properties as its tables' file
// IO gets them: merged with its properties file, references resolved.
func storageProperties(cfg Config) (map[string]string, error) {
	props, err := cfg.Catalog.MergedProperties()
	if err == nil {
		props, err = catalog.ResolveProperties(props)
	}
	if err != nil {
		return nil, configError{err}
	}
	return props, nil
}

// checkWarehouseStorage asks the object storage of a warehouse given as a
// URL (s3://bucket/path) whether it can be read, before the catalog is
// opened: a bucket that does not exist, refused credentials or a missing
// region stop flightd, naming the cause (its tables could not be read);
// storage that cannot be reached may come back: a warning. A REST
// catalog's warehouse is the server's, and its tables are read with the
// locations and credentials it gives per table: not checked.
func checkWarehouseStorage(ctx context.Context, cfg Config, log *slog.Logger) error {
	wh := cfg.Catalog.Warehouse
	if !storage.IsURL(wh) || cfg.Catalog.Type == catalog.TypeREST {
		return nil
	}
	props, err := storageProperties(cfg)
	if err != nil {
		return err
	}
	fsys, err := storage.Open(ctx, wh, props)
	if err == nil {
		err = fsys.Check(ctx)
	}
	switch {
	case err == nil, errors.Is(err, fs.ErrNotExist):
		return nil // nothing under it yet is a new warehouse
	case errors.Is(err, storage.ErrUnavailable):
		log.Warn("the warehouse's storage cannot be read now; reads of its tables fail until it can",
			"warehouse", wh, "error", err)
		return nil
	}
	return fmt.Errorf("%w: warehouse %s: %w", ErrConfig, wh, err)
}

// newDeltaTables returns the Delta tables of cfg. Those on object storage
// are read with the catalog's storage properties, as the catalog's own
// tables are.
func newDeltaTables(ctx context.Context, cfg Config) (*catalog.DeltaTables, error) {
	props, err := storageProperties(cfg)
	if err != nil {
		return nil, err
	}
	// Their requests outlive ctx: a stop lets running reads finish
	// (ShutdownTimeout) rather than cut their storage requests short.
	return catalog.NewDeltaTables(context.WithoutCancel(ctx), cfg.Delta, props), nil
}
