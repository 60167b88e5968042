package auth

import (
	"strings"
	"testing"
)

func TestHashToken(t *testing.T) {
	// echo -n s3cret | sha256sum
	if got, want := HashToken("s3cret"), "1ec1c26b50d5d3c58d9583181af8076655fe00756bf7285940ba3670f99fcba0"; got != want {
		t.Fatalf("HashToken = %s, want %s", got, want)
	}
	a, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewToken()
	if a == b || len(a) != 43 {
		t.Fatalf("NewToken: %q, %q", a, b)
	}
}

func TestParseTokens(t *testing.T) {
	h1, h2 := HashToken("one"), HashToken("two")
	tests := []struct {
		name string
		yaml string
		ok   bool
	}{
		{"two tokens", "tokens:\n  - {principal: a, sha256: " + h1 + "}\n  - {principal: b, sha256: " + strings.ToUpper(h2) + "}\n", true},
		{"empty file", "", true},
		{"no tokens", "tokens: []\n", true},
		{"same principal twice", "tokens:\n  - {principal: a, sha256: " + h1 + "}\n  - {principal: a, sha256: " + h2 + "}\n", true},
		{"same token twice", "tokens:\n  - {principal: a, sha256: " + h1 + "}\n  - {principal: b, sha256: " + h1 + "}\n", false},
		{"no principal", "tokens:\n  - {sha256: " + h1 + "}\n", false},
		{"short hash", "tokens:\n  - {principal: a, sha256: " + h1[:62] + "}\n", false},
		{"not hex", "tokens:\n  - {principal: a, sha256: " + strings.Repeat("z", 64) + "}\n", false},
		{"token in clear", "tokens:\n  - {principal: a, token: one}\n", false},
		{"unknown key", "token:\n  - {principal: a, sha256: " + h1 + "}\n", false},
		{"not YAML", "tokens: [", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseTokens([]byte(tt.yaml))
			if tt.ok != (err == nil) {
				t.Fatalf("parseTokens: %v", err)
			}
		})
	}
}

func TestTokenLookup(t *testing.T) {
	toks, err := parseTokens([]byte("tokens:\n  - {principal: a, sha256: " + HashToken("one") +
		"}\n  - {principal: b, sha256: " + strings.ToUpper(HashToken("two")) + "}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for tok, want := range map[string]string{"one": "a", "two": "b", "three": "", "": "", "ONE": ""} {
		name, ok := toks.lookup(tok)
		if name != want || ok != (want != "") {
			t.Errorf("lookup(%q) = %q, %v; want %q", tok, name, ok, want)
		}
	}
}
