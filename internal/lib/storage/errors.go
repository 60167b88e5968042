package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/storage"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/io/gocloud/blobfs"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
	"google.golang.org/api/googleapi"

	"github.com/sluicefeed/sluice/internal/lib/storage/storageerr"
)

// Sentinel errors of the storage layer. Errors that wrap one of them are
// *Error values naming the object or folder, the bucket, and who the
// request was made as where that is known (S3's access key id, Azure's
// storage account, the principal a GCS refusal names), never a secret.
// Each has its class of failure (errclass), which the server maps to a
// gRPC code. They are package storageerr's, under the same names.
var (
	// ErrBucketNotFound reports a bucket (or container) that does not
	// exist: every object in it reads as missing, which is not the same
	// as a file removed by VACUUM or snapshot expiry.
	ErrBucketNotFound = storageerr.ErrBucketNotFound
	// ErrAccessDenied reports storage that refused flightd's credentials
	// (an unknown access key id, a secret that does not match it, an
	// expired session token) or refused them access (HTTP 403).
	ErrAccessDenied = storageerr.ErrAccessDenied
	// ErrMisconfigured reports storage settings that cannot work: no
	// region, a region other than the bucket's, no credentials at all.
	ErrMisconfigured = storageerr.ErrMisconfigured
	// ErrUnavailable reports storage that could not be reached or answered
	// with a server error: a refused connection, a timeout, HTTP 5xx or
	// throttling. It may be transient.
	ErrUnavailable = storageerr.ErrUnavailable
)

// Error is a classified failure of the storage: Kind is one of the
// package's sentinels (errors.Is matches it), Location the object or
// folder read, Reason what is wrong and what sets it.
type Error struct {
	Kind     error
	Location string
	Reason   string
	// Err is the storage client's error, shortened in the message.
	Err error
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("%v: %s: %s", e.Kind, e.Location, e.Reason)
	if e.Err != nil {
		msg += " (" + brief(e.Err) + ")"
	}
	return msg
}

// Unwrap returns the sentinel only: the client's error stays out of
// errors.Is, so that a bucket that does not exist never reads as a file
// that does not (fs.ErrNotExist).
func (e *Error) Unwrap() error { return e.Kind }

// brief returns the part of a storage client's error that says what
// happened: an S3 error's code and message rather than the SDK's chain of
// operation, attempt and request ids.
func brief(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		if m := ae.ErrorMessage(); m != "" && m != ae.ErrorCode() {
			return ae.ErrorCode() + ": " + m
		}
		return ae.ErrorCode()
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return fmt.Sprintf("HTTP %d %s", re.StatusCode, re.ErrorCode)
	}
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		if ge.Message != "" {
			return fmt.Sprintf("HTTP %d: %s", ge.Code, ge.Message)
		}
		return fmt.Sprintf("HTTP %d", ge.Code)
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return oe.Error()
	}
	return err.Error()
}

// store is what an error's classification needs to know of the storage a
// location is on.
type store struct {
	scheme, bucket string
	// authority is the URL's host part: the bucket, or for Azure
	// container@account.host.
	authority string
	// account is the Azure storage account ("" for other stores).
	account string
	// b is the bucket, nil when the IO is not gocloud's.
	b *blob.Bucket
	// s3 is the S3 client behind b, nil for other stores.
	s3 *s3.Client
	// az is the Azure container client behind b, nil for other stores.
	az *container.Client
}

// isAzure reports whether the scheme is one of Azure's.
func isAzure(scheme string) bool {
	switch scheme {
	case "abfs", "abfss", "wasb", "wasbs":
		return true
	}
	return false
}

// storeOf returns the store of an IO and a location read through it.
func storeOf(fsys iceio.IO, location string) store {
	st := store{}
	if scheme, rest, ok := strings.Cut(location, "://"); ok {
		st.scheme = strings.ToLower(scheme)
		st.authority, _, _ = strings.Cut(rest, "/")
		st.bucket = st.authority
		if isAzure(st.scheme) {
			// container@account.dfs.core.windows.net
			if c, host, ok := strings.Cut(st.authority, "@"); ok {
				st.bucket = c
				st.account, _, _ = strings.Cut(host, ".")
			}
		}
	}
	if fio, ok := fsys.(*blobfs.FileIO); ok && fio.Bucket != nil {
		st.b = fio.Bucket
		var c *s3.Client
		var az *container.Client
		if st.b.As(&c) {
			st.s3 = c
		} else if st.b.As(&az) {
			st.az = az
		}
	}
	return st
}

