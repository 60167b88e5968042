package auth

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func testIssuer(t *testing.T, ttl time.Duration) *issuer {
	t.Helper()
	s, err := newIssuer(writeFile(t, "secret", strings.Repeat("k", MinSecretBytes)+"\n"), ttl)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestIssuedTokens(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := testIssuer(t, time.Hour)
	tok, expires, err := s.issue("alice", now)
	if err != nil {
		t.Fatal(err)
	}
	if !expires.Equal(now.Add(time.Hour)) {
		t.Fatalf("expires %s", expires)
	}
	other, err := newIssuer("", time.Hour) // a random secret
	if err != nil {
		t.Fatal(err)
	}
	longer := testIssuer(t, 2*time.Hour)
	longTok, _, err := longer.issue("alice", now)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		s       *issuer
		tok     string
		at      time.Time
		want    string
		notMine bool // errNotIssued rather than ErrUnauthenticated
	}{
		{"valid", s, tok, now, "alice", false},
		{"valid until the last second", s, tok, now.Add(time.Hour - time.Nanosecond), "alice", false},
		{"expired", s, tok, now.Add(time.Hour), "", false},
		{"another secret", other, tok, now, "", false},
		{"longer than the TTL", s, longTok, now, "", false},
		{"longer than the TTL, within the slack", longer, longTok, now.Add(time.Hour - 30*time.Second), "alice", false},
		{"not a token", s, "abc", now, "", true},
		{"no MAC", s, tok[:strings.LastIndexByte(tok, '.')], now, "", true},
		{"truncated MAC", s, tok[:len(tok)-2], now, "", true},
		{"padded", s, tok + "=", now, "", true},
		{"a line break in the MAC", s, tok[:len(tok)-4] + "\r\n" + tok[len(tok)-4:], now, "", true},
		{"a line break in the payload", s, tok[:len(issuedPrefix)+4] + "\n" + tok[len(issuedPrefix)+4:], now, "", true},
		{"empty", s, "", now, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name, err := tt.s.verify(tt.tok, tt.at)
			switch {
			case tt.want != "":
				if err != nil || name != tt.want {
					t.Fatalf("verify = %q, %v; want %q", name, err, tt.want)
				}
			case tt.notMine:
				if !errors.Is(err, errNotIssued) {
					t.Fatalf("verify = %q, %v; want errNotIssued", name, err)
				}
			default:
				if !errors.Is(err, ErrUnauthenticated) {
					t.Fatalf("verify = %q, %v; want ErrUnauthenticated", name, err)
				}
			}
		})
	}
}

// TestIssuedTokenTampered changes every character of a token in turn: no
// changed token is accepted.
func TestIssuedTokenTampered(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := testIssuer(t, time.Hour)
	tok, _, err := s.issue("alice", now)
	if err != nil {
		t.Fatal(err)
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_."
	for i := range len(tok) {
		for _, c := range []byte(alphabet) {
			if c == tok[i] {
				continue
			}
			changed := tok[:i] + string(c) + tok[i+1:]
			if name, err := s.verify(changed, now); err == nil {
				t.Fatalf("tampered token %q accepted as %q", changed, name)
			}
		}
	}
	// A forged payload: another name and a later expiry, the original MAC.
	forged, _, err := s.issue("mallory", now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	spliced := forged[:strings.LastIndexByte(forged, '.')] + tok[strings.LastIndexByte(tok, '.'):]
	if _, err := s.verify(spliced, now); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("spliced token: %v", err)
	}
}

func TestIssueName(t *testing.T) {
	s := testIssuer(t, time.Hour)
	for _, name := range []string{"", strings.Repeat("n", maxNameLen+1)} {
		if _, _, err := s.issue(name, time.Now()); err == nil {
			t.Fatalf("issue(%d bytes) succeeded", len(name))
		}
	}
	tok, _, err := s.issue(strings.Repeat("n", maxNameLen), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(tok) > maxIssuedLen {
		t.Fatalf("token of the longest name is %d bytes, above maxIssuedLen %d", len(tok), maxIssuedLen)
	}
	if _, err := s.verify(tok, time.Now()); err != nil {
		t.Fatal(err)
	}
}

func TestSecretFile(t *testing.T) {
	tests := []struct {
		name string
		file string
		ok   bool
	}{
		{"long enough", writeFile(t, "s", strings.Repeat("x", MinSecretBytes)), true},
		{"long enough with a newline", writeFile(t, "s", strings.Repeat("x", MinSecretBytes)+"\r\n"), true},
		{"too short", writeFile(t, "s", strings.Repeat("x", MinSecretBytes-1)+"\n"), false},
		{"missing", filepath.Join(t.TempDir(), "nonexistent"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newIssuer(tt.file, time.Hour)
			if tt.ok != (err == nil) {
				t.Fatalf("newIssuer: %v", err)
			}
			if err != nil && !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("newIssuer: %v, want ErrInvalidConfig", err)
			}
		})
	}
	// The same secret file signs the same tokens: they survive a restart.
	file := writeFile(t, "s", strings.Repeat("y", 40))
	a, _ := newIssuer(file, time.Hour)
	b, _ := newIssuer(file, time.Hour)
	now := time.Now()
	tok, _, _ := a.issue("alice", now)
	if name, err := b.verify(tok, now); err != nil || name != "alice" {
		t.Fatalf("another issuer of the same secret: %q, %v", name, err)
	}
}
