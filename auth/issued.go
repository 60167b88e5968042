package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// An issued token is
//
//	sluice1.<base64url(payload)>.<base64url(mac)>
//
// where payload is the expiry (Unix seconds, 8 bytes big-endian) followed by
// the principal name, and mac is HMAC-SHA256 with the server secret over
// "sluice1." and the encoded payload. base64url is unpadded and strict, so a
// token has exactly one spelling.
const (
	issuedPrefix   = "sluice1."
	maxNameLen     = 256
	maxIssuedLen   = len(issuedPrefix) + (8+maxNameLen+2)/3*4 + 1 + (sha256.Size+2)/3*4
	expirySize     = 8
	issuedClockAge = time.Minute // slack for a TTL lowered or a clock stepped back
)

var b64 = base64.RawURLEncoding.Strict()

// issuedToken is the content of a token the Handshake issued.
type issuedToken struct {
	name    string
	expires time.Time
	mac     []byte
	signed  string // prefix and encoded payload: what mac covers
}

// errNotIssued reports a string that is not an issued token at all.
var errNotIssued = errors.New("not an issued token")

// parseIssued decodes an issued token without verifying it.
func parseIssued(tok string) (issuedToken, error) {
	if len(tok) > maxIssuedLen || !strings.HasPrefix(tok, issuedPrefix) {
		return issuedToken{}, errNotIssued
	}
	encPayload, encMAC, ok := strings.Cut(tok[len(issuedPrefix):], ".")
	// The decoder skips line breaks: refuse them, and anything else outside
	// the alphabet, so that a token has one spelling.
	if !ok || !isBase64URL(encPayload) || !isBase64URL(encMAC) {
		return issuedToken{}, errNotIssued
	}
	payload, err := b64.DecodeString(encPayload)
	if err != nil || len(payload) <= expirySize || len(payload) > expirySize+maxNameLen {
		return issuedToken{}, errNotIssued
	}
	mac, err := b64.DecodeString(encMAC)
	if err != nil || len(mac) != sha256.Size {
		return issuedToken{}, errNotIssued
	}
	exp := binary.BigEndian.Uint64(payload[:expirySize])
	if exp > 1<<62 {
		return issuedToken{}, errNotIssued
	}
	return issuedToken{
		name:    string(payload[expirySize:]),
		expires: time.Unix(int64(exp), 0),
		mac:     mac,
		signed:  tok[:len(issuedPrefix)+len(encPayload)],
	}, nil
}

// issuer signs and verifies issued tokens. It is immutable.
type issuer struct {
	secret []byte
	ttl    time.Duration
}

// newIssuer returns an issuer with the secret of secretFile, or a random
// one when secretFile is empty.
func newIssuer(secretFile string, ttl time.Duration) (*issuer, error) {
	if ttl <= 0 {
		ttl = DefaultTokenTTL
	}
	if secretFile == "" {
		secret := make([]byte, 32)
		if _, err := rand.Read(secret); err != nil {
			return nil, fmt.Errorf("auth: random token secret: %w", err)
		}
		return &issuer{secret: secret, ttl: ttl}, nil
	}
	data, err := os.ReadFile(secretFile)
	if err != nil {
		return nil, fmt.Errorf("%w: secret file: %v", ErrInvalidConfig, err)
	}
	secret := []byte(strings.TrimRight(string(data), " \t\r\n"))
	if len(secret) < MinSecretBytes {
		return nil, fmt.Errorf("%w: secret file %s: %d bytes, want at least %d", ErrInvalidConfig, secretFile, len(secret), MinSecretBytes)
	}
	return &issuer{secret: secret, ttl: ttl}, nil
}

func (s *issuer) mac(signed string) []byte {
	h := hmac.New(sha256.New, s.secret)
	h.Write([]byte(signed))
	return h.Sum(nil)
}

// issue returns a token for name valid until now plus the TTL (rounded
// down to the second).
func (s *issuer) issue(name string, now time.Time) (string, time.Time, error) {
	if name == "" || len(name) > maxNameLen {
		return "", time.Time{}, fmt.Errorf("%w: principal name of %d bytes: want 1 to %d", ErrUnauthenticated, len(name), maxNameLen)
	}
	expires := now.Add(s.ttl).Truncate(time.Second)
	payload := make([]byte, expirySize, expirySize+len(name))
	binary.BigEndian.PutUint64(payload, uint64(expires.Unix()))
	payload = append(payload, name...)
	signed := issuedPrefix + b64.EncodeToString(payload)
	return signed + "." + b64.EncodeToString(s.mac(signed)), expires, nil
}

// verify returns the principal name of a token this issuer signed and that
// has not expired at now. errNotIssued means tok is not an issued token.
func (s *issuer) verify(tok string, now time.Time) (string, error) {
	t, err := parseIssued(tok)
	if err != nil {
		return "", err
	}
	if !hmac.Equal(t.mac, s.mac(t.signed)) {
		return "", fmt.Errorf("%w: unknown bearer token", ErrUnauthenticated)
	}
	if !now.Before(t.expires) {
		return "", fmt.Errorf("%w: bearer token of %q expired at %s: authenticate again", ErrUnauthenticated,
			t.name, t.expires.UTC().Format(time.RFC3339))
	}
	if t.expires.After(now.Add(s.ttl + issuedClockAge)) {
		return "", fmt.Errorf("%w: bearer token of %q lives longer than the token TTL: authenticate again", ErrUnauthenticated, t.name)
	}
	return t.name, nil
}

// isBase64URL reports whether s holds only characters of the base64url
// alphabet.
func isBase64URL(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}
