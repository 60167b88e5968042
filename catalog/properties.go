package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	icesql "github.com/apache/iceberg-go/catalog/sql"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/metrics"
	"go.yaml.in/yaml/v3"
)

// Properties of the rest catalog. iceberg-go v0.7.0 reads them in
// catalog/rest/rest.go and metrics_reporter.go, where their constants are
// unexported; PropTLSCAFile is Sluice's own.
const (
	PropCredential      = "credential"
	PropToken           = "token"
	PropScope           = "scope"
	PropAudience        = "audience"
	PropResource        = "resource"
	PropOAuth2ServerURI = "oauth2-server-uri"
	// PropAuthorizationURL is an alias of PropOAuth2ServerURI, which wins
	// when both are set.
	PropAuthorizationURL = "rest.authorization-url"
	PropPrefix           = "prefix"
	PropWarehouse        = "warehouse"
	PropSigV4Enabled     = "rest.sigv4-enabled"
	PropSigningRegion    = "rest.signing-region"
	PropSigningName      = "rest.signing-name"
	PropTLSSkipVerify    = "rest.tls.skip-verify"
	// PropTLSCAFile is a PEM file of CA certificates that the REST
	// server's certificate (and the OAuth2 server's) may chain to, besides
	// the system's.
	PropTLSCAFile = "rest.tls.ca-file"
	// PropHeaderPrefix starts the properties that add a header to every
	// request to the REST server: header.X-Tenant: a sends "X-Tenant: a".
	PropHeaderPrefix = "header."
)

// restProperties are the properties only the rest catalog reads.
var restProperties = []string{
	PropCredential, PropToken, PropScope, PropAudience, PropResource, PropOAuth2ServerURI, PropAuthorizationURL,
	PropPrefix, PropSigV4Enabled, PropSigningRegion, PropSigningName, PropTLSSkipVerify, PropTLSCAFile,
	"metadata_location", "namespace-separator", "snapshot-loading-mode", "view-endpoints-supported",
	"rest-metrics-reporting-enabled", "rest.metrics-reporting-enabled", "rest-metrics-reporting-timeout-ms",
}

// KnownProperties returns the catalog and file IO property names that
// iceberg-go v0.7.0 reads (and Sluice's rest.tls.ca-file), sorted. Names
// that start with a known prefix (KnownPrefixes) are known too.
func KnownProperties() []string {
	names := []string{
		"uri", "type", PropWarehouse,
		// io/config.go: S3.
		iceio.S3Region, iceio.S3SessionToken, iceio.S3SecretAccessKey, iceio.S3AccessKeyID, iceio.S3EndpointURL,
		iceio.S3ProxyURI, iceio.S3ConnectTimeout, iceio.S3SignerURI, iceio.S3RemoteSigningEnabled,
		iceio.S3ForceVirtualAddressing, iceio.S3ClientRegion, iceio.S3CompatMode,
		// GCS.
		iceio.GCSEndpoint, iceio.GCSServiceHost, iceio.GCSKeyPath, iceio.GCSJSONKey, iceio.GCSCredType,
		iceio.GCSUseJSONAPI, iceio.GCSOAuthToken, iceio.GCSOAuthExpiresAt, iceio.GCSNoAuth,
		// Azure (ADLS).
		iceio.ADLSSharedKeyAccountName, iceio.ADLSSharedKeyAccountKey, iceio.ADLSEndpoint, iceio.ADLSProtocol,
		iceio.ADLSManagedIdentityEnabled, iceio.ADLSClientID,
		// Vended credentials' expiry (catalog/rest/vended_creds.go).
		"s3.session-token-expires-at-ms", "adls.sas-token-expires-at-ms", "expiration-time",
		// catalog/sql, metrics.
		icesql.DialectKey, icesql.DriverKey, icesql.SchemaVersionKey, "init_catalog_tables", metrics.ReporterImplKey,
	}
	names = append(names, restProperties...)
	slices.Sort(names)
	return slices.Compact(names)
}

// KnownPrefixes returns the prefixes of property names that carry a name of
// their own: header.<HTTP header>, adls.sas-token.<account host>,
// adls.connection-string.<account>.
func KnownPrefixes() []string {
	return []string{PropHeaderPrefix, iceio.ADLSSasTokenPrefix, iceio.ADLSConnectionStringPrefix}
}

