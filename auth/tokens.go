package auth

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"go.yaml.in/yaml/v3"
)

// TokensFile is the format of Config.TokensFile.
type TokensFile struct {
	// Tokens are the static bearer tokens, each mapped to a principal.
	Tokens []TokenEntry `yaml:"tokens"`
}

// TokenEntry is one static bearer token.
type TokenEntry struct {
	// Principal is the name of the caller that sends the token.
	Principal string `yaml:"principal"`
	// SHA256 is the hex SHA-256 of the token (HashToken); the token itself
	// is never stored.
	SHA256 string `yaml:"sha256"`
}

// HashToken returns the hex SHA-256 of a bearer token: the form in which
// the tokens file stores it. A fast hash is enough because tokens are long
// random strings (NewToken), not passwords.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// NewToken returns a new random bearer token (256 bits, base64url), to be
// given to a client and stored in the tokens file as HashToken(token).
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("auth: random token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// staticToken is a loaded TokenEntry.
type staticToken struct {
	principal string
	sum       []byte
}

// staticTokens are the tokens of a tokens file. They are immutable.
type staticTokens []staticToken

// loadTokens reads and checks a tokens file.
func loadTokens(path string) (staticTokens, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: tokens file: %v", ErrInvalidConfig, err)
	}
	toks, err := parseTokens(data)
	if err != nil {
		return nil, fmt.Errorf("%w: tokens file %s: %v", ErrInvalidConfig, path, err)
	}
	return toks, nil
}

func parseTokens(data []byte) (staticTokens, error) {
	var f TokensFile
	if err := decodeStrict(data, &f); err != nil {
		return nil, err
	}
	toks := make(staticTokens, 0, len(f.Tokens))
	for i, e := range f.Tokens {
		if e.Principal == "" || len(e.Principal) > maxNameLen {
			return nil, fmt.Errorf("token %d: principal of %d bytes: want 1 to %d", i+1, len(e.Principal), maxNameLen)
		}
		sum, err := hex.DecodeString(e.SHA256)
		if err != nil || len(sum) != sha256.Size {
			return nil, fmt.Errorf("token %d (principal %q): sha256 is not 64 hex digits", i+1, e.Principal)
		}
		for _, t := range toks {
			if bytes.Equal(t.sum, sum) {
				return nil, fmt.Errorf("token %d (principal %q): the same token as principal %q", i+1, e.Principal, t.principal)
			}
		}
		toks = append(toks, staticToken{principal: e.Principal, sum: sum})
	}
	return toks, nil
}

// lookup returns the principal of a token. It compares the token's hash
// with every entry in constant time, so the time taken tells nothing about
// which entry, if any, matched.
func (ts staticTokens) lookup(token string) (string, bool) {
	sum := sha256.Sum256([]byte(token))
	found := -1
	for i, t := range ts {
		if subtle.ConstantTimeCompare(sum[:], t.sum) == 1 {
			found = i
		}
	}
	if found < 0 {
		return "", false
	}
	return ts[found].principal, true
}

// decodeStrict decodes one YAML document into v, refusing unknown keys.
func decodeStrict(data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}
