package auth

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func TestParseAuthorization(t *testing.T) {
	tests := []struct {
		in           string
		scheme, cred string // scheme "" means an error
	}{
		{"Bearer abc", SchemeBearer, "abc"},
		{"bearer abc", SchemeBearer, "abc"},
		{"BEARER   abc", SchemeBearer, "abc"},
		{"  Bearer abc  ", SchemeBearer, "abc"},
		{"Basic dTpw", SchemeBasic, "dTpw"},
		{"basic dTpw==", SchemeBasic, "dTpw=="},
		{"", "", ""},
		{"Bearer", "", ""},
		{"Bearer ", "", ""},
		{"abc", "", ""},
		{"Token abc", "", ""},
		{"Bearerabc", "", ""},
		{"Bearer a b", "", ""},
		{"Bearer a\tb", "", ""},
		{"Bearer a\x00b", "", ""},
		{"Bearer ab\u00e9", "", ""},
		{"Bearer " + strings.Repeat("a", maxHeaderLen), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			scheme, cred, err := parseAuthorization(tt.in)
			if tt.scheme == "" {
				if !errors.Is(err, ErrUnauthenticated) {
					t.Fatalf("parseAuthorization(%q) = %q, %q, %v; want ErrUnauthenticated", tt.in, scheme, cred, err)
				}
				return
			}
			if err != nil || scheme != tt.scheme || cred != tt.cred {
				t.Fatalf("parseAuthorization(%q) = %q, %q, %v; want %q, %q", tt.in, scheme, cred, err, tt.scheme, tt.cred)
			}
		})
	}
}

func TestParseBasic(t *testing.T) {
	enc := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	raw := func(s string) string { return base64.RawStdEncoding.EncodeToString([]byte(s)) }
	tests := []struct {
		name     string
		in       string
		user, pw string
		ok       bool
	}{
		{"padded (pyarrow)", enc("alice:secret1"), "alice", "secret1", true},
		{"unpadded (arrow-go)", raw("alice:secret1"), "alice", "secret1", true},
		{"colon in the password", enc("alice:a:b"), "alice", "a:b", true},
		{"empty password", enc("alice:"), "alice", "", true},
		{"unicode user", enc("björn:pw"), "björn", "pw", true},
		{"no colon", enc("alice"), "", "", false},
		{"empty user", enc(":pw"), "", "", false},
		{"control character in the user", enc("al\nice:pw"), "", "", false},
		{"invalid UTF-8 user", enc("\xff:pw"), "", "", false},
		{"not base64", "***", "", "", false},
		{"password too long", enc("alice:" + strings.Repeat("x", 73)), "", "", false},
		{"longest password", enc("alice:" + strings.Repeat("x", 72)), "alice", strings.Repeat("x", 72), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			user, pw, err := parseBasic(tt.in)
			if !tt.ok {
				if !errors.Is(err, ErrUnauthenticated) {
					t.Fatalf("parseBasic = %q, %q, %v; want ErrUnauthenticated", user, pw, err)
				}
				return
			}
			if err != nil || user != tt.user || pw != tt.pw {
				t.Fatalf("parseBasic = %q, %q, %v; want %q, %q", user, pw, err, tt.user, tt.pw)
			}
		})
	}
}