// credentialsOf returns the S3 credential provider of the store, nil when
// there is none or it is anonymous (unsigned requests).
func credentialsOf(st store) aws.CredentialsProvider {
	if st.s3 == nil {
		return nil
	}
	p := st.s3.Options().Credentials
	if p == nil || aws.IsCredentialsProvider(p, aws.AnonymousCredentials{}) {
		return nil
	}
	return p
}

// endpoint returns the endpoint set for S3 (empty for AWS's own), or the
// Azure blob service's scheme and host; "" when it is not known.
func (st store) endpoint() string {
	if st.az != nil {
		if u, err := url.Parse(st.az.URL()); err == nil {
			return u.Scheme + "://" + u.Host
		}
		return ""
	}
	if st.s3 == nil {
		return ""
	}
	if e := st.s3.Options().BaseEndpoint; e != nil {
		return *e
	}
	return ""
}

// principal names who the requests are signed as: the S3 access key id,
// or "" when it is not known.
func (st store) principal(ctx context.Context) string {
	p := credentialsOf(st)
	if p == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	creds, err := p.Retrieve(ctx)
	if err != nil {
		return ""
	}
	return creds.AccessKeyID
}

func (st store) as(ctx context.Context) string {
	if p := st.principal(ctx); p != "" {
		return " as access key id " + p
	}
	return " with flightd's credentials"
}

// bucketWord is what the store calls a bucket.
func (st store) bucketWord() string {
	if isAzure(st.scheme) {
		return "container"
	}
	return "bucket"
}

// Classify returns err, an error of fsys reading location (a URL), as an
// *Error wrapping one of the package's sentinels when it can tell the
// cause: a bucket that does not exist (checked, and remembered for a
// while, when an object is not found), access denied or bad credentials,
// a missing region, storage that cannot be reached. Other errors, and an
// object that is not found in a bucket that exists, are returned as they
// are.
func Classify(fsys iceio.IO, location string, err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var done *Error
	if errors.As(err, &done) {
		return err
	}
	st := storeOf(fsys, location)
	if st.b == nil {
		return err // local files, or an IO this package does not know
	}
	return classify(context.Background(), st, location, err)
}

func classify(ctx context.Context, st store, location string, err error) error {
	if st.s3 != nil && st.s3.Options().Region == "" {
		return &Error{Kind: ErrMisconfigured, Location: location, Reason: "no region is set for S3: set s3.region " +
			"(or client.region) in the catalog's properties, or AWS_REGION in flightd's environment"}
	}
	if creds := credentialsOf(st); creds != nil {
		// A request that could not be signed fails with the credential
		// chain's error, which may hold anything (the instance metadata
		// service's 403 or timeout): ask the chain itself. It caches what
		// it found, so this is cheap when there are credentials.
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, cerr := creds.Retrieve(cctx)
		cancel()
		if cerr != nil && !errors.Is(cerr, context.Canceled) {
			return &Error{Kind: ErrMisconfigured, Location: location, Reason: "no S3 credentials were found: set " +
				"s3.access-key-id and s3.secret-access-key in the catalog's properties (a REST catalog may vend " +
				"them), or give flightd the AWS default chain's (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, " +
				"AWS_PROFILE, a web identity or an instance role)", Err: cerr}
		}
	}
	if ae := apiError(err); ae != nil {
		if e := classifyAPI(ctx, st, location, ae, err); e != nil {
			return e
		}
	}
	if e := classifyHTTP(ctx, st, location, err); e != nil {
		return e
	}
	switch code := gcerrors.Code(err); {
	case code == gcerrors.NotFound || errors.Is(err, fs.ErrNotExist):
		return checkBucket(ctx, st, location, err)
	case code == gcerrors.PermissionDenied || errors.Is(err, fs.ErrPermission):
		return denied(ctx, st, location, err)
	case code == gcerrors.ResourceExhausted:
		return &Error{Kind: ErrUnavailable, Location: location, Reason: "the storage is throttling requests", Err: err}
	}
	var ne net.Error
	if errors.As(err, &ne) {
		where := st.endpoint()
		if where == "" {
			where = "the " + st.scheme + " endpoint"
		}
		return &Error{Kind: ErrUnavailable, Location: location, Reason: "cannot reach " + where, Err: err}
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() >= 500 {
		return &Error{Kind: ErrUnavailable, Location: location,
			Reason: fmt.Sprintf("the storage answered HTTP %d", re.HTTPStatusCode()), Err: err}
	}
	return err
}

// classifyHTTP classifies an Azure or GCS error by its HTTP status and
// code (nil: not by them). gocloud's codes alone are not enough: Azure's
// 403 AuthorizationFailure is Unknown to it, GCS's 403 is NotFound.
func classifyHTTP(ctx context.Context, st store, location string, err error) error {
	status := 0
	var re *azcore.ResponseError
	var ge *googleapi.Error
	switch {
	case errors.As(err, &re):
		status = re.StatusCode
		if re.ErrorCode == "ContainerNotFound" {
			remember(st, false)
			return bucketMissing(st, location, err)
		}
	case errors.As(err, &ge):
		status = ge.Code
	case errors.Is(err, storage.ErrBucketNotExist):
		remember(st, false)
		return bucketMissing(st, location, err)
	default:
		return nil
	}
	switch {
	case status == 401 || status == 403:
		return denied(ctx, st, location, err)
	case status == 429 || status >= 500:
		return &Error{Kind: ErrUnavailable, Location: location,
			Reason: fmt.Sprintf("the storage answered HTTP %d", status), Err: err}
	}
	return nil
}

// deniedStatus reports whether err is an Azure or GCS refusal (HTTP 401
// or 403).
func deniedStatus(err error) bool {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode == 401 || re.StatusCode == 403
	}
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code == 401 || ge.Code == 403
	}
	return false
}

