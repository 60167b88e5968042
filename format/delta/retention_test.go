package delta_test

import (
	"testing"
	"time"

	"github.com/sluicefeed/sluice/format/delta"
)

func TestParseInterval(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
	}{
		{"interval 30 days", 30 * 24 * time.Hour},
		{"interval 1 week", 7 * 24 * time.Hour},
		{"INTERVAL 1 day 2 hours", 26 * time.Hour},
		{"168 hours", 168 * time.Hour},
		{"interval 90 seconds", 90 * time.Second},
	} {
		got, err := delta.ParseInterval(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("%q: %v %v, want %v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "interval", "interval 3", "interval x days", "interval 3 fortnights"} {
		if _, err := delta.ParseInterval(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	r, err := delta.RetentionOf(map[string]string{"delta.logRetentionDuration": "interval 2 days"})
	if err != nil || r.Log != 48*time.Hour || r.DeletedFiles != delta.DefaultDeletedFileRetention {
		t.Fatalf("retention: %+v %v", r, err)
	}
	if _, err := delta.RetentionOf(map[string]string{"delta.deletedFileRetentionDuration": "soon"}); err == nil {
		t.Fatal("a bad interval: no error")
	}
}
