package delta

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Defaults of a Delta table's retention (Delta's own).
const (
	DefaultLogRetention         = 30 * 24 * time.Hour
	DefaultDeletedFileRetention = 7 * 24 * time.Hour
)

// Retention is how long a Delta table keeps what a reader of old versions
// needs: its log entries (delta.logRetentionDuration; log cleanup at a
// checkpoint removes older ones) and the data files that commits removed
// (delta.deletedFileRetentionDuration; VACUUM deletes older ones).
type Retention struct {
	Log          time.Duration
	DeletedFiles time.Duration
}

// Retention returns the retention of the table's latest version, the
// defaults where it sets none.
func (s *Source) Retention(ctx context.Context) (Retention, error) {
	s.mu.Lock()
	g := s.gen
	s.mu.Unlock()
	vs, err := g.log.Versions(ctx)
	if err != nil {
		return Retention{}, deltaError(g.name, err)
	}
	snap, err := g.log.Snapshot(ctx, vs.Latest)
	if err != nil {
		return Retention{}, deltaError(g.name, err)
	}
	return RetentionOf(snap.Metadata.Configuration)
}

// RetentionOf reads the retention of a table's configuration.
func RetentionOf(conf map[string]string) (Retention, error) {
	r := Retention{Log: DefaultLogRetention, DeletedFiles: DefaultDeletedFileRetention}
	for key, d := range map[string]*time.Duration{"delta.logRetentionDuration": &r.Log,
		"delta.deletedFileRetentionDuration": &r.DeletedFiles} {
		v, ok := conf[key]
		if !ok {
			continue
		}
		parsed, err := ParseInterval(v)
		if err != nil {
			return Retention{}, fmt.Errorf("%w: %s: %v", ErrCorrupt, key, err)
		}
		*d = parsed
	}
	return r, nil
}

// intervalUnits are the units of a Delta interval, singular.
var intervalUnits = map[string]time.Duration{
	"nanosecond": time.Nanosecond, "microsecond": time.Microsecond, "millisecond": time.Millisecond,
	"second": time.Second, "minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour,
	"week": 7 * 24 * time.Hour,
}

// ParseInterval parses a Delta table property interval, as Spark's
// CalendarInterval writes it: "interval 30 days", "interval 1 week 2
// hours" ("interval" optional, units singular or plural, case ignored).
func ParseInterval(s string) (time.Duration, error) {
	f := strings.Fields(strings.ToLower(s))
	if len(f) > 0 && f[0] == "interval" {
		f = f[1:]
	}
	if len(f) == 0 || len(f)%2 != 0 {
		return 0, fmt.Errorf("interval %q: want \"interval <n> <unit>...\"", s)
	}
	var total time.Duration
	for i := 0; i < len(f); i += 2 {
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("interval %q: %q is not a whole number", s, f[i])
		}
		unit, ok := intervalUnits[strings.TrimSuffix(f[i+1], "s")]
		if !ok {
			return 0, fmt.Errorf("interval %q: unknown unit %q", s, f[i+1])
		}
		total += time.Duration(n) * unit
	}
	return total, nil
}
