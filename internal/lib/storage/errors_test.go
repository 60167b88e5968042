package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"

	"cloud.google.com/go/storage"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"google.golang.org/api/googleapi"
)

// s3Error is an error as the AWS SDK returns it: an API error with its
// code inside the HTTP response error of the given status, inside the
// operation error.
func s3Error(status int, code, msg string) error {
	api := &smithy.GenericAPIError{Code: code, Message: msg}
	resp := &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}}, Err: api}}
	return &smithy.OperationError{ServiceID: "S3", OperationName: "GetObject", Err: resp}
}

func TestClassify(t *testing.T) {
	// A store without a client: what the error itself says.
	st := store{scheme: "s3", bucket: "lake"}
	const loc = "s3://lake/t/part-0.parquet"
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, tc := range []struct {
		name string
		err  error
		kind error    // nil: returned as it is
		says []string // phrases of the message
	}{
		{"no such bucket", s3Error(404, "NoSuchBucket", "The specified bucket does not exist"), ErrBucketNotFound,
			[]string{`bucket "lake" does not exist`, loc}},
		{"unknown access key id", s3Error(403, "InvalidAccessKeyId", "not in our records"), ErrAccessDenied,
			[]string{"does not know the access key id", "s3.access-key-id", "InvalidAccessKeyId"}},
		{"wrong secret", s3Error(403, "SignatureDoesNotMatch", "signature"), ErrAccessDenied,
			[]string{"secret access key does not match", "s3.secret-access-key"}},
		{"expired token", s3Error(400, "ExpiredToken", "expired"), ErrAccessDenied, []string{"s3.session-token"}},
		{"access denied", s3Error(403, "AccessDenied", "Access Denied"), ErrAccessDenied,
			[]string{"refused the read", loc}},
		{"wrong region", s3Error(400, "AuthorizationHeaderMalformed", "the region 'us-east-1' is wrong"),
			ErrMisconfigured, []string{"another region", "s3.region"}},
		{"throttled", s3Error(503, "SlowDown", "Please reduce your request rate."), ErrUnavailable, nil},
		{"server error", s3Error(500, "", ""), ErrUnavailable, []string{"HTTP 500"}},
		{"connection refused", fmt.Errorf("request send failed: %w", refused), ErrUnavailable,
			[]string{"cannot reach", "connection refused"}},
		{"a permission error of a file system", &fs.PathError{Op: "open", Path: loc, Err: fs.ErrPermission},
			ErrAccessDenied, nil},
		// Without a bucket to ask, a missing object stays missing.
		{"not found", &fs.PathError{Op: "open", Path: loc, Err: fs.ErrNotExist}, nil, nil},
		{"a damaged file", errors.New("parquet: bad magic"), nil, nil},
		{"cancelled", fmt.Errorf("read: %w", context.Canceled), nil, nil},
		// Azure and GCS, whose codes gocloud maps only in part.
		{"azure container missing", &azcore.ResponseError{StatusCode: 404, ErrorCode: "ContainerNotFound"},
			ErrBucketNotFound, []string{"does not exist", "HTTP 404 ContainerNotFound"}},
		{"azure refused", &azcore.ResponseError{StatusCode: 403, ErrorCode: "AuthorizationPermissionMismatch"},
			ErrAccessDenied, []string{"refused the read", "HTTP 403 AuthorizationPermissionMismatch"}},
		{"azure busy", &azcore.ResponseError{StatusCode: 503, ErrorCode: "ServerBusy"}, ErrUnavailable,
			[]string{"HTTP 503"}},
		// GCS's 403 names the principal; gocloud calls it NotFound.
		{"gcs refused", &googleapi.Error{Code: 403, Message: "reader@p.iam.gserviceaccount.com does not have " +
			"storage.objects.get access"}, ErrAccessDenied, []string{"refused the read", "reader@p.iam.gserviceaccount.com"}},
		{"gcs bucket missing", fmt.Errorf("list: %w", storage.ErrBucketNotExist), ErrBucketNotFound,
			[]string{`bucket "lake" does not exist`}},
		{"gcs throttled", &googleapi.Error{Code: 429}, ErrUnavailable, []string{"HTTP 429"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got error
			if errors.Is(tc.err, context.Canceled) {
				got = Classify(nil, loc, tc.err)
			} else {
				got = classify(context.Background(), st, loc, tc.err)
			}
			if tc.kind == nil {
				if got != tc.err {
					t.Fatalf("got %v, want the error as it is", got)
				}
				return
			}
			if !errors.Is(got, tc.kind) {
				t.Fatalf("got %v, want %v", got, tc.kind)
			}
			if errors.Is(got, fs.ErrNotExist) {
				t.Errorf("%v reads as a missing file", got)
			}
			for _, s := range tc.says {
				if !strings.Contains(got.Error(), s) {
					t.Errorf("%q does not say %q", got, s)
				}
			}
			if again := Classify(nil, loc, got); again != got {
				t.Errorf("classified twice: %v", again)
			}
		})
	}
}

func TestBrief(t *testing.T) {
	err := s3Error(403, "AccessDenied", "Access Denied")
	if got := brief(err); got != "AccessDenied: Access Denied" {
		t.Errorf("brief = %q", got)
	}
}
