package auth

import (
	"fmt"
	"net"
	"strings"
	"time"
)

// Authentication modes, the elements of Config.Mode.
const (
	// ModeOff admits every caller as the Anonymous principal. It is allowed
	// only on a loopback listen address.
	ModeOff = "off"
	// ModeToken admits callers that send a static bearer token of the
	// tokens file.
	ModeToken = "token"
	// ModeBasic admits callers that authenticate with the Flight basic-auth
	// Handshake (a user of the users file) and then send the bearer token
	// it issued.
	ModeBasic = "basic"
	// ModeMTLS admits callers that present a client certificate issued by
	// the client CA.
	ModeMTLS = "mtls"
)

// Defaults and limits of Config.
const (
	// DefaultMode is the embedded default: authentication off, which
	// Validate accepts on a loopback listen address only.
	DefaultMode = ModeOff
	// DefaultTokenTTL is how long a token issued by the Handshake is valid.
	DefaultTokenTTL = time.Hour
	// MaxTokenTTL is the longest TokenTTL accepted. Issued tokens cannot
	// be revoked one by one (only all at once, by changing the secret), so
	// their life is bounded.
	MaxTokenTTL = 7 * 24 * time.Hour
	// MinSecretBytes is the shortest signing secret accepted from
	// SecretFile.
	MinSecretBytes = 32
)

// Config configures authentication, TLS and authorization. The zero value,
// after WithDefaults, is the embedded default: authentication off (only
// valid on a loopback address), no TLS, and every caller may read every
// table.
type Config struct {
	// Mode selects how callers authenticate: "off" (default), "token",
	// "basic", "mtls", or "token,basic" (both kinds of bearer token are
	// accepted). "mtls" cannot be combined: every caller then presents a
	// verified certificate, which is its identity.
	Mode string `yaml:"mode"`
	// TokensFile is the YAML file of static bearer tokens (mode "token"):
	//
	//	tokens:
	//	  - principal: ingest
	//	    sha256: <hex SHA-256 of the token, see HashToken>
	TokensFile string `yaml:"tokens_file"`
	// UsersFile is the YAML file of users for the basic-auth Handshake
	// (mode "basic"):
	//
	//	users:
	//	  - name: alice
	//	    bcrypt: <bcrypt hash of the password, see HashPassword>
	UsersFile string `yaml:"users_file"`
	// TokenTTL is how long a bearer token issued by the Handshake is valid
	// (default 1h, at most MaxTokenTTL). A client authenticates again when
	// its token expires.
	TokenTTL time.Duration `yaml:"token_ttl"`
	// SecretFile holds the secret (at least MinSecretBytes bytes; trailing
	// white space is ignored) that signs issued tokens, so that they stay
	// valid across restarts and are accepted by every replica sharing the
	// file. Without it a random secret is drawn at start: issued tokens
	// then die with the process. Keep it readable by the server only.
	SecretFile string `yaml:"secret_file"`
	// TLS is the server's certificate and, for mode "mtls", the CA of the
	// client certificates. Without a certificate the server speaks
	// plaintext gRPC.
	TLS TLSConfig `yaml:"tls"`
	// ClientPrincipals maps client certificate subjects to principal names
	// (mode "mtls"). A key is either the certificate's full subject as Go
	// formats it (RFC 2253 order, e.g. "CN=ingest,OU=data,O=Acme") or its
	// common name alone. When it is empty, a verified certificate's common
	// name is the principal; when it is not, it is also the list of known
	// certificates: one whose subject it does not map is refused.
	ClientPrincipals map[string]string `yaml:"client_principals"`
	// AllowPlaintext lets bearer tokens and passwords travel without TLS on
	// a non-loopback address, for a server behind a TLS-terminating proxy.
	// Without it Validate refuses modes "token" and "basic" there unless
	// TLS is configured.
	AllowPlaintext bool `yaml:"allow_plaintext"`
	// Rules grant principals the right to read tables, optionally only some
	// of their columns. Grants add up; there are no deny rules. With rules,
	// a table no rule grants to a principal is denied to it. Without rules,
	// every authenticated principal may read every table, unless
	// DenyByDefault is set.
	Rules []Rule `yaml:"rules"`
	// DenyByDefault denies every table to every principal when there are no
	// Rules (so that losing the rules section never opens every table).
	DenyByDefault bool `yaml:"deny_by_default"`
	// Consumers fixes the owners of durable consumers: a consumer whose id
	// matches an entry's globs belongs, on every table, to the entry's
	// principal, which alone may stream it, acknowledge it and reset it
	// (the first matching entry wins). A consumer no entry matches belongs
	// to the first principal whose stream or acknowledgement names it on a
	// table.
	Consumers []ConsumerOwner `yaml:"consumers"`
}

// ConsumerOwner names the owner of the durable consumers whose ids match
// its globs. In YAML:
//
//	consumers:
//	  - consumers: ["orders-mirror", "billing-*"]
//	    principal: ingest
type ConsumerOwner struct {
	// Consumers are globs of consumer ids, as in Rule.
	Consumers []string `yaml:"consumers"`
	// Principal is the name of the principal that owns them.
	Principal string `yaml:"principal"`
}

// TLSConfig names the PEM files of the server's TLS setup.
type TLSConfig struct {
	// CertFile is the server's certificate chain (PEM). Set together with
	// KeyFile.
	CertFile string `yaml:"cert_file"`
	// KeyFile is the server certificate's private key (PEM).
	KeyFile string `yaml:"key_file"`
	// ClientCAFile holds the CA certificates (PEM) that issue client
	// certificates. Required by, and only used in, mode "mtls", where a
	// client certificate it verifies is required on every connection.
	ClientCAFile string `yaml:"client_ca_file"`
}

