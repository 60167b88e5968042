package catalog_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sluicefeed/sluice/catalog"
)

// TestCheckProperties: each name iceberg-go would ignore in silence gets a
// warning that says what to write instead; the names it reads get none.
func TestCheckProperties(t *testing.T) {
	props := map[string]string{
		"s3.endpoint": "http://minio:9000", "s3.region": "us-east-1", "client.region": "us-east-1",
		"s3.access-key-id": "a", "s3.secret-access-key": "b", "s3.session-token": "c",
		"s3.force-virtual-addressing": "false", "gcs.keypath": "/k.json", "adls.auth.shared-key.account.name": "acct",
		"adls.sas-token.acct.dfs.core.windows.net": "sv=x", "adls.connection-string.acct": "cs",
		"credential": "id:secret", "scope": "catalog", "oauth2-server-uri": "https://idp/token", "header.X-Tenant": "a",
		"rest.tls.ca-file": "/ca.pem", "warehouse": "lake",
	}
	if w := catalog.CheckProperties(catalog.TypeREST, props); len(w) != 0 {
		t.Fatalf("known names warned about: %q", w)
	}
	for value, want := range map[string]string{"yes": "not true or false", "false": "", "TRUE": ""} {
		w := catalog.CheckProperties(catalog.TypeREST, map[string]string{"s3.force-virtual-addressing": value})
		if (want == "") != (len(w) == 0) || (want != "" && !strings.Contains(w[0], want)) {
			t.Errorf("s3.force-virtual-addressing=%s: %q", value, w)
		}
	}
	if w := catalog.CheckProperties(catalog.TypeREST, map[string]string{"adls.auth.managed-identity.enabled": "1"}); len(w) != 1 ||
		!strings.Contains(w[0], `only "true"`) {
		t.Errorf("managed identity 1: %q", w)
	}
	for _, tt := range []struct {
		typ, name string
		words     []string
	}{
		{catalog.TypeREST, "s3.path-style-access", []string{"not read by iceberg-go", "path-style addressing is already", "s3.force-virtual-addressing=true"}},
		{catalog.TypeREST, "s3.endpiont", []string{"unknown to iceberg-go", "did you mean s3.endpoint?"}},
		{catalog.TypeREST, "s3.acess-key-id", []string{"did you mean s3.access-key-id?"}},
		{catalog.TypeREST, "oauth2-server-url", []string{"did you mean oauth2-server-uri?"}},
		{catalog.TypeREST, "client.access-key-id", []string{"use s3.access-key-id"}},
		{catalog.TypeREST, "s3.role-arn", []string{"AWS_ROLE_ARN"}},
		{catalog.TypeREST, "adls.account-key", []string{"adls.auth.shared-key.account.key"}},
		{catalog.TypeREST, "py-io-impl", []string{"by the URL's scheme"}},
		{catalog.TypeREST, "uri", []string{"--catalog-uri"}},
		{catalog.TypeSQL, "credential", []string{"rest catalog only"}},
		{catalog.TypeREST, "zzzzzzzzzzzz", []string{"unknown to iceberg-go and is ignored"}},
	} {
		w := catalog.CheckProperties(tt.typ, map[string]string{tt.name: "v"})
		if len(w) != 1 || !strings.Contains(w[0], tt.name) {
			t.Errorf("%s: %q", tt.name, w)
			continue
		}
		for _, word := range tt.words {
			if !strings.Contains(w[0], word) {
				t.Errorf("%s: %q does not say %q", tt.name, w[0], word)
			}
		}
		if strings.Contains(w[0], "v\"") {
			t.Errorf("%s: the warning shows the value: %q", tt.name, w[0])
		}
	}
}

// TestResolveProperties: ${env:NAME} and ${file:PATH} are replaced by what
// they name; a reference that cannot be resolved is an error that names
// the property and the reference, never a value.
func TestResolveProperties(t *testing.T) {
	t.Setenv("TEST_SLUICE_SECRET", "from-env")
	file := writeFile(t, "secret", "from-file\n")
	got, err := catalog.ResolveProperties(map[string]string{
		"a": "${env:TEST_SLUICE_SECRET}", "b": "${file:" + file + "}", "c": "plain", "d": "x${env:TEST_SLUICE_SECRET}",
	})
	want := map[string]string{"a": "from-env", "b": "from-file", "c": "plain", "d": "x${env:TEST_SLUICE_SECRET}"}
	if err != nil || !maps.Equal(got, want) {
		t.Fatalf("%v %v", got, err)
	}
	for _, tt := range []struct {
		value string
		words []string
	}{
		{"${env:TEST_SLUICE_UNSET}", []string{"s3.secret-access-key", "${env:TEST_SLUICE_UNSET}", "not set"}},
		{"${file:/nonexistent/secret}", []string{"s3.secret-access-key", "${file:/nonexistent/secret}", "no such file"}},
		{"${vault:kv/x}", []string{"unknown kind"}},
		{"${hunter2}", []string{"looks like a reference"}},
	} {
		_, err := catalog.ResolveProperties(map[string]string{"s3.secret-access-key": tt.value})
		if !errors.Is(err, catalog.ErrInvalidConfig) {
			t.Fatalf("%s: %v", tt.value, err)
		}
		for _, w := range tt.words {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v does not say %q", tt.value, err, w)
			}
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("the error shows the value: %v", err)
		}
	}
}

