package registry

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/spark"
)

// The backend choices of SparkServer.Backend and SparkRoute.Backend.
const (
	// BackendAuto serves a table through Spark when the verdict chose one
	// of Spark's engines, natively otherwise. The default.
	BackendAuto = "auto"
	// BackendNative serves the table natively; Spark is not asked.
	BackendNative = "native"
	// BackendSpark serves the table through Spark: a verdict that chose
	// no Spark engine makes its reads fail with the verdict's reason.
	BackendSpark = "spark"
)

// SparkConfig is the Spark Connect servers that may serve tables (YAML
// spark:, one server as a mapping or several as a list; --spark-connect
// sets the remote of the only one).
type SparkConfig struct {
	Servers []SparkServer
}

// SparkServer is one Spark Connect server and the tables it may serve.
type SparkServer struct {
	// Remote is the server's Spark Connect URI,
	// sc://host[:port][/;token=...;use_ssl=true;user_id=...] (port 15002
	// by default; a token implies TLS).
	Remote string `yaml:"remote"`
	// Tables maps Sluice table names ("namespace.table") to Spark's names
	// for them (catalog.namespace.table), each with its own backend when
	// given as {name: ..., backend: ...}.
	Tables map[string]SparkRoute `yaml:"tables"`
	// Namespaces maps Sluice namespaces to Spark namespaces: the Sluice
	// table ns.t is Spark's <namespace>.t.
	Namespaces map[string]SparkRoute `yaml:"namespaces"`
	// Backend is the server's default choice: auto (default), native or
	// spark.
	Backend string `yaml:"backend"`
}

// SparkRoute is Spark's name for a table or namespace and, when set, its
// own backend choice. In YAML it is the name alone, or {name, backend}.
type SparkRoute struct {
	Name    string `yaml:"name"`
	Backend string `yaml:"backend"`
}

// UnmarshalYAML reads a route given as Spark's name alone or as a mapping.
func (r *SparkRoute) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*r = SparkRoute{Name: n.Value}
		return nil
	}
	type plain SparkRoute
	return strictDecode(n, (*plain)(r))
}

// UnmarshalYAML reads one server (a mapping) or several (a list).
func (c *SparkConfig) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.SequenceNode {
		return strictDecode(n, &c.Servers)
	}
	var s SparkServer
	if err := strictDecode(n, &s); err != nil {
		return err
	}
	c.Servers = []SparkServer{s}
	return nil
}

// strictDecode decodes n into v refusing unknown keys, as the rest of the
// configuration file is read (yaml.Node.Decode would ignore them).
func strictDecode(n *yaml.Node, v any) error {
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	return dec.Decode(v)
}

// Enabled reports whether any server is configured.
func (c SparkConfig) Enabled() bool { return len(c.Servers) > 0 }

// WithRemote returns c with the remote of --spark-connect: the only
// server's, or a first server's. With several servers it is an error:
// each names its own remote in YAML.
func (c SparkConfig) WithRemote(uri string) (SparkConfig, error) {
	if uri == "" {
		return c, nil
	}
	switch len(c.Servers) {
	case 0:
		return SparkConfig{Servers: []SparkServer{{Remote: uri}}}, nil
	case 1:
		s := c.Servers[0]
		s.Remote = uri
		return SparkConfig{Servers: []SparkServer{s}}, nil
	}
	return c, fmt.Errorf("%w: --spark-connect %s: the configuration file names %d Spark servers; set each one's "+
		"remote there", ErrConfig, redactRemote(uri), len(c.Servers))
}

