package auth

import (
	"errors"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	tls := TLSConfig{CertFile: "server.pem", KeyFile: "server.key"}
	mtls := TLSConfig{CertFile: "server.pem", KeyFile: "server.key", ClientCAFile: "ca.pem"}
	tests := []struct {
		name   string
		cfg    Config
		listen string
		ok     bool
	}{
		{"default on loopback", Config{}, "127.0.0.1:8815", true},
		{"off on localhost", Config{Mode: "off"}, "localhost:0", true},
		{"off on ipv6 loopback", Config{Mode: "off"}, "[::1]:8815", true},
		{"off on 127.0.0.2", Config{Mode: "off"}, "127.0.0.2:8815", true},
		{"off on every interface", Config{}, ":8815", false},
		{"off on 0.0.0.0", Config{Mode: "off"}, "0.0.0.0:8815", false},
		{"off on a public address", Config{Mode: "off"}, "192.0.2.1:8815", false},
		{"off on a host name", Config{Mode: "off"}, "sluice.example:8815", false},
		{"off on a malformed address", Config{Mode: "off"}, "127.0.0.1", false},
		{"unknown mode", Config{Mode: "kerberos"}, "127.0.0.1:1", false},
		{"mode named twice", Config{Mode: "token,token", TokensFile: "t"}, "127.0.0.1:1", false},
		{"off and token", Config{Mode: "off,token", TokensFile: "t"}, "127.0.0.1:1", false},
		{"mtls and token", Config{Mode: "mtls,token", TokensFile: "t", TLS: mtls}, "127.0.0.1:1", false},
		{"token without a file", Config{Mode: "token"}, "127.0.0.1:1", false},
		{"token on loopback without TLS", Config{Mode: "token", TokensFile: "t"}, "127.0.0.1:1", true},
		{"token off loopback without TLS", Config{Mode: "token", TokensFile: "t"}, ":1", false},
		{"token off loopback, plaintext allowed", Config{Mode: "token", TokensFile: "t", AllowPlaintext: true}, ":1", true},
		{"token off loopback with TLS", Config{Mode: "token", TokensFile: "t", TLS: tls}, ":1", true},
		{"basic without a file", Config{Mode: "basic"}, "127.0.0.1:1", false},
		{"token and basic", Config{Mode: " Token , basic ", TokensFile: "t", UsersFile: "u", TLS: tls}, ":1", true},
		{"negative TTL", Config{Mode: "basic", UsersFile: "u", TokenTTL: -time.Second}, "127.0.0.1:1", false},
		{"TTL too long", Config{Mode: "basic", UsersFile: "u", TokenTTL: MaxTokenTTL + time.Second}, "127.0.0.1:1", false},
		{"longest TTL", Config{Mode: "basic", UsersFile: "u", TokenTTL: MaxTokenTTL}, "127.0.0.1:1", true},
		{"certificate without key", Config{TLS: TLSConfig{CertFile: "c"}}, "127.0.0.1:1", false},
		{"key without certificate", Config{TLS: TLSConfig{KeyFile: "k"}}, "127.0.0.1:1", false},
		{"mtls", Config{Mode: "mtls", TLS: mtls}, ":1", true},
		{"mtls without a client CA", Config{Mode: "mtls", TLS: tls}, ":1", false},
		{"mtls without TLS", Config{Mode: "mtls", TLS: TLSConfig{ClientCAFile: "ca"}}, ":1", false},
		{"client CA outside mtls", Config{Mode: "token", TokensFile: "t", TLS: mtls}, ":1", false},
		{"client principals outside mtls", Config{ClientPrincipals: map[string]string{"a": "b"}}, "127.0.0.1:1", false},
		{"mtls with client principals", Config{Mode: "mtls", TLS: mtls, ClientPrincipals: map[string]string{"CN=a": "b"}}, ":1", true},
		{"mtls with an empty principal", Config{Mode: "mtls", TLS: mtls, ClientPrincipals: map[string]string{"CN=a": ""}}, ":1", false},
		{"bad rule", Config{Rules: []Rule{{Principals: []string{"*"}}}}, "127.0.0.1:1", false},
		{"good rule", Config{Rules: []Rule{{Principals: []string{"*"}, Tables: []string{"*"}}}}, "127.0.0.1:1", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.WithDefaults().Validate(tt.listen)
			if tt.ok && err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if !tt.ok && !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("Validate = %v, want ErrInvalidConfig", err)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	c := Config{}.WithDefaults()
	if c.Mode != ModeOff || c.TokenTTL != time.Hour {
		t.Fatalf("defaults: %+v", c)
	}
	c = Config{Mode: "basic", TokenTTL: time.Minute}.WithDefaults()
	if c.Mode != ModeBasic || c.TokenTTL != time.Minute {
		t.Fatalf("set fields overridden: %+v", c)
	}
}

func TestConfigYAML(t *testing.T) {
	var c Config
	err := decodeStrict([]byte(`
mode: token,basic
tokens_file: /etc/sluice/tokens.yaml
users_file: /etc/sluice/users.yaml
token_ttl: 30m
secret_file: /etc/sluice/secret
tls:
  cert_file: server.pem
  key_file: server.key
allow_plaintext: false
deny_by_default: true
rules:
  - principals: ["analyst-*"]
    tables: ["sales.*"]
    columns:
      sales.customers: [id, country]
consumers:
  - consumers: ["orders-mirror", "billing-*"]
    principal: ingest
`), &c)
	if err != nil {
		t.Fatal(err)
	}
	if c.TokenTTL != 30*time.Minute || c.TLS.CertFile != "server.pem" || !c.DenyByDefault ||
		len(c.Rules) != 1 || c.Rules[0].Columns["sales.customers"][1] != "country" ||
		len(c.Consumers) != 1 || c.Consumers[0].Principal != "ingest" || c.Consumers[0].Consumers[1] != "billing-*" {
		t.Fatalf("decoded: %+v", c)
	}
	if err := c.Validate("0.0.0.0:8815"); err != nil {
		t.Fatal(err)
	}
	if err := decodeStrict([]byte("mode: token\ntoken_file: x\n"), &Config{}); err == nil {
		t.Fatal("an unknown key was accepted")
	}
}
