package server

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/progress"
)

// RetentionWarnFraction is the share of a Delta table's retention a
// protected consumer's lag may reach before WatchRetention warns: its
// files go once the lag passes the retention.
const RetentionWarnFraction = 0.75

// retentionMetric is sluice_consumer_retention_left_seconds.
func newRetentionMetric() *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sluice_consumer_retention_left_seconds",
		Help: "For each protected consumer of a Delta table (whose versions nothing can pin): the table's " +
			"retention (retention=\"log\": delta.logRetentionDuration, \"deleted_files\": " +
			"delta.deletedFileRetentionDuration) minus the age of the oldest commit the consumer has not " +
			"acknowledged; below zero, what the consumer needs may be gone."},
		[]string{"table", "consumer", "retention"})
}

// WatchRetention watches the lag of the protected consumers of tables
// whose versions nothing can pin (Delta), every interval until ctx ends:
// each consumer's retention left goes to the metric
// sluice_consumer_retention_left_seconds, and a consumer whose lag passes
// RetentionWarnFraction of a retention is logged as a warning, before its
// files go. Without a guard or a progress store it returns at once.
func (s *Server) WatchRetention(ctx context.Context, interval time.Duration) {
	if s.guard == nil || s.progress == nil {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		s.checkRetention(ctx, time.Now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RetentionLeft is a protected consumer's margin on a table's retention.
type RetentionLeft struct {
	Table, Consumer string
	// Lag is the age of the oldest commit after the consumer's
	// acknowledged snapshot (0 when caught up).
	Lag time.Duration
	// Log and DeletedFiles are the retentions minus Lag.
	Log, DeletedFiles time.Duration
}

// checkRetention checks every protected consumer once, at now.
func (s *Server) checkRetention(ctx context.Context, now time.Time) []RetentionLeft {
	cps, err := s.progress.ListProtected(ctx)
	if err != nil {
		s.log.WarnContext(ctx, "retention watch: list the protected consumers", "error", err)
		return nil
	}
	var out []RetentionLeft
	seen := map[string]prometheus.Labels{}
	for _, cp := range cps {
		logR, filesR, ok, err := s.guard.Retention(ctx, cp.Table)
		if err != nil {
			s.log.WarnContext(ctx, "retention watch: read the table's retention", "table", clipName(cp.Table),
				"error", err)
			continue
		}
		if !ok {
			continue
		}
		hist, err := s.engine.History(ctx, cp.Table)
		if err != nil {
			s.log.WarnContext(ctx, "retention watch: load the table", "table", clipName(cp.Table), "error", err)
			continue
		}
		lag := lagAge(cp, hist, now)
		r := RetentionLeft{Table: cp.Table, Consumer: cp.Consumer, Lag: lag, Log: logR - lag,
			DeletedFiles: filesR - lag}
		out = append(out, r)
		seen[cp.Table+"\x00"+cp.Consumer] = prometheus.Labels{"table": cp.Table, "consumer": cp.Consumer}
		s.metrics.retentionLeft(r)
		if lag > time.Duration(RetentionWarnFraction*float64(min(logR, filesR))) {
			s.log.WarnContext(ctx, "a protected consumer of a Delta table nears the table's retention: the log "+
				"entries and files it still needs are removed once its lag passes it (log cleanup, VACUUM); "+
				"no Delta version can be pinned",
				"table", clipName(cp.Table), "consumer", cp.Consumer, "snapshot", cp.Snapshot,
				"lag", lag.Round(time.Second), "log_retention", logR, "deleted_file_retention", filesR,
				"log_left", r.Log.Round(time.Second), "deleted_files_left", r.DeletedFiles.Round(time.Second))
		}
	}
	s.metrics.keepRetention(seen)
	return out
}

// lagAge is the age at now of the oldest commit after a checkpoint's
// snapshot: how long the consumer has left a commit unread (0 when caught
// up).
func lagAge(cp progress.Checkpoint, hist feed.History, now time.Time) time.Duration {
	for _, snap := range hist.Snapshots {
		if snap.CommitSeq > cp.CommitSeq {
			return max(0, now.Sub(time.UnixMilli(snap.TimestampMs)))
		}
	}
	return 0
}

// retentionLeft sets a consumer's retention left.
func (m *Metrics) retentionLeft(r RetentionLeft) {
	if m == nil {
		return
	}
	m.retention.WithLabelValues(r.Table, r.Consumer, "log").Set(r.Log.Seconds())
	m.retention.WithLabelValues(r.Table, r.Consumer, "deleted_files").Set(r.DeletedFiles.Seconds())
}

// keepRetention drops the retention of the consumers the last check saw
// and this one did not (reset, or no longer protected).
func (m *Metrics) keepRetention(seen map[string]prometheus.Labels) {
	if m == nil {
		return
	}
	m.retentionMu.Lock()
	defer m.retentionMu.Unlock()
	for k, l := range m.retentionSeen {
		if _, ok := seen[k]; !ok {
			m.retention.DeletePartialMatch(l)
		}
	}
	m.retentionSeen = seen
}
