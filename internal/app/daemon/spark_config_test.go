package daemon

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicefeed/sluice/registry"
)

// TestSparkConfig: spark: takes one server (a mapping) or several (a list),
// table routes as Spark's name or {name, backend}; --spark-connect and
// SLUICE_SPARK_CONNECT set the only server's remote; every misconfiguration
// is an ErrConfig that names it, at start.
func TestSparkConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	one := write("one.yaml", `spark:
  remote: sc://127.0.0.1:15002
  tables:
    "sales.orders": spark_catalog.sales.orders
    "delta.rt": {name: spark_catalog.default.rt, backend: spark}
  namespaces:
    lake: ice.db
  backend: auto
`)
	two := write("two.yaml", `spark:
  - remote: sc://spark42:15002/;token=secret
    tables: {"delta.rt": spark_catalog.default.rt}
  - remote: sc://spark41
    namespaces: {db: {name: ice.db, backend: native}}
`)
	wh := []string{"--warehouse", dir}
	c, err := LoadConfig(append([]string{"--config", one}, wh...), nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Spark.Servers; len(s) != 1 || s[0].Tables["delta.rt"] != (registry.SparkRoute{Name: "spark_catalog.default.rt",
		Backend: "spark"}) || s[0].Tables["sales.orders"].Name != "spark_catalog.sales.orders" ||
		s[0].Namespaces["lake"].Name != "ice.db" {
		t.Fatalf("one server: %+v", s)
	}
	c, err = LoadConfig(append([]string{"--config", one, "--spark-connect", "sc://other:1"}, wh...), nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if sc, err := c.SparkServers(); err != nil || sc.Servers[0].Remote != "sc://other:1" {
		t.Fatalf("--spark-connect: %+v, %v", sc, err)
	}
	c, err = LoadConfig(append([]string{"--config", one}, wh...), []string{"SLUICE_SPARK_CONNECT=sc://env:2"}, io.Discard)
	if sc, _ := c.SparkServers(); err != nil || sc.Servers[0].Remote != "sc://env:2" {
		t.Fatalf("SLUICE_SPARK_CONNECT: %+v, %v", sc, err)
	}
	c, err = LoadConfig(append([]string{"--config", two}, wh...), nil, io.Discard)
	if err != nil || len(c.Spark.Servers) != 2 || c.Spark.Servers[1].Namespaces["db"].Backend != "native" {
		t.Fatalf("two servers: %+v, %v", c.Spark, err)
	}

	for _, tc := range []struct {
		name, yaml string
		args       []string
		want       string
	}{
		{"flag with two servers", "", []string{"--config", two, "--spark-connect", "sc://x"}, "names 2 Spark servers"},
		{"a server that routes nothing", "", []string{"--spark-connect", "sc://x"}, "routes no table"},
		{"not a Spark Connect URI", "spark:\n  remote: http://x\n  tables: {a.b: c.d}\n", nil, "does not start with sc://"},
		{"a backend typo", "spark:\n  remote: sc://x\n  backend: sprak\n  tables: {a.b: c.d}\n", nil, `backend "sprak"`},
		{"a table backend typo", "spark:\n  remote: sc://x\n  tables: {a.b: {name: c.d, backend: nativ}}\n", nil,
			`tables a.b: backend "nativ"`},
		{"an unknown key", "spark:\n  remote: sc://x\n  tabels: {a.b: c.d}\n", nil, "tabels"},
		{"a Sluice name without namespace", "spark:\n  remote: sc://x\n  tables: {orders: c.d}\n", nil, "namespace.table"},
		{"a bad Spark name", "spark:\n  remote: sc://x\n  tables: {a.b: \"c..d\"}\n", nil, "empty part"},
		{"a table on two servers", "spark:\n  - remote: sc://x\n    tables: {a.b: c.d}\n  - remote: sc://y\n    tables: {a.b: e.f}\n",
			nil, "a.b is routed to two Spark servers"},
		{"the token stays out of messages", "spark:\n  remote: sc://x/;token=hunter2;bogus=1\n  tables: {a.b: c.d}\n", nil,
			"unknown parameter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{}, tc.args...)
			if tc.yaml != "" {
				args = append(args, "--config", write(strings.ReplaceAll(tc.name, " ", "_")+".yaml", tc.yaml))
			}
			_, err := LoadConfig(append(args, wh...), nil, io.Discard)
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrConfig naming %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("the token is in the message: %v", err)
			}
		})
	}
}