// foreignProperties are names that Java's or pyiceberg's Iceberg read and
// iceberg-go does not, with what to do instead.
var foreignProperties = map[string]string{
	"s3.path-style-access": "with s3.endpoint set, path-style addressing is already iceberg-go's default " +
		"(s3.force-virtual-addressing=true switches to virtual hosts)",
	"client.access-key-id":     "use " + iceio.S3AccessKeyID,
	"client.secret-access-key": "use " + iceio.S3SecretAccessKey,
	"client.session-token":     "use " + iceio.S3SessionToken,
	"s3.role-arn":              assumeRole,
	"s3.role-session-name":     assumeRole,
	"client.role-arn":          assumeRole,
	"client.role-session-name": assumeRole,
	"client.assume-role.arn":   assumeRole,
	"s3.anonymous":             "iceberg-go has no anonymous S3 access",
	"s3.signer.endpoint":       "iceberg-go reads " + iceio.S3SignerURI + " only",
	"adls.account-name":        "use " + iceio.ADLSSharedKeyAccountName,
	"adls.account-key":         "use " + iceio.ADLSSharedKeyAccountKey,
	"adls.sas-token": "iceberg-go takes a SAS token per account host: " + iceio.ADLSSasTokenPrefix +
		"<account>.dfs.core.windows.net",
	"adls.connection-string": "iceberg-go takes a connection string per account: " +
		iceio.ADLSConnectionStringPrefix + "<account>",
	"adls.tenant-id":        azureSP,
	"adls.client-secret":    azureSP,
	"py-io-impl":            "iceberg-go picks the file IO by the URL's scheme (s3://, gs://, abfss://)",
	"io-impl":               "iceberg-go picks the file IO by the URL's scheme (s3://, gs://, abfss://)",
	"rest.auth.type":        "iceberg-go uses OAuth2 when credential or token is set, SigV4 when rest.sigv4-enabled=true",
	"token-refresh-enabled": "iceberg-go refreshes the tokens it gets for a credential by itself",
}

const (
	assumeRole = "iceberg-go assumes no role itself: give the role to the AWS default credential chain " +
		"(AWS_ROLE_ARN with AWS_WEB_IDENTITY_TOKEN_FILE, or a profile's role_arn)"
	azureSP = "iceberg-go has no service-principal properties: set AZURE_TENANT_ID, AZURE_CLIENT_ID and " +
		"AZURE_CLIENT_SECRET for Azure's default credential chain"
)

// CheckProperties returns a warning for each property name that iceberg-go
// does not read, which it would ignore in silence: a misspelling (naming
// the nearest known name), a name of Java's or pyiceberg's Iceberg (saying
// what to use instead), a rest catalog's property given to another
// catalog, and a property that a flag sets. They are warnings, not errors:
// a newer iceberg-go may read more names. props are the properties as
// configured (MergedProperties), typ the catalog type.
func CheckProperties(typ string, props map[string]string) []string {
	known := KnownProperties()
	var warnings []string
	for _, name := range slices.Sorted(maps.Keys(props)) {
		lower := strings.ToLower(name)
		switch {
		case foreignProperties[lower] != "":
			warnings = append(warnings, fmt.Sprintf("catalog property %s is not read by iceberg-go and is ignored: %s",
				name, foreignProperties[lower]))
		case strings.HasPrefix(lower, "hadoop.") || strings.HasPrefix(lower, "fs."):
			warnings = append(warnings, fmt.Sprintf("catalog property %s is a Hadoop setting, ignored by iceberg-go", name))
		case name == "uri" || name == "type":
			warnings = append(warnings, fmt.Sprintf("catalog property %s is ignored: set the catalog's %s with --catalog-%s",
				name, name, name))
		case slices.Contains(known, name) || hasKnownPrefix(name):
			if typ != TypeREST && (slices.Contains(restProperties, name) || strings.HasPrefix(name, PropHeaderPrefix)) {
				warnings = append(warnings, fmt.Sprintf("catalog property %s is read by the rest catalog only, not by the %s catalog",
					name, typ))
			}
			if w := checkBool(name, props[name]); w != "" {
				warnings = append(warnings, w)
			}
		default:
			w := fmt.Sprintf("catalog property %s is unknown to iceberg-go and is ignored", name)
			if near := Nearest(name, known, 1); len(near) > 0 {
				w += fmt.Sprintf(" (did you mean %s?)", near[0])
			}
			warnings = append(warnings, w)
		}
	}
	return warnings
}

// boolProperties are the file IO properties iceberg-go reads as true or
// false, ignoring any other value in silence (rest.sigv4-enabled and
// rest.tls.skip-verify are refused at Open instead).
var boolProperties = []string{iceio.S3ForceVirtualAddressing, iceio.S3RemoteSigningEnabled, iceio.S3CompatMode,
	iceio.GCSUseJSONAPI, iceio.GCSNoAuth, iceio.ADLSManagedIdentityEnabled}

// checkBool warns about a value of a boolean property that iceberg-go
// would ignore.
func checkBool(name, value string) string {
	if !slices.Contains(boolProperties, name) || isReference(value) {
		return ""
	}
	b, err := strconv.ParseBool(value)
	switch {
	case err != nil:
		return fmt.Sprintf("catalog property %s is %q, not true or false: iceberg-go ignores it", name, value)
	case name == iceio.ADLSManagedIdentityEnabled && b && value != "true":
		// iceberg-go compares it with "true".
		return fmt.Sprintf("catalog property %s is %q: iceberg-go reads only \"true\" as true", name, value)
	}
	return ""
}

