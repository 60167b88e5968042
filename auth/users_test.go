package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// testHash is a cheap bcrypt hash for tests.
func testHash(t testing.TB, password string) string {
	t.Helper()
	h, err := hashPassword(password, bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestHashPassword(t *testing.T) {
	h, err := HashPassword("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if cost, err := bcrypt.Cost([]byte(h)); err != nil || cost != PasswordCost {
		t.Fatalf("cost %d, %v", cost, err)
	}
	if bcrypt.CompareHashAndPassword([]byte(h), []byte("correct horse")) != nil {
		t.Fatal("the hash does not verify")
	}
	for _, pw := range []string{"", strings.Repeat("x", 73)} {
		if _, err := HashPassword(pw); err == nil {
			t.Fatalf("HashPassword of %d bytes succeeded", len(pw))
		}
	}
}

func TestParseUsers(t *testing.T) {
	h := testHash(t, "pw")
	tooCostly := "$2a$17$" + h[7:]
	tests := []struct {
		name string
		yaml string
		ok   bool
	}{
		{"two users", fmt.Sprintf("users:\n  - {name: alice, bcrypt: %q}\n  - {name: bob, bcrypt: %q}\n", h, h), true},
		{"empty file", "", true},
		{"same user twice", fmt.Sprintf("users:\n  - {name: alice, bcrypt: %q}\n  - {name: alice, bcrypt: %q}\n", h, h), false},
		{"no name", fmt.Sprintf("users:\n  - {bcrypt: %q}\n", h), false},
		{"password in clear", "users:\n  - {name: alice, bcrypt: hunter2}\n", false},
		{"cost too high", fmt.Sprintf("users:\n  - {name: alice, bcrypt: %q}\n", tooCostly), false},
		{"unknown key", fmt.Sprintf("users:\n  - {name: alice, password: %q}\n", h), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseUsers([]byte(tt.yaml))
			if tt.ok != (err == nil) {
				t.Fatalf("parseUsers: %v", err)
			}
		})
	}
}

func TestUsersVerify(t *testing.T) {
	us, err := parseUsers([]byte(fmt.Sprintf("users:\n  - {name: alice, bcrypt: %q}\n", testHash(t, "pw"))))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tt := range []struct {
		user, pw string
		want     bool
	}{{"alice", "pw", true}, {"alice", "PW", false}, {"alice", "", false}, {"bob", "pw", false}} {
		if ok, err := us.verify(ctx, tt.user, tt.pw); ok != tt.want || err != nil {
			t.Errorf("verify(%q, %q) = %v, %v; want %v", tt.user, tt.pw, ok, err, tt.want)
		}
	}
	// Every slot taken: a canceled caller does not wait.
	for range cap(us.sem) {
		us.sem <- struct{}{}
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := us.verify(canceled, "alice", "pw"); !errors.Is(err, context.Canceled) {
		t.Fatalf("verify with every slot taken: %v", err)
	}
}
