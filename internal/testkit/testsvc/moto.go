package testsvc

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Region is the AWS region the services here use.
const Region = "us-east-1"

// Key is a set of AWS credentials: an IAM user's access key, or an STS
// session's (with SessionToken and Expiration).
type Key struct {
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
	Expiration      time.Time // zero for an IAM user's key
}

// Env is the key as AWS_* environment variables (for a process that uses
// the AWS default credential chain), with AWS_REGION.
func (k Key) Env() []string {
	env := []string{"AWS_ACCESS_KEY_ID=" + k.AccessKeyID, "AWS_SECRET_ACCESS_KEY=" + k.SecretAccessKey, "AWS_REGION=" + Region}
	if k.SessionToken != "" {
		env = append(env, "AWS_SESSION_TOKEN="+k.SessionToken)
	}
	return env
}

// MotoServer is a running moto server: S3, IAM and STS on one loopback
// address. Admin is an IAM user allowed everything; the helpers use it, so
// they work whether or not authentication is on.
type MotoServer struct {
	Endpoint string // http://127.0.0.1:port
	Admin    Key

	proc *process
	mu   sync.Mutex // guards auth
	auth bool
}

// MotoOptions configure a moto server.
type MotoOptions struct {
	// Auth switches moto's authentication on once the admin user exists:
	// every request must then be signed with the key of an IAM user (or an
	// STS session of a role) whose policies allow it, or it gets a 403.
	Auth bool
}

// Moto starts a moto server for this test (stopped at its end). The first
// start of the process takes about two seconds; tests that need no
// authentication can share one with [SharedMoto].
func Moto(t testing.TB, opts MotoOptions) *MotoServer {
	t.Helper()
	m, err := startMoto(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	return m
}

var shared struct {
	once sync.Once
	moto *MotoServer
	err  error
}

// SharedMoto returns the test binary's one moto server without
// authentication, started on first use and ended with the binary. Tests
// that share it keep apart by bucket names (see [UniqueName]).
func SharedMoto(t testing.TB) *MotoServer {
	t.Helper()
	shared.once.Do(func() { shared.moto, shared.err = startMoto(MotoOptions{}) })
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.moto
}

func startMoto(opts MotoOptions) (*MotoServer, error) {
	py, err := python()
	if err != nil {
		return nil, err
	}
	p, addr, err := startOnFreePort(func(port int) (*process, error) {
		return startProcess("moto_server", []string{"PYTHONUNBUFFERED=1"},
			py, "-m", "moto.server", "-H", "127.0.0.1", "-p", itoa(port))
	}, func(p *process, addr string) (bool, error) {
		err := waitTCP(p, addr, 60*time.Second)
		if err != nil && strings.Contains(p.logs(), "No module named") {
			return false, fmt.Errorf("%w (is moto[server] in the venv? `make venv` installs it)", err)
		}
		return true, err
	})
	if err != nil {
		return nil, err
	}
	m := &MotoServer{Endpoint: "http://" + addr, proc: p, Admin: Key{AccessKeyID: "testing", SecretAccessKey: "testing"}}
	admin, err := m.createUser(context.Background(), "sluice-admin", AllowAll)
	if err != nil {
		m.Stop()
		return nil, err
	}
	m.Admin = admin
	if opts.Auth {
		if err := m.setAuth(true); err != nil {
			m.Stop()
			return nil, err
		}
	}
	return m, nil
}

// Stop ends the server.
func (m *MotoServer) Stop() { m.proc.stop(5 * time.Second) }

// Logs is the server's output so far.
func (m *MotoServer) Logs() string { return m.proc.logs() }

// EnableAuth switches authentication on (see [MotoOptions.Auth]).
func (m *MotoServer) EnableAuth(t testing.TB) {
	t.Helper()
	if err := m.setAuth(true); err != nil {
		t.Fatal(err)
	}
}

// DisableAuth switches authentication off: any key is accepted.
func (m *MotoServer) DisableAuth(t testing.TB) {
	t.Helper()
	if err := m.setAuth(false); err != nil {
		t.Fatal(err)
	}
}

// setAuth uses moto's /moto-api/reset-auth: the number of requests served
// before authentication starts (0: at once; "inf": never).
func (m *MotoServer) setAuth(on bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	body := "inf"
	if on {
		body = "0"
	}
	resp, err := http.Post(m.Endpoint+"/moto-api/reset-auth", "text/plain", strings.NewReader(body))
	if err != nil {
		return fmt.Errorf("moto reset-auth: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("moto reset-auth: %s: %s", resp.Status, b)
	}
	m.auth = on
	return nil
}

// AllowAll is an IAM policy document allowing every action.
const AllowAll = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]}`

// BucketPolicy is an IAM policy document allowing the given S3 actions
// (e.g. "s3:GetObject") on one bucket and its objects; none given: s3:*.
func BucketPolicy(bucket string, actions ...string) string {
	if len(actions) == 0 {
		actions = []string{"s3:*"}
	}
	return fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":[%s],`+
		`"Resource":["arn:aws:s3:::%s","arn:aws:s3:::%s/*"]}]}`, quoteAll(actions), bucket, bucket)
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = `"` + s + `"`
	}
	return strings.Join(q, ",")
}

