package daemon

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// --advertise and --peers come from flags, the environment and YAML, and
// a malformed address is named at start.
func TestReplicasConfig(t *testing.T) {
	yamlFile := filepath.Join(t.TempDir(), "flightd.yaml")
	if err := os.WriteFile(yamlFile, []byte("replicas:\n  advertise: grpc://a:1\n  peers:\n    - grpc://a:1\n    - grpc://b:1\n"),
		0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig([]string{"--config", yamlFile}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Replicas.Advertise != "grpc://a:1" || !slices.Equal(c.Replicas.Peers, []string{"grpc://a:1", "grpc://b:1"}) {
		t.Fatalf("YAML: %+v", c.Replicas)
	}
	c, err = LoadConfig([]string{"--config", yamlFile, "--peers", "grpc+tls://x:2, grpc+tls://y:2"},
		[]string{"SLUICE_ADVERTISE=grpc+tls://x:2", "SLUICE_PEERS=dns://ignored:1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Replicas.Advertise != "grpc+tls://x:2" || !slices.Equal(c.Replicas.Peers, []string{"grpc+tls://x:2", "grpc+tls://y:2"}) {
		t.Fatalf("flags over the environment over YAML: %+v", c.Replicas)
	}
	c, err = LoadConfig(nil, []string{"SLUICE_PEERS=dns://sluice-headless:8815"}, io.Discard)
	if err != nil || !slices.Equal(c.Replicas.Peers, []string{"dns://sluice-headless:8815"}) {
		t.Fatalf("environment: %+v, %v", c.Replicas, err)
	}
	for _, tt := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--advertise", "10.0.0.1:8815"}, "--advertise"},
		{[]string{"--advertise", "http://a:1"}, "--advertise"},
		{[]string{"--peers", "grpc://a:1,grpc://b"}, "--peers"},
		{[]string{"--peers", "dns://name"}, "dns://name:port"},
		{[]string{"--peers", "dns://name:1,grpc://a:1"}, "list it alone"},
	} {
		_, err := LoadConfig(tt.args, nil, io.Discard)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%v: %v, want ErrConfig naming %s", tt.args, err, tt.msg)
		}
	}
}