// Enabled reports whether the server serves TLS.
func (t TLSConfig) Enabled() bool { return t.CertFile != "" || t.KeyFile != "" }

// WithDefaults returns c with every unset field set to its default.
func (c Config) WithDefaults() Config {
	if strings.TrimSpace(c.Mode) == "" {
		c.Mode = DefaultMode
	}
	if c.TokenTTL == 0 {
		c.TokenTTL = DefaultTokenTTL
	}
	return c
}

// modes is the parsed Mode.
type modes struct {
	off, token, basic, mtls bool
}

// parseMode parses a Mode: "off", "mtls", or a comma-separated non-empty
// set of "token" and "basic".
func parseMode(s string) (modes, error) {
	var m modes
	if strings.TrimSpace(s) == "" {
		s = DefaultMode
	}
	for part := range strings.SplitSeq(s, ",") {
		seen := func(b *bool) error {
			if *b {
				return fmt.Errorf("%w: mode %q names %q twice", ErrInvalidConfig, s, strings.TrimSpace(part))
			}
			*b = true
			return nil
		}
		var err error
		switch strings.ToLower(strings.TrimSpace(part)) {
		case ModeOff:
			err = seen(&m.off)
		case ModeToken:
			err = seen(&m.token)
		case ModeBasic:
			err = seen(&m.basic)
		case ModeMTLS:
			err = seen(&m.mtls)
		default:
			err = fmt.Errorf("%w: unknown mode %q (want off, token, basic, mtls, or token,basic)",
				ErrInvalidConfig, strings.TrimSpace(part))
		}
		if err != nil {
			return modes{}, err
		}
	}
	n := 0
	for _, b := range []bool{m.off, m.token, m.basic, m.mtls} {
		if b {
			n++
		}
	}
	if n > 1 && (m.off || m.mtls) {
		return modes{}, fmt.Errorf("%w: mode %q: only token and basic may be combined", ErrInvalidConfig, s)
	}
	return m, nil
}

// Validate reports whether the configuration can be used by a server
// listening on listen (host:port). It refuses authentication "off", and
// bearer tokens or passwords without TLS (unless AllowPlaintext), on an
// address that is not loopback. It checks the configuration's shape; New
// and NewAuthorizer load the files and report what is wrong in them.
func (c Config) Validate(listen string) error {
	m, err := c.check()
	if err != nil {
		return err
	}
	if IsLoopback(listen) {
		return nil
	}
	if m.off {
		return fmt.Errorf("%w: authentication is off, which is allowed only on a loopback address, but the server listens on %q: set the auth mode (token, basic or mtls)",
			ErrInvalidConfig, listen)
	}
	if (m.token || m.basic) && !c.TLS.Enabled() && !c.AllowPlaintext {
		return fmt.Errorf("%w: mode %q sends credentials in the clear on %q: configure TLS (or allow_plaintext behind a TLS-terminating proxy)",
			ErrInvalidConfig, c.Mode, listen)
	}
	return nil
}

// check validates everything but what depends on the listen address.
func (c Config) check() (modes, error) {
	m, err := parseMode(c.Mode)
	if err != nil {
		return modes{}, err
	}
	if m.token && c.TokensFile == "" {
		return modes{}, fmt.Errorf("%w: mode token needs a tokens file", ErrInvalidConfig)
	}
	if m.basic {
		if c.UsersFile == "" {
			return modes{}, fmt.Errorf("%w: mode basic needs a users file", ErrInvalidConfig)
		}
		if c.TokenTTL < 0 || c.TokenTTL > MaxTokenTTL {
			return modes{}, fmt.Errorf("%w: token TTL %s: want a positive duration up to %s", ErrInvalidConfig, c.TokenTTL, MaxTokenTTL)
		}
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		return modes{}, fmt.Errorf("%w: TLS needs both a certificate file and a key file", ErrInvalidConfig)
	}
	if m.mtls && (!c.TLS.Enabled() || c.TLS.ClientCAFile == "") {
		return modes{}, fmt.Errorf("%w: mode mtls needs a TLS certificate, key and client CA file", ErrInvalidConfig)
	}
	if !m.mtls && c.TLS.ClientCAFile != "" {
		return modes{}, fmt.Errorf("%w: a client CA file is used only in mode mtls (mode is %q)", ErrInvalidConfig, c.Mode)
	}
	if !m.mtls && len(c.ClientPrincipals) > 0 {
		return modes{}, fmt.Errorf("%w: client principals are used only in mode mtls (mode is %q)", ErrInvalidConfig, c.Mode)
	}
	for subject, name := range c.ClientPrincipals {
		if subject == "" || name == "" {
			return modes{}, fmt.Errorf("%w: client principal %q: %q: empty subject or name", ErrInvalidConfig, subject, name)
		}
	}
	if err := checkRules(c.Rules); err != nil {
		return modes{}, err
	}
	if err := checkConsumers(c.Consumers); err != nil {
		return modes{}, err
	}
	return m, nil
}

// IsLoopback reports whether a listen address (host:port) binds loopback
// only: "localhost", 127.0.0.0/8 or ::1. An empty host binds every
// interface. The daemon applies the same rule to its metrics address.
func IsLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	if i := strings.IndexByte(host, '%'); i >= 0 {
		host = host[:i]
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
