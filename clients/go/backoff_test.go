package sluice

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// TestDefaultMaxBackoffIsPythons keeps the two clients' reconnect
// defaults one number: the Python client's DEFAULT_MAX_BACKOFF (seconds)
// is DefaultMaxBackoff.
func TestDefaultMaxBackoffIsPythons(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "python", "sluice", "subscription.py"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^DEFAULT_MAX_BACKOFF = ([0-9.]+)$`).FindSubmatch(src)
	if m == nil {
		t.Fatal("clients/python/sluice/subscription.py defines no DEFAULT_MAX_BACKOFF")
	}
	secs, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	if py := time.Duration(secs * float64(time.Second)); py != DefaultMaxBackoff {
		t.Fatalf("Python's max_backoff defaults to %s, Go's to %s", py, DefaultMaxBackoff)
	}
}