func hasKnownPrefix(name string) bool {
	for _, p := range KnownPrefixes() {
		if strings.HasPrefix(name, p) && len(name) > len(p) {
			return true
		}
	}
	return false
}

// MergedProperties returns the properties as configured: PropertiesFile's,
// overridden by Properties, references not resolved.
func (c Config) MergedProperties() (map[string]string, error) {
	props := map[string]string{}
	if c.PropertiesFile != "" {
		file, err := readPropertiesFile(c.PropertiesFile)
		if err != nil {
			return nil, err
		}
		maps.Copy(props, file)
	}
	maps.Copy(props, c.Properties)
	return props, nil
}

// readPropertiesFile reads a YAML map of property names to values.
func readPropertiesFile(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: catalog properties file: %v", ErrInvalidConfig, err)
	}
	var props map[string]string
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&props); err != nil && !errors.Is(err, io.EOF) {
		// yaml's message quotes the offending line, which may hold a
		// secret: say only where it is.
		return nil, fmt.Errorf("%w: catalog properties file %s: not a YAML map of property names to values (%s)",
			ErrInvalidConfig, path, yamlErrorLine(err))
	}
	return props, nil
}

// yamlErrorLine is where a YAML error is, without the text it quotes.
func yamlErrorLine(err error) string {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		if line, _, ok := strings.Cut(te.Errors[0], ":"); ok {
			return line
		}
	}
	msg := err.Error()
	if i := strings.Index(msg, "line "); i >= 0 {
		line, _, _ := strings.Cut(msg[i:], ":")
		return line
	}
	return "malformed"
}

// properties returns the properties as iceberg-go gets them: merged, with
// every reference resolved.
func (c Config) properties() (map[string]string, error) {
	props, err := c.MergedProperties()
	if err != nil {
		return nil, err
	}
	return ResolveProperties(props)
}

// ResolveProperties returns props with each value that is a reference
// replaced by what it names: ${env:NAME} by the environment variable NAME,
// ${file:PATH} by the content of the file PATH without its final newline.
// A reference is the whole value; a value that only contains one is taken
// as it is. A variable that is not set, a file that cannot be read or a
// reference of another kind is an ErrInvalidConfig that names the property
// and the reference, never a value.
func ResolveProperties(props map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(props))
	for _, name := range slices.Sorted(maps.Keys(props)) {
		v, err := resolve(props[name])
		if err != nil {
			return nil, fmt.Errorf("%w: catalog property %s: %v", ErrInvalidConfig, name, err)
		}
		out[name] = v
	}
	return out, nil
}

// isReference reports whether v is a reference ${kind:arg}.
func isReference(v string) bool { return strings.HasPrefix(v, "${") && strings.HasSuffix(v, "}") }

func resolve(v string) (string, error) {
	if !isReference(v) {
		return v, nil
	}
	kind, arg, ok := strings.Cut(v[2:len(v)-1], ":")
	switch {
	case !ok || arg == "":
		// Not shown: a value that is no reference may be a secret.
		return "", errors.New("its value looks like a reference (${...}) but is none: write ${env:NAME} or ${file:PATH}")
	case kind == "env":
		s, ok := os.LookupEnv(arg)
		if !ok {
			return "", fmt.Errorf("%s: the environment variable %s is not set", v, arg)
		}
		return s, nil
	case kind == "file":
		b, err := os.ReadFile(arg)
		if err != nil {
			return "", fmt.Errorf("%s: %v", v, err)
		}
		s := strings.TrimSuffix(string(b), "\n")
		return strings.TrimSuffix(s, "\r"), nil
	default:
		return "", fmt.Errorf("its value looks like a reference of unknown kind %q: write ${env:NAME} or ${file:PATH}", kind)
	}
}

// secretWords mark the property names whose values are secrets.
var secretWords = []string{"secret", "token", "credential", "key", "password", "authorization", "signature"}

// IsSecretProperty reports whether the property name holds a secret, by
// its name: one that contains secret, token, credential, key, password,
// authorization or signature.
func IsSecretProperty(name string) bool {
	lower := strings.ToLower(name)
	for _, w := range secretWords {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

// RedactURI returns uri with the password of its user information, if
// any, replaced by "xxxxx".
func RedactURI(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.User == nil {
		return uri
	}
	return u.Redacted()
}

// Redacted is what RedactProperties shows of a secret value.
const Redacted = "[redacted]"

// RedactProperties returns props fit for a log: a secret property's value
// (IsSecretProperty) is Redacted, unless it is a reference (${env:NAME},
// ${file:PATH}), which names the secret and is shown as it is.
func RedactProperties(props map[string]string) map[string]string {
	out := make(map[string]string, len(props))
	for k, v := range props {
		if IsSecretProperty(k) && !isReference(v) {
			v = Redacted
		}
		out[k] = v
	}
	return out
}
