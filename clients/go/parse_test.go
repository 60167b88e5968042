package sluice

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"slices"
	"testing"
)

func TestParseMeta(t *testing.T) {
	tests := []struct {
		name string
		meta string
		rows int64
		want BatchMeta
		ok   bool
	}{
		{"server form", `{"snapshot":7,"commit_seq":3,"snapshot_complete":true,"timestamp_ms":1700,"rows":2}`, 2,
			BatchMeta{Snapshot: 7, CommitSeq: 3, SnapshotComplete: true, TimestampMs: 1700, Rows: 2}, true},
		{"minimal", `{"snapshot":7,"commit_seq":3,"snapshot_complete":false}`, 5,
			BatchMeta{Snapshot: 7, CommitSeq: 3, Rows: 5}, true},
		{"unknown fields are ignored", `{"snapshot":1,"commit_seq":1,"snapshot_complete":true,"cursor":"x"}`, 0,
			BatchMeta{Snapshot: 1, CommitSeq: 1, SnapshotComplete: true}, true},
		{"missing", ``, 1, BatchMeta{}, false},
		{"blank", " \n", 1, BatchMeta{}, false},
		{"not JSON", `snapshot=1`, 1, BatchMeta{}, false},
		{"not an object", `[1,2]`, 1, BatchMeta{}, false},
		{"no snapshot", `{"commit_seq":1,"snapshot_complete":true}`, 1, BatchMeta{}, false},
		{"no commit_seq", `{"snapshot":1,"snapshot_complete":true}`, 1, BatchMeta{}, false},
		{"no snapshot_complete", `{"snapshot":1,"commit_seq":1}`, 1, BatchMeta{}, false},
		{"wrong type", `{"snapshot":"1","commit_seq":1,"snapshot_complete":true}`, 1, BatchMeta{}, false},
		{"row count mismatch", `{"snapshot":1,"commit_seq":1,"snapshot_complete":true,"rows":3}`, 2, BatchMeta{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseMeta([]byte(tt.meta), tt.rows)
			if tt.ok {
				if err != nil || got != tt.want {
					t.Errorf("parseMeta = %+v, %v; want %+v", got, err, tt.want)
				}
				return
			}
			if !errors.Is(err, ErrProtocol) {
				t.Errorf("parseMeta = %+v, %v; want an ErrProtocol error", got, err)
			}
		})
	}
}

// FuzzParseMeta checks that app_metadata from the network never panics the
// parser, and that an accepted one matches the batch.
func FuzzParseMeta(f *testing.F) {
	f.Add([]byte(`{"snapshot":7,"commit_seq":3,"snapshot_complete":true,"timestamp_ms":1700,"rows":2}`), int64(2))
	f.Add([]byte(`{"snapshot":1,"commit_seq":1,"snapshot_complete":false}`), int64(0))
	f.Add([]byte(`{"snapshot":null}`), int64(1))
	f.Add([]byte{}, int64(0))
	f.Fuzz(func(t *testing.T, b []byte, rows int64) {
		m, err := parseMeta(b, rows)
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("error %v is not ErrProtocol", err)
			}
			return
		}
		if m.Rows != rows {
			t.Fatalf("accepted meta with %d rows for a batch of %d", m.Rows, rows)
		}
	})
}

func TestParseAddr(t *testing.T) {
	tests := []struct {
		addr   string
		target string
		scheme string
		ok     bool
	}{
		{"127.0.0.1:8815", "127.0.0.1:8815", "", true},
		{"localhost:8815", "localhost:8815", "", true},
		{"[::1]:8815", "[::1]:8815", "", true},
		{"grpc://sluice:8815", "sluice:8815", schemeGRPC, true},
		{"grpc+tcp://sluice:8815", "sluice:8815", schemeTCP, true},
		{"grpc+tls://sluice.example.com:443", "sluice.example.com:443", schemeTLS, true},
		{"grpc://sluice:8815/", "sluice:8815", schemeGRPC, true},
		{"", "", "", false},
		{"sluice", "", "", false},
		{"sluice:", "", "", false},
		{":8815", "", "", false},
		{"http://sluice:8815", "", "", false},
		{"grpc+unix:///tmp/sock", "", "", false},
		{"grpc://", "", "", false},
		{"grpc://sluice:8815/x", "", "", false},
		{"grpc://u@sluice:8815", "", "", false},
		{"grpc://sluice:8815?x=1", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			target, scheme, err := parseAddr(tt.addr)
			if !tt.ok {
				if !errors.Is(err, errBadAddr) {
					t.Errorf("parseAddr(%q) = %q, %q, %v; want an invalid address error", tt.addr, target, scheme, err)
				}
				return
			}
			if err != nil || target != tt.target || scheme != tt.scheme {
				t.Errorf("parseAddr(%q) = %q, %q, %v; want %q, %q", tt.addr, target, scheme, err, tt.target, tt.scheme)
			}
		})
	}
}

// tokenExpiry reads the expiry of tokens Sluice issues and no other.
func TestTokenExpiry(t *testing.T) {
	payload := binary.BigEndian.AppendUint64(nil, 1_800_000_000)
	payload = append(payload, "alice"...)
	tok := "sluice1." + base64.RawURLEncoding.EncodeToString(payload) + ".bWFj"
	if exp, ok := tokenExpiry(tok); !ok || exp.Unix() != 1_800_000_000 {
		t.Fatalf("tokenExpiry(%q) = %v, %v", tok, exp, ok)
	}
	for _, bad := range []string{"", "static-token", "sluice1.!!.mac", "sluice1.AAAA.mac", "other." +
		base64.RawURLEncoding.EncodeToString(payload) + ".mac"} {
		if exp, ok := tokenExpiry(bad); ok {
			t.Fatalf("tokenExpiry(%q) = %v, want none", bad, exp)
		}
	}
}

func TestParseAddrs(t *testing.T) {
	tests := []struct {
		addr    string
		targets []string
		scheme  string
		ok      bool
	}{
		{"grpc://a:1,b:2,c:3", []string{"a:1", "b:2", "c:3"}, schemeGRPC, true},
		{"grpc+tls://a:1, grpc+tls://b:2", []string{"a:1", "b:2"}, schemeTLS, true},
		{"a:1,b:2", []string{"a:1", "b:2"}, "", true},
		{"a:1", []string{"a:1"}, "", true},
		{"grpc://a:1,grpc+tls://b:2", nil, "", false},
		{"a:1,grpc://b:2", nil, "", false},
		{"grpc://a:1,a:1", nil, "", false},
		{"grpc://a:1,", nil, "", false},
		{"grpc://a:1,b", nil, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			targets, scheme, err := parseAddrs(tt.addr)
			if !tt.ok {
				if !errors.Is(err, errBadAddr) {
					t.Errorf("parseAddrs(%q) = %q, %q, %v; want an invalid address error", tt.addr, targets, scheme, err)
				}
				return
			}
			if err != nil || !slices.Equal(targets, tt.targets) || scheme != tt.scheme {
				t.Errorf("parseAddrs(%q) = %q, %q, %v; want %q, %q", tt.addr, targets, scheme, err, tt.targets, tt.scheme)
			}
		})
	}
}
