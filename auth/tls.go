package auth

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// ServerTLSConfig returns the TLS configuration of a server with the
// certificate chain certFile and its key keyFile (PEM), speaking TLS 1.2 or
// later. With clientCAFile (PEM certificates) client certificates are
// verified against those CAs: required on every connection when
// requireClientCert is set (mutual TLS), else verified when a client
// presents one. requireClientCert without clientCAFile is an error. Errors
// wrap ErrInvalidConfig and name the file.
//
// Pass the result to grpc.Creds(credentials.NewTLS(cfg)).
func ServerTLSConfig(certFile, keyFile, clientCAFile string, requireClientCert bool) (*tls.Config, error) {
	if certFile == "" || keyFile == "" {
		return nil, fmt.Errorf("%w: TLS needs both a certificate file and a key file", ErrInvalidConfig)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("%w: TLS certificate %s and key %s: %v", ErrInvalidConfig, certFile, keyFile, err)
	}
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.NoClientCert,
	}
	switch {
	case clientCAFile != "":
		pem, err := os.ReadFile(clientCAFile)
		if err != nil {
			return nil, fmt.Errorf("%w: client CA file: %v", ErrInvalidConfig, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: client CA file %s: no PEM certificate in it", ErrInvalidConfig, clientCAFile)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
		if requireClientCert {
			cfg.ClientAuth = tls.RequireAndVerifyClientCert
		}
	case requireClientCert:
		return nil, fmt.Errorf("%w: requiring client certificates needs a client CA file", ErrInvalidConfig)
	}
	return cfg, nil
}

// ServerTLS returns the server's TLS configuration (ServerTLSConfig with
// c.TLS; client certificates required in mode mtls), or nil when TLS is not
// configured.
func (c Config) ServerTLS() (*tls.Config, error) {
	if !c.TLS.Enabled() {
		return nil, nil
	}
	m, err := parseMode(c.Mode)
	if err != nil {
		return nil, err
	}
	return ServerTLSConfig(c.TLS.CertFile, c.TLS.KeyFile, c.TLS.ClientCAFile, m.mtls)
}