// Validate checks every server: its remote, its backend choices, its
// tables' and namespaces' names on both sides, and that no Sluice table or
// namespace is routed to two servers.
func (c SparkConfig) Validate() error {
	tables, namespaces := map[string]string{}, map[string]string{}
	for i, s := range c.Servers {
		where := fmt.Sprintf("spark server %d", i+1)
		if s.Remote == "" {
			return fmt.Errorf("%w: %s has no remote (sc://host:15002)", ErrConfig, where)
		}
		if _, err := spark.ParseRemote(s.Remote); err != nil {
			return fmt.Errorf("%w: %s: remote: %w", ErrConfig, where, err)
		}
		where = "spark server " + redactRemote(s.Remote)
		if err := checkChoice(where+": backend", s.Backend); err != nil {
			return err
		}
		if len(s.Tables) == 0 && len(s.Namespaces) == 0 {
			return fmt.Errorf("%w: %s routes no table: give spark.tables (Sluice name: Spark name) or "+
				"spark.namespaces (Sluice namespace: Spark namespace)", ErrConfig, where)
		}
		for _, name := range sortedKeys(s.Tables) {
			r := s.Tables[name]
			if _, err := catalog.ParseName(name); err != nil {
				return fmt.Errorf("%w: %s: tables: %w", ErrConfig, where, err)
			}
			if err := checkRoute(where+": tables "+name, r); err != nil {
				return err
			}
			if prev, ok := tables[name]; ok {
				return fmt.Errorf("%w: table %s is routed to two Spark servers, %s and %s", ErrConfig, name, prev,
					redactRemote(s.Remote))
			}
			tables[name] = redactRemote(s.Remote)
		}
		for _, ns := range sortedKeys(s.Namespaces) {
			if strings.TrimSpace(ns) == "" || strings.HasPrefix(ns, ".") || strings.HasSuffix(ns, ".") {
				return fmt.Errorf("%w: %s: namespaces: %q is not a namespace", ErrConfig, where, ns)
			}
			if err := checkRoute(where+": namespaces "+ns, s.Namespaces[ns]); err != nil {
				return err
			}
			if prev, ok := namespaces[ns]; ok {
				return fmt.Errorf("%w: namespace %s is routed to two Spark servers, %s and %s", ErrConfig, ns, prev,
					redactRemote(s.Remote))
			}
			namespaces[ns] = redactRemote(s.Remote)
		}
	}
	return nil
}

func checkRoute(where string, r SparkRoute) error {
	if r.Name == "" {
		return fmt.Errorf("%w: %s: no Spark name", ErrConfig, where)
	}
	if _, err := spark.ParseTableName(r.Name); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrConfig, where, err)
	}
	return checkChoice(where+": backend", r.Backend)
}

func checkChoice(where, b string) error {
	switch b {
	case "", BackendAuto, BackendNative, BackendSpark:
		return nil
	}
	return fmt.Errorf("%w: %s %q: want auto, native or spark", ErrConfig, where, b)
}

func sortedKeys(m map[string]SparkRoute) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// redactRemote returns a Spark Connect URI without its parameters' values
// (a token), for messages and logs.
func redactRemote(uri string) string {
	if r, err := spark.ParseRemote(uri); err == nil {
		return r.String()
	}
	base, _, _ := strings.Cut(uri, "/;")
	return base
}

// pick returns the first backend choice given, else auto.
func pick(choices ...string) string {
	for _, b := range choices {
		if b != "" {
			return b
		}
	}
	return BackendAuto
}

// route is where a Sluice table goes: a server, Spark's name for it, and
// the backend choice in force (table, else namespace, else server, else
// auto).
type route struct {
	server  int
	name    spark.TableName
	backend string
}

// lookup returns the route of a Sluice table name: an entry of tables,
// else of namespaces (its longest namespace that is routed).
func (c SparkConfig) lookup(table string) (route, bool) {
	for i, s := range c.Servers {
		if r, ok := s.Tables[table]; ok {
			n, err := spark.ParseTableName(r.Name)
			return route{server: i, name: n, backend: pick(r.Backend, s.Backend)}, err == nil
		}
	}
	ident, err := catalog.ParseName(table)
	if err != nil {
		return route{}, false
	}
	for k := len(ident) - 1; k >= 1; k-- {
		ns := strings.Join(ident[:k], ".")
		for i, s := range c.Servers {
			if r, ok := s.Namespaces[ns]; ok {
				n, err := spark.ParseTableName(r.Name)
				if err != nil {
					return route{}, false
				}
				n = append(n, ident[k:]...)
				return route{server: i, name: n, backend: pick(r.Backend, s.Backend)}, true
			}
		}
	}
	return route{}, false
}