// TestPropertiesFile: the file's entries are overridden by the inline
// properties; a malformed file is named without its content.
func TestPropertiesFile(t *testing.T) {
	cfg := catalog.Config{PropertiesFile: writeFile(t, "p.yaml", "token: file-token\ns3.region: eu-west-1\nrest.sigv4-enabled: true\n"),
		Properties: map[string]string{"s3.region": "us-east-1"}}
	got, err := cfg.MergedProperties()
	want := map[string]string{"token": "file-token", "s3.region": "us-east-1", "rest.sigv4-enabled": "true"}
	if err != nil || !maps.Equal(got, want) {
		t.Fatalf("%v %v", got, err)
	}
	for _, content := range []string{"token: [hunter2\n", "- hunter2\n", "token:\n  nested: hunter2\n"} {
		cfg.PropertiesFile = writeFile(t, "bad.yaml", content)
		_, err := cfg.MergedProperties()
		if !errors.Is(err, catalog.ErrInvalidConfig) || !strings.Contains(err.Error(), "bad.yaml") ||
			strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%q: %v", content, err)
		}
	}
	cfg.PropertiesFile = "/nonexistent/props.yaml"
	if _, err := cfg.MergedProperties(); !errors.Is(err, catalog.ErrInvalidConfig) {
		t.Errorf("missing file: %v", err)
	}
}

func TestRedactProperties(t *testing.T) {
	got := catalog.RedactProperties(map[string]string{
		"s3.secret-access-key": "hunter2", "credential": "id:hunter2", "token": "${env:TOKEN}",
		"header.Authorization": "Basic aHVudGVyMg==", "adls.sas-token.a.dfs.core.windows.net": "sig",
		"s3.endpoint": "http://minio:9000",
	})
	want := map[string]string{
		"s3.secret-access-key": catalog.Redacted, "credential": catalog.Redacted, "token": "${env:TOKEN}",
		"header.Authorization": catalog.Redacted, "adls.sas-token.a.dfs.core.windows.net": catalog.Redacted,
		"s3.endpoint": "http://minio:9000",
	}
	if !maps.Equal(got, want) {
		t.Fatalf("%v", got)
	}
}

// TestKnownPropertiesMatchIceberg: every property key constant of
// iceberg-go's REST catalog (unexported there, so listed by hand here) is
// a known name: after an upgrade of iceberg-go, this test names the keys
// KnownProperties lacks.
func TestKnownPropertiesMatchIceberg(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/apache/iceberg-go").Output()
	if err != nil {
		t.Skipf("iceberg-go's sources: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "catalog", "rest")
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no sources in %s: %v", dir, err)
	}
	re := regexp.MustCompile(`(?m)^\s*key[A-Za-z0-9]*\s*=\s*"([^"]+)"`)
	known := catalog.KnownProperties()
	found := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(src), -1) {
			found++
			if !slices.Contains(known, m[1]) {
				t.Errorf("iceberg-go's %s reads the property %q, which KnownProperties lacks", filepath.Base(f), m[1])
			}
		}
	}
	if found < 20 {
		t.Fatalf("found only %d property keys in %s: the pattern no longer matches iceberg-go's sources", found, dir)
	}
}

func TestRedactURI(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:hunter2@cat.example.com/api": "https://user:xxxxx@cat.example.com/api",
		"http://localhost:8181":                    "http://localhost:8181",
		"file:///data/catalog.db":                  "file:///data/catalog.db",
	} {
		if got := catalog.RedactURI(in); got != want {
			t.Errorf("RedactURI(%q) = %q", in, got)
		}
	}
}

// TestOpenedConfig: the catalog's Config holds its properties as opened,
// the properties file merged in and references resolved, for the file IO
// of tables that are not the catalog's (Delta tables on object storage).
func TestOpenedConfig(t *testing.T) {
	t.Setenv("TEST_SLUICE_S3_SECRET", "from-env")
	cat, err := catalog.Open(context.Background(), catalog.Config{Warehouse: t.TempDir(),
		PropertiesFile: writeFile(t, "p.yaml", "s3.region: eu-west-1\n"),
		Properties:     map[string]string{"s3.secret-access-key": "${env:TEST_SLUICE_S3_SECRET}"}})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	cfg := cat.Config()
	want := map[string]string{"s3.region": "eu-west-1", "s3.secret-access-key": "from-env"}
	if !maps.Equal(cfg.Properties, want) || cfg.PropertiesFile != "" {
		t.Fatalf("%+v", cfg)
	}
}
