package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/sluicefeed/sluice/catalog"
)

// Backoff of the catalog's start: the wait between attempts doubles from
// startFirstWait to startMaxWait; each attempt has startAttemptTimeout to
// answer.
const (
	startFirstWait      = 500 * time.Millisecond
	startMaxWait        = 15 * time.Second
	startAttemptTimeout = 30 * time.Second
)

// logCatalog logs the catalog's configuration at start, secret property
// values redacted, and a warning for each property name iceberg-go would
// ignore (catalog.CheckProperties).
func logCatalog(cfg Config, log *slog.Logger) error {
	props, err := cfg.Catalog.MergedProperties()
	if err != nil {
		return err
	}
	attrs := []any{"type", cfg.Catalog.Type, "name", cfg.Catalog.Name}
	if cfg.Catalog.URI != "" {
		attrs = append(attrs, "uri", catalog.RedactURI(cfg.Catalog.URI))
	}
	if cfg.Catalog.Warehouse != "" {
		attrs = append(attrs, "warehouse", cfg.Catalog.Warehouse)
	}
	if len(props) > 0 {
		attrs = append(attrs, "properties", catalog.RedactProperties(props))
	}
	log.Info("catalog", attrs...)
	for _, w := range catalog.CheckProperties(cfg.Catalog.Type, props) {
		log.Warn(w)
	}
	if props[catalog.PropTLSSkipVerify] == "true" {
		log.Warn("the REST catalog's TLS certificate is not verified (rest.tls.skip-verify=true): " +
			"anyone on the path can read its credentials")
	}
	if cfg.Catalog.Type == catalog.TypeREST && cfg.Progress.DSN == "" {
		abs, _ := filepath.Abs(DefaultProgressFile)
		log.Info("consumer progress is kept in the working directory: a rest catalog has no local warehouse "+
			"(set --progress-dsn to keep it elsewhere, postgres://... for replicas)", "progress", abs)
	}
	return nil
}

// openCatalog opens the catalog. While it is unavailable (a REST server
// down or failing: catalog.ErrUnavailable) it retries, the wait doubling
// from startFirstWait to startMaxWait, each attempt logged with its cause,
// for up to cfg.Catalog.StartTimeout; any other error (credentials
// refused, not a REST catalog, a bad configuration) ends it at once.
func openCatalog(ctx context.Context, cfg Config, log *slog.Logger) (*catalog.Catalog, error) {
	start := time.Now()
	deadline := start.Add(cfg.Catalog.StartTimeout)
	wait := startFirstWait
	for attempt := 1; ; attempt++ {
		cat, err := openAttempt(ctx, cfg.Catalog, startAttemptTimeout)
		if err == nil {
			if attempt > 1 {
				log.Info("catalog open", "attempts", attempt, "after", time.Since(start).Round(time.Millisecond))
			}
			return cat, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !errors.Is(err, catalog.ErrUnavailable) {
			return nil, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			if attempt == 1 {
				return nil, err
			}
			return nil, fmt.Errorf("%w (still unavailable after %d attempts in %s: --catalog-start-timeout %s)", err,
				attempt, time.Since(start).Round(time.Second), cfg.Catalog.StartTimeout)
		}
		wait = min(wait, left.Round(time.Millisecond))
		log.Warn("catalog unavailable at start, retrying", "attempt", attempt, "retry_in", wait, "error", err.Error())
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, startMaxWait)
	}
}

// openAttempt opens the catalog, giving its server up to timeout to answer.
func openAttempt(ctx context.Context, cfg catalog.Config, timeout time.Duration) (*catalog.Catalog, error) {
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return catalog.Open(actx, cfg)
}
