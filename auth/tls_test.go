package auth

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"path/filepath"
	"testing"
)

func TestServerTLSConfig(t *testing.T) {
	ca := newTestCA(t, "Sluice test CA")
	server := ca.issue(t, pkix.Name{CommonName: "sluice"}, true)
	other := ca.issue(t, pkix.Name{CommonName: "other"}, true)
	missing := filepath.Join(t.TempDir(), "missing.pem")
	garbage := writeFile(t, "garbage.pem", "not PEM at all\n")
	tests := []struct {
		name             string
		cert, key, ca    string
		require          bool
		wantErr          bool
		wantClientAuth   tls.ClientAuthType
		wantClientCAsSet bool
	}{
		{"server TLS", server.certFile, server.keyFile, "", false, false, tls.NoClientCert, false},
		{"mutual TLS", server.certFile, server.keyFile, ca.file, true, false, tls.RequireAndVerifyClientCert, true},
		{"client certificates if given", server.certFile, server.keyFile, ca.file, false, false, tls.VerifyClientCertIfGiven, true},
		{"no certificate", "", server.keyFile, "", false, true, 0, false},
		{"no key", server.certFile, "", "", false, true, 0, false},
		{"missing certificate", missing, server.keyFile, "", false, true, 0, false},
		{"missing key", server.certFile, missing, "", false, true, 0, false},
		{"garbage certificate", garbage, server.keyFile, "", false, true, 0, false},
		{"key of another certificate", server.certFile, other.keyFile, "", false, true, 0, false},
		{"missing client CA", server.certFile, server.keyFile, missing, true, true, 0, false},
		{"client CA without certificates", server.certFile, server.keyFile, garbage, true, true, 0, false},
		{"client CA that is a key", server.certFile, server.keyFile, server.keyFile, true, true, 0, false},
		{"required client certificates without a CA", server.certFile, server.keyFile, "", true, true, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ServerTLSConfig(tt.cert, tt.key, tt.ca, tt.require)
			if tt.wantErr {
				if !errors.Is(err, ErrInvalidConfig) {
					t.Fatalf("ServerTLSConfig = %v, want ErrInvalidConfig", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.MinVersion != tls.VersionTLS12 || len(cfg.Certificates) != 1 ||
				cfg.ClientAuth != tt.wantClientAuth || (cfg.ClientCAs != nil) != tt.wantClientCAsSet {
				t.Fatalf("config: min version %x, %d certificates, client auth %v, client CAs %v",
					cfg.MinVersion, len(cfg.Certificates), cfg.ClientAuth, cfg.ClientCAs != nil)
			}
		})
	}
}

func TestConfigServerTLS(t *testing.T) {
	ca := newTestCA(t, "Sluice test CA")
	server := ca.issue(t, pkix.Name{CommonName: "sluice"}, true)
	if cfg, err := (Config{}).ServerTLS(); cfg != nil || err != nil {
		t.Fatalf("without TLS: %v, %v", cfg, err)
	}
	cfg, err := Config{Mode: "mtls", TLS: TLSConfig{CertFile: server.certFile, KeyFile: server.keyFile, ClientCAFile: ca.file}}.ServerTLS()
	if err != nil || cfg.ClientAuth != tls.RequireAndVerifyClientCert {
		t.Fatalf("mtls: %v, %v", cfg, err)
	}
	cfg, err = Config{Mode: "token", TLS: TLSConfig{CertFile: server.certFile, KeyFile: server.keyFile}}.ServerTLS()
	if err != nil || cfg.ClientAuth != tls.NoClientCert {
		t.Fatalf("token: %v, %v", cfg, err)
	}
}