// CreateBucket creates a bucket.
func (m *MotoServer) CreateBucket(t testing.TB, bucket string) {
	t.Helper()
	if _, err := m.Do(context.Background(), m.Admin, "s3", http.MethodPut, "/"+bucket, nil); err != nil {
		t.Fatalf("create bucket %s: %v", bucket, err)
	}
}

// DeleteBucket deletes a bucket and every object in it.
func (m *MotoServer) DeleteBucket(t testing.TB, bucket string) {
	t.Helper()
	ctx := context.Background()
	for _, k := range m.ListKeys(t, bucket, "") {
		if _, err := m.Do(ctx, m.Admin, "s3", http.MethodDelete, "/"+bucket+"/"+escapeKey(k), nil); err != nil {
			t.Fatalf("delete s3://%s/%s: %v", bucket, k, err)
		}
	}
	if _, err := m.Do(ctx, m.Admin, "s3", http.MethodDelete, "/"+bucket, nil); err != nil {
		t.Fatalf("delete bucket %s: %v", bucket, err)
	}
}

// ListKeys lists the keys of a bucket under prefix.
func (m *MotoServer) ListKeys(t testing.TB, bucket, prefix string) []string {
	t.Helper()
	var keys []string
	token := ""
	for {
		q := url.Values{"list-type": {"2"}, "prefix": {prefix}}
		if token != "" {
			q.Set("continuation-token", token)
		}
		body, err := m.Do(context.Background(), m.Admin, "s3", http.MethodGet, "/"+bucket+"?"+q.Encode(), nil)
		if err != nil {
			t.Fatalf("list s3://%s/%s: %v", bucket, prefix, err)
		}
		var res struct {
			Contents []struct {
				Key string `xml:"Key"`
			} `xml:"Contents"`
			IsTruncated bool   `xml:"IsTruncated"`
			Next        string `xml:"NextContinuationToken"`
		}
		if err := xml.Unmarshal(body, &res); err != nil {
			t.Fatalf("list s3://%s/%s: %v", bucket, prefix, err)
		}
		for _, c := range res.Contents {
			keys = append(keys, c.Key)
		}
		if !res.IsTruncated {
			return keys
		}
		token = res.Next
	}
}