// apiError returns the S3 (smithy) API error in err's chain, or nil.
func apiError(err error) smithy.APIError {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae
	}
	return nil
}

// classifyAPI classifies an S3 error by its code (nil: not by the code).
func classifyAPI(ctx context.Context, st store, location string, ae smithy.APIError, err error) error {
	switch ae.ErrorCode() {
	case "NoSuchBucket":
		remember(st, false)
		return bucketMissing(st, location, err)
	case "InvalidAccessKeyId":
		return &Error{Kind: ErrAccessDenied, Location: location, Reason: fmt.Sprintf("the storage does not know "+
			"the access key id %s: check s3.access-key-id in the catalog's properties (or AWS_ACCESS_KEY_ID)",
			orUnknown(st.principal(ctx))), Err: err}
	case "SignatureDoesNotMatch":
		return &Error{Kind: ErrAccessDenied, Location: location, Reason: fmt.Sprintf("the secret access key "+
			"does not match the access key id %s: check s3.secret-access-key in the catalog's properties "+
			"(or AWS_SECRET_ACCESS_KEY)", orUnknown(st.principal(ctx))), Err: err}
	case "ExpiredToken", "TokenRefreshRequired", "InvalidToken":
		return &Error{Kind: ErrAccessDenied, Location: location, Reason: fmt.Sprintf("the session token of "+
			"access key id %s is expired or invalid: check s3.session-token", orUnknown(st.principal(ctx))),
			Err: err}
	case "AccessDenied", "AllAccessDisabled", "AccountProblem":
		return denied(ctx, st, location, err)
	case "Forbidden":
		// A HEAD request's 403 has no body, so no code: ask the bucket
		// for a listing of the object, whose error says which 403 it is.
		return denied(ctx, st, location, err)
	case "AuthorizationHeaderMalformed", "PermanentRedirect", "IllegalLocationConstraintException":
		return &Error{Kind: ErrMisconfigured, Location: location, Reason: fmt.Sprintf("the %s %s is in another "+
			"region than %q: set s3.region to the bucket's region", st.bucketWord(), st.bucket, region(st)),
			Err: err}
	case "SlowDown", "ServiceUnavailable", "InternalError", "RequestTimeout", "Throttling":
		return &Error{Kind: ErrUnavailable, Location: location, Reason: "the storage is unavailable or " +
			"throttling requests", Err: err}
	}
	return nil
}

func region(st store) string {
	if st.s3 == nil {
		return ""
	}
	return st.s3.Options().Region
}

func orUnknown(principal string) string {
	if principal == "" {
		return "(unknown)"
	}
	return principal
}

