// Package auth authenticates the callers of a Sluice server and decides
// which tables and columns they may read.
//
// # Threat model
//
// Sluice serves business data to many consumers over gRPC. The package
// defends against callers on the network who hold no credentials or wrong
// ones, who replay or forge bearer tokens, who guess passwords or token
// values (from answers or from timing), and authenticated callers who reach
// for tables or columns they were not granted. It assumes the server host,
// its configuration files and its secret file are protected by the
// operating system, and that the CAs it is configured with are trusted.
// Without TLS, credentials cross the network in the clear: Validate refuses
// that off loopback unless TLS is terminated in front of the server.
//
// What it does for that:
//
//   - static tokens are stored as SHA-256 hashes (HashToken) and compared
//     in constant time, against every entry;
//   - passwords are stored as bcrypt hashes (HashPassword); an unknown user
//     costs as much time as a wrong password; at most GOMAXPROCS password
//     checks run at once, so a flood of handshakes cannot starve the
//     server; the server also rate-limits the Handshake per client
//     address (limits.calls_per_second, --calls-per-second);
//   - tokens issued by the Handshake carry their principal and expiry and
//     are signed with HMAC-SHA256 by a server secret; a changed byte, an
//     expired token, or one living longer than the configured TTL allows is
//     refused. Issued tokens cannot be revoked one by one: changing the
//     secret revokes them all; without a secret file, a restart does;
//   - client certificates are accepted only when verified against the
//     client CA, and with ClientPrincipals only when their subject is
//     mapped;
//   - errors never contain a token, a password or the secret, and a denial
//     names the principal and the table asked for only, never another
//     table's name.
//
// # Modes
//
// Config.Mode selects how callers authenticate:
//
//   - "off" (the default): every caller is the Anonymous principal.
//     Validate allows it only when the server listens on a loopback
//     address (the embedded demo setup).
//   - "token": callers send a static token in the metadata
//     "authorization: Bearer <token>" (pyarrow:
//     flight.FlightCallOptions(headers=[(b"authorization", b"Bearer ...")])).
//     Generate a token with NewToken, give it to the client, and list its
//     HashToken in TokensFile under the principal it stands for.
//   - "basic": clients call the Flight Handshake with
//     "authorization: Basic base64(user:password)"
//     (pyarrow: FlightClient.authenticate_basic_token(user, password)),
//     get back the header "authorization: Bearer <token>", and send it on
//     every later call until it expires (TokenTTL, default 1h). Users and
//     their HashPassword hashes are listed in UsersFile; SecretFile keeps
//     issued tokens valid across restarts and replicas.
//   - "token,basic": both kinds of bearer token are accepted.
//   - "mtls": every connection presents a client certificate that the
//     client CA (TLS.ClientCAFile) verifies; its common name, or the name
//     ClientPrincipals maps its subject or common name to, is the
//     principal (pyarrow: flight.connect("grpc+tls://host:port",
//     tls_root_certs=..., cert_chain=..., private_key=...)).
//
// TLS (TLS.CertFile and TLS.KeyFile; ServerTLSConfig) may be used with every
// mode and is required by "mtls"; it speaks TLS 1.2 or later.
//
// # Authorization
//
// Config.Rules grant principals (globs) the right to read tables (globs),
// optionally restricted to some columns per table; see Rule and
// Authorizer. Without rules every authenticated principal may read every
// table, unless DenyByDefault is set.
//
// # Use in a server
//
// An interceptor calls Authenticator.Authenticate for every call but the
// Flight Handshake and health checks, fails the call with Unauthenticated
// on error, and passes NewContext(ctx, principal) on; handlers read it back
// with FromContext and ask the Authorizer (Check, Project, CheckColumns,
// CanRead), failing with PermissionDenied; a handler with several
// questions about one table resolves the caller's Grant once and asks it. The Handshake handler calls
// Authenticator.Handshake and sends the metadata it returns as its
// response header. Errors wrap ErrUnauthenticated, ErrPermissionDenied or
// ErrInvalidConfig.
package auth
