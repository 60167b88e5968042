package daemon

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/registry"
	"github.com/sluicefeed/sluice/server"
)

// Defaults of ProtectConfig.
const (
	// DefaultProtectMaxRefAge is the max-ref-age-ms of consumers' Iceberg
	// tags: a consumer that acknowledges nothing for this long no longer
	// holds its snapshot.
	DefaultProtectMaxRefAge = 7 * 24 * time.Hour
	// DefaultRetentionCheck is how often the lag of protected consumers of
	// Delta tables is checked against the tables' retention.
	DefaultRetentionCheck = time.Minute
)

// The server implements consumer protection with the registry's
// Protector.
var _ server.ConsumerGuard = (*registry.Protector)(nil)

// ProtectConfig configures the protection of consumers' snapshots from
// the tables' expiry (YAML protect:).
type ProtectConfig struct {
	// Consumers lets a consumer's ack ask that its snapshot be kept from
	// expiry (--protect-consumers, SLUICE_PROTECT_CONSUMERS;
	// protect.consumers in YAML): an Iceberg table gets the tag
	// sluice-consumer-<id>, committed through the catalog and moved on
	// each such ack; a Paimon table a consumer file; a Delta table's lag
	// is watched against its retention (a metric and a warning). Sluice
	// then writes to the tables' catalogs and storage, which must accept
	// its writes. Default false: Sluice writes nothing, and an expired
	// consumer gets the resync event.
	Consumers bool `yaml:"consumers"`
	// MaxRefAge is the max-ref-age-ms of the Iceberg tags
	// (--protect-max-ref-age, SLUICE_PROTECT_MAX_REF_AGE;
	// protect.max_ref_age): an abandoned consumer holds its snapshot no
	// longer than this past the snapshot's commit. Default 168h (7 days).
	MaxRefAge time.Duration `yaml:"max_ref_age"`
	// RetentionCheck is how often the lag of protected consumers of Delta
	// tables is checked (protect.retention_check). Default 1m.
	RetentionCheck time.Duration `yaml:"retention_check"`
}

// validate checks the settings.
func (p ProtectConfig) validate() error {
	if p.MaxRefAge <= 0 {
		return fmt.Errorf("%w: --protect-max-ref-age %s: must be positive", ErrConfig, p.MaxRefAge)
	}
	if p.RetentionCheck <= 0 {
		return fmt.Errorf("%w: protect.retention_check %s: must be positive", ErrConfig, p.RetentionCheck)
	}
	return nil
}

// startProtection returns the consumer guard of the tables when the
// configuration protects consumers (nil otherwise), having checked at
// start that their catalog and storage take writes: a read-only one is a
// configuration error. Either way it says in the log what happens to a
// consumer whose snapshot expires.
func startProtection(cfg Config, tables *registry.Tables, log *slog.Logger) (*registry.Protector, error) {
	if !cfg.Protect.Consumers {
		log.Info("consumer protection off: Sluice writes nothing to the tables; a consumer whose snapshot " +
			"expires gets a resync event (on_gap), as always (--protect-consumers turns it on)")
		return nil, nil
	}
	p := tables.Protector(cfg.Protect.MaxRefAge)
	if err := p.CheckWritable(); err != nil {
		if errors.Is(err, catalog.ErrReadOnly) {
			return nil, fmt.Errorf("%w: --protect-consumers writes consumers' tags and consumer files, and %v: "+
				"make it writable, or leave protection off", ErrConfig, err)
		}
		return nil, err
	}
	log.Info("consumer protection on: an ack with protect pins the consumer's snapshot (Iceberg: tag "+
		catalog.ConsumerTagPrefix+"<id>; Paimon: a consumer file; Delta: its lag watched against the "+
		"table's retention)", "max_ref_age", cfg.Protect.MaxRefAge, "retention_check", cfg.Protect.RetentionCheck)
	return p, nil
}

// consumerGuard is p as the server's guard: nil (no protection) for a nil
// p, never a non-nil interface around a nil pointer.
func consumerGuard(p *registry.Protector) server.ConsumerGuard {
	if p == nil {
		return nil
	}
	return p
}