// denied classifies a 403. When the error has no code (a HEAD request's),
// a one-item listing of the object's key tells an unknown key, a bad
// secret and a missing bucket from a refused read.
func denied(ctx context.Context, st store, location string, err error) error {
	if ae := apiError(err); (ae == nil || ae.ErrorCode() == "Forbidden") && st.s3 != nil {
		key := keyOf(location)
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, _, lerr := st.b.ListPage(lctx, blob.FirstPageToken, 1, &blob.ListOptions{Prefix: key})
		cancel()
		if lae := apiError(lerr); lae != nil && lae.ErrorCode() != "AccessDenied" && lae.ErrorCode() != "Forbidden" {
			if e := classifyAPI(ctx, st, location, lae, lerr); e != nil {
				return e
			}
		}
	}
	reason := fmt.Sprintf("the storage refused the read%s", st.as(ctx))
	switch {
	case isAzure(st.scheme):
		if st.account != "" {
			reason = "storage account " + st.account + " refused the read"
		}
		// The container client does not tell how it signs: name every
		// setting that gives it credentials.
		reason += ": check adls.auth.shared-key.account.name and adls.auth.shared-key.account.key (or the " +
			"account's adls.connection-string.<account> or adls.sas-token.<host>, or the role of flightd's " +
			"Azure identity on the container)"
	case st.scheme == "gs":
		// GCS's refusal names the principal (in the message kept below).
		reason += ": check gcs.keypath, gcs.jsonkey or gcs.oauth2.token (or flightd's application default " +
			"credentials) and the principal's role on the bucket"
	}
	return &Error{Kind: ErrAccessDenied, Location: location, Reason: reason, Err: err}
}

// keyOf returns the object key of a URL.
func keyOf(location string) string {
	_, rest, ok := strings.Cut(location, "://")
	if !ok {
		return location
	}
	_, key, _ := strings.Cut(rest, "/")
	return key
}

func bucketMissing(st store, location string, err error) error {
	reason := fmt.Sprintf("the %s %q does not exist", st.bucketWord(), st.bucket)
	if st.account != "" {
		reason += " in storage account " + st.account
	}
	if e := st.endpoint(); e != "" {
		reason += " at " + e
	}
	return &Error{Kind: ErrBucketNotFound, Location: location, Reason: reason + ": check the location " +
		"and the storage endpoint", Err: err}
}

// checkBucket classifies an object that was not found: when its bucket
// does not exist either, ErrBucketNotFound; else err as it is.
func checkBucket(ctx context.Context, st store, location string, err error) error {
	if st.b == nil || st.bucket == "" {
		return err
	}
	if ok, known := remembered(st); known {
		if ok {
			return err
		}
		return bucketMissing(st, location, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, _, lerr := st.b.ListPage(ctx, blob.FirstPageToken, 1, nil)
	switch {
	case lerr == nil:
		remember(st, true)
		return err
	case deniedStatus(lerr):
		// GCS answers a read it refuses with 403, which gocloud calls
		// NotFound: the listing's refusal says which it is.
		return denied(ctx, st, location, lerr)
	case gcerrors.Code(lerr) == gcerrors.NotFound:
		remember(st, false)
		return bucketMissing(st, location, err)
	}
	return err // the bucket cannot be listed: the object stays not found
}

// How long a bucket check is remembered: that a bucket exists for longer
// (a table whose files expired misses many at once), that it does not
// for less (it may be created meanwhile).
const (
	bucketFoundTTL   = time.Minute
	bucketMissingTTL = 5 * time.Second
)

var buckets struct {
	mu sync.Mutex // guards seen
	// seen is whether each bucket existed, and when that was found.
	seen map[string]bucketSeen
}

type bucketSeen struct {
	exists bool
	at     time.Time
}

func bucketKey(st store) string { return st.scheme + "://" + st.authority + "@" + st.endpoint() }

func remember(st store, exists bool) {
	if st.bucket == "" {
		return
	}
	buckets.mu.Lock()
	defer buckets.mu.Unlock()
	if buckets.seen == nil {
		buckets.seen = map[string]bucketSeen{}
	}
	buckets.seen[bucketKey(st)] = bucketSeen{exists: exists, at: time.Now()}
}

func remembered(st store) (exists, known bool) {
	buckets.mu.Lock()
	defer buckets.mu.Unlock()
	s, ok := buckets.seen[bucketKey(st)]
	if !ok {
		return false, false
	}
	ttl := bucketMissingTTL
	if s.exists {
		ttl = bucketFoundTTL
	}
	if time.Since(s.at) > ttl {
		return false, false
	}
	return s.exists, true
}