func escapeKey(k string) string {
	parts := strings.Split(k, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// CreateUser creates an IAM user with one inline policy and returns its
// access key.
func (m *MotoServer) CreateUser(t testing.TB, name, policy string) Key {
	t.Helper()
	k, err := m.createUser(context.Background(), name, policy)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func (m *MotoServer) createUser(ctx context.Context, name, policy string) (Key, error) {
	if _, err := m.query(ctx, m.Admin, "iam", url.Values{"Action": {"CreateUser"}, "UserName": {name}}); err != nil {
		return Key{}, fmt.Errorf("moto: create user %s: %w", name, err)
	}
	if _, err := m.query(ctx, m.Admin, "iam", url.Values{"Action": {"PutUserPolicy"}, "UserName": {name},
		"PolicyName": {name + "-policy"}, "PolicyDocument": {policy}}); err != nil {
		return Key{}, fmt.Errorf("moto: policy of user %s: %w", name, err)
	}
	body, err := m.query(ctx, m.Admin, "iam", url.Values{"Action": {"CreateAccessKey"}, "UserName": {name}})
	if err != nil {
		return Key{}, fmt.Errorf("moto: access key of user %s: %w", name, err)
	}
	var res struct {
		Key struct {
			ID     string `xml:"AccessKeyId"`
			Secret string `xml:"SecretAccessKey"`
		} `xml:"CreateAccessKeyResult>AccessKey"`
	}
	if err := xml.Unmarshal(body, &res); err != nil || res.Key.ID == "" {
		return Key{}, fmt.Errorf("moto: access key of user %s: %v in %s", name, err, body)
	}
	return Key{AccessKeyID: res.Key.ID, SecretAccessKey: res.Key.Secret}, nil
}

// CreateRole creates an IAM role that any principal of the account may
// assume, with one inline policy, and returns its ARN.
func (m *MotoServer) CreateRole(t testing.TB, name, policy string) string {
	t.Helper()
	ctx := context.Background()
	trust := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"*"},"Action":"sts:AssumeRole"}]}`
	body, err := m.query(ctx, m.Admin, "iam", url.Values{"Action": {"CreateRole"}, "RoleName": {name},
		"AssumeRolePolicyDocument": {trust}})
	if err != nil {
		t.Fatalf("moto: create role %s: %v", name, err)
	}
	var res struct {
		Arn string `xml:"CreateRoleResult>Role>Arn"`
	}
	if err := xml.Unmarshal(body, &res); err != nil || res.Arn == "" {
		t.Fatalf("moto: create role %s: %v in %s", name, err, body)
	}
	if _, err := m.query(ctx, m.Admin, "iam", url.Values{"Action": {"PutRolePolicy"}, "RoleName": {name},
		"PolicyName": {name + "-policy"}, "PolicyDocument": {policy}}); err != nil {
		t.Fatalf("moto: policy of role %s: %v", name, err)
	}
	return res.Arn
}

// AssumeRole returns short-lived credentials of a role from moto's STS,
// asked for with key.
func (m *MotoServer) AssumeRole(ctx context.Context, key Key, roleArn string, d time.Duration) (Key, error) {
	body, err := m.query(ctx, key, "sts", url.Values{"Action": {"AssumeRole"}, "RoleArn": {roleArn},
		"RoleSessionName": {"sluice-test"}, "DurationSeconds": {itoa(int(d.Seconds()))}})
	if err != nil {
		return Key{}, fmt.Errorf("moto: assume role %s: %w", roleArn, err)
	}
	var res struct {
		C struct {
			ID         string    `xml:"AccessKeyId"`
			Secret     string    `xml:"SecretAccessKey"`
			Token      string    `xml:"SessionToken"`
			Expiration time.Time `xml:"Expiration"`
		} `xml:"AssumeRoleResult>Credentials"`
	}
	if err := xml.Unmarshal(body, &res); err != nil || res.C.ID == "" {
		return Key{}, fmt.Errorf("moto: assume role %s: %v in %s", roleArn, err, body)
	}
	return Key{AccessKeyID: res.C.ID, SecretAccessKey: res.C.Secret, SessionToken: res.C.Token, Expiration: res.C.Expiration}, nil
}

// query sends an AWS query-protocol request (IAM, STS).
func (m *MotoServer) query(ctx context.Context, key Key, service string, form url.Values) ([]byte, error) {
	if service == "iam" {
		form.Set("Version", "2010-05-08")
	} else {
		form.Set("Version", "2011-06-15")
	}
	return m.Do(ctx, key, service, http.MethodPost, "/", []byte(form.Encode()))
}

// StatusError is a non-2xx answer of a service.
type StatusError struct {
	Status int
	Body   string
}

func (e *StatusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Status, e.Body) }

// Do sends one request to moto signed with key (SigV4, for service "s3",
// "iam" or "sts"; a zero key sends it unsigned) and returns the body of a
// 2xx answer, or a *StatusError.
func (m *MotoServer) Do(ctx context.Context, key Key, service, method, path string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, m.Endpoint+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if service != "s3" && body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	if key.AccessKeyID != "" {
		req.Header.Set("X-Amz-Content-Sha256", hash)
		creds := aws.Credentials{AccessKeyID: key.AccessKeyID, SecretAccessKey: key.SecretAccessKey, SessionToken: key.SessionToken}
		if err := v4.NewSigner().SignHTTP(ctx, creds, req, hash, service, Region, time.Now()); err != nil {
			return nil, err
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, &StatusError{Status: resp.StatusCode, Body: string(b)}
	}
	return b, nil
}

// PutObject writes an object.
func (m *MotoServer) PutObject(t testing.TB, bucket, key string, data []byte) {
	t.Helper()
	if _, err := m.Do(context.Background(), m.Admin, "s3", http.MethodPut, "/"+bucket+"/"+escapeKey(key), data); err != nil {
		t.Fatalf("put s3://%s/%s: %v", bucket, key, err)
	}
}

var names struct {
	mu sync.Mutex // guards n
	n  int
}

// UniqueName is prefix with a number unique in this test binary and the
// time, usable as a bucket name (lower case, digits and dashes).
func UniqueName(prefix string) string {
	names.mu.Lock()
	names.n++
	n := names.n
	names.mu.Unlock()
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1e9, n)
}

// ensureBucket creates a bucket unless it exists.
func (m *MotoServer) ensureBucket(bucket string) error {
	_, err := m.Do(context.Background(), m.Admin, "s3", http.MethodPut, "/"+bucket, nil)
	var se *StatusError
	if errors.As(err, &se) && se.Status == http.StatusConflict {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", bucket, err)
	}
	return nil
}
