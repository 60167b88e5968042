package testsvc

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

// TestMotoAuth: with authentication on, an unsigned request and a wrong key
// get a 403, a user's key works on its bucket and not on another, and an
// STS session of a role works until it is used beyond its policy.
func TestMotoAuth(t *testing.T) {
	start := time.Now()
	m := Moto(t, MotoOptions{Auth: true})
	t.Logf("moto started in %s", time.Since(start).Round(time.Millisecond))
	ctx := context.Background()

	m.CreateBucket(t, "mine")
	m.CreateBucket(t, "theirs")
	m.PutObject(t, "mine", "a/b.txt", []byte("hello"))
	if got := m.ListKeys(t, "mine", "a/"); len(got) != 1 || got[0] != "a/b.txt" {
		t.Fatalf("ListKeys = %v", got)
	}

	wantStatus := func(t *testing.T, err error, status int) {
		t.Helper()
		var se *StatusError
		if !errors.As(err, &se) || se.Status != status {
			t.Fatalf("got %v, want HTTP %d", err, status)
		}
	}
	_, err := m.Do(ctx, Key{}, "s3", http.MethodGet, "/mine/a/b.txt", nil)
	wantStatus(t, err, http.StatusForbidden)
	_, err = m.Do(ctx, Key{AccessKeyID: "AKIAWRONGWRONGWRONG1", SecretAccessKey: "x"}, "s3", http.MethodGet, "/mine/a/b.txt", nil)
	wantStatus(t, err, http.StatusForbidden)

	user := m.CreateUser(t, "reader", BucketPolicy("mine", "s3:GetObject", "s3:ListBucket"))
	body, err := m.Do(ctx, user, "s3", http.MethodGet, "/mine/a/b.txt", nil)
	if err != nil || string(body) != "hello" {
		t.Fatalf("user's GET = %q, %v", body, err)
	}
	_, err = m.Do(ctx, user, "s3", http.MethodGet, "/theirs?list-type=2", nil)
	wantStatus(t, err, http.StatusForbidden)
	_, err = m.Do(ctx, Key{AccessKeyID: user.AccessKeyID, SecretAccessKey: "wrong"}, "s3", http.MethodGet, "/mine/a/b.txt", nil)
	wantStatus(t, err, http.StatusForbidden)

	role := m.CreateRole(t, "vendor", BucketPolicy("mine", "s3:GetObject"))
	session, err := m.AssumeRole(ctx, m.Admin, role, 15*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if session.SessionToken == "" || time.Until(session.Expiration) < 10*time.Minute {
		t.Fatalf("session = %+v", session)
	}
	if body, err := m.Do(ctx, session, "s3", http.MethodGet, "/mine/a/b.txt", nil); err != nil || string(body) != "hello" {
		t.Fatalf("session's GET = %q, %v", body, err)
	}
	_, err = m.Do(ctx, session, "s3", http.MethodPut, "/mine/a/c.txt", []byte("no"))
	wantStatus(t, err, http.StatusForbidden)

	m.DisableAuth(t)
	if _, err := m.Do(ctx, Key{AccessKeyID: "any", SecretAccessKey: "any"}, "s3", http.MethodGet, "/mine/a/b.txt", nil); err != nil {
		t.Fatalf("with auth off: %v", err)
	}
	m.DeleteBucket(t, "mine")
	_, err = m.Do(ctx, m.Admin, "s3", http.MethodGet, "/mine?list-type=2", nil)
	wantStatus(t, err, http.StatusNotFound)
}

// TestSharedMoto: one process per binary.
func TestSharedMoto(t *testing.T) {
	a, b := SharedMoto(t), SharedMoto(t)
	if a != b {
		t.Fatal("two shared moto servers")
	}
	name := UniqueName("shared")
	a.CreateBucket(t, name)
	if keys := a.ListKeys(t, name, ""); len(keys) != 0 {
		t.Fatalf("new bucket has %v", keys)
	}
}
