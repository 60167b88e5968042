package daemon

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/sluicefeed/sluice/auth"
	"github.com/sluicefeed/sluice/catalog"
)

// k8sObject is the part of a Kubernetes object the deployment example's
// check reads.
type k8sObject struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
	StringData map[string]string `yaml:"stringData"`
	Spec       struct {
		ClusterIP string `yaml:"clusterIP"`
		Ports     []struct {
			Name       string `yaml:"name"`
			Port       int    `yaml:"port"`
			TargetPort string `yaml:"targetPort"`
		} `yaml:"ports"`
		Template struct {
			Spec struct {
				Containers []k8sContainer `yaml:"containers"`
				Volumes    []k8sVolume    `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type k8sVolume struct {
	Name      string `yaml:"name"`
	ConfigMap *struct {
		Name string `yaml:"name"`
	} `yaml:"configMap"`
	Secret *struct {
		SecretName string `yaml:"secretName"`
	} `yaml:"secret"`
}

type k8sProbe struct {
	GRPC *struct {
		Port int `yaml:"port"`
	} `yaml:"grpc"`
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
}

type k8sContainer struct {
	Args []string `yaml:"args"`
	Env  []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			FieldRef *struct {
				FieldPath string `yaml:"fieldPath"`
			} `yaml:"fieldRef"`
			SecretKeyRef *struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	ReadinessProbe k8sProbe `yaml:"readinessProbe"`
	LivenessProbe  k8sProbe `yaml:"livenessProbe"`
	StartupProbe   k8sProbe `yaml:"startupProbe"`
	VolumeMounts   []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		SubPath   string `yaml:"subPath"`
	} `yaml:"volumeMounts"`
}

// TestKubernetesExample loads deploy/kubernetes/sluice.yaml the way a pod
// would see it: the ConfigMap's flightd.yaml and the Secret's files are
// written where the volumes mount them (under a temporary root), the
// container's environment is built as the kubelet builds it, and flightd's
// configuration is loaded from its args. A flag, key or value the current
// flightd refuses, a secret reference that does not resolve, a token file
// that does not parse, or probes and Services that miss the ports flightd
// serves on fail the test.
func TestKubernetesExample(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "deploy", "kubernetes", "sluice.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string]k8sObject{}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	for {
		var o k8sObject
		if err := dec.Decode(&o); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("deploy/kubernetes/sluice.yaml: %v", err)
		}
		objs[o.Kind+"/"+o.Metadata.Name] = o
	}
	dep, ok := objs["Deployment/sluice-flightd"]
	if !ok {
		t.Fatalf("no Deployment sluice-flightd among %v", objs)
	}
	pod := dep.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(pod.Containers))
	}
	c := pod.Containers[0]

	// The volumes, under root: each mount's files from its ConfigMap or
	// Secret.
	root := t.TempDir()
	rebase := func(s string) string { return strings.ReplaceAll(s, "/etc/sluice", filepath.Join(root, "etc/sluice")) }
	for _, m := range c.VolumeMounts {
		i := slices.IndexFunc(pod.Volumes, func(v k8sVolume) bool { return v.Name == m.Name })
		if i < 0 {
			t.Fatalf("volume mount %s names no volume", m.Name)
		}
		v := pod.Volumes[i]
		var files map[string]string
		switch {
		case v.ConfigMap != nil:
			files = objs["ConfigMap/"+v.ConfigMap.Name].Data
		case v.Secret != nil:
			files = objs["Secret/"+v.Secret.SecretName].StringData
		default:
			continue // an emptyDir
		}
		if len(files) == 0 {
			t.Fatalf("volume %s: its ConfigMap or Secret is missing or empty", m.Name)
		}
		for name, content := range files {
			path := filepath.Join(root, m.MountPath, name)
			if m.SubPath != "" {
				if name != m.SubPath {
					continue
				}
				path = filepath.Join(root, m.MountPath)
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			// The files' own references to mounted paths move with them; the
			// token file's placeholder hash becomes a hash.
			content = strings.ReplaceAll(rebase(content), "sha256: CHANGE-ME", "sha256: "+auth.HashToken("t"))
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}

	// The environment, as the kubelet expands it.
	const podIP = "10.1.2.3"
	vars := map[string]string{}
	var environ []string
	expand := regexp.MustCompile(`\$\(([A-Z_][A-Z0-9_]*)\)`)
	for _, e := range c.Env {
		v := e.Value
		switch {
		case e.ValueFrom == nil:
			v = expand.ReplaceAllStringFunc(v, func(ref string) string { return vars[ref[2:len(ref)-1]] })
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.podIP":
			v = podIP
		case e.ValueFrom.SecretKeyRef != nil:
			s, ok := objs["Secret/"+e.ValueFrom.SecretKeyRef.Name].StringData[e.ValueFrom.SecretKeyRef.Key]
			if !ok {
				t.Fatalf("env %s: secret key %s/%s does not exist", e.Name,
					e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key)
			}
			v = s
		default:
			t.Fatalf("env %s: unexpected valueFrom", e.Name)
		}
		vars[e.Name] = v
		environ = append(environ, e.Name+"="+v)
	}
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		args[i] = rebase(a)
	}

	cfg, err := LoadConfig(args, environ, io.Discard)
	if err != nil {
		t.Fatalf("flightd refuses the example's configuration: %v", err)
	}
	if cfg.Replicas.Advertise != "grpc://"+podIP+":8815" {
		t.Errorf("advertise = %q, want this pod's address", cfg.Replicas.Advertise)
	}
	if !strings.HasPrefix(cfg.ProgressDSN(), "postgres://") {
		t.Errorf("progress store %q: replicas must share a PostgreSQL store", cfg.ProgressDSN())
	}
	// The catalog's secret references resolve from the mounted files, and
	// every property name is one iceberg-go reads.
	props, err := cfg.Catalog.MergedProperties()
	if err != nil {
		t.Fatalf("catalog properties: %v", err)
	}
	if _, err := catalog.ResolveProperties(props); err != nil {
		t.Fatalf("catalog properties: %v", err)
	}
	if warnings := catalog.CheckProperties(cfg.Catalog.Type, props); len(warnings) > 0 {
		t.Errorf("catalog property warnings: %v", warnings)
	}
	// The token file and the signing secret load as flightd loads them.
	if _, err := auth.New(cfg.Auth); err != nil {
		t.Fatalf("auth: %v", err)
	}

	// Probes and Services reach the ports flightd serves on.
	port := func(addr string) int {
		n, err := strconv.Atoi(addr[strings.LastIndex(addr, ":")+1:])
		if err != nil {
			t.Fatalf("address %q has no port", addr)
		}
		return n
	}
	ports := map[string]int{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["flight"] != port(cfg.Listen) || ports["metrics"] != port(cfg.MetricsListen) {
		t.Errorf("container ports %v, want flight %d and metrics %d", ports, port(cfg.Listen), port(cfg.MetricsListen))
	}
	for name, p := range map[string]k8sProbe{"readiness": c.ReadinessProbe, "startup": c.StartupProbe} {
		if p.GRPC == nil || p.GRPC.Port != port(cfg.Listen) {
			t.Errorf("%s probe: want gRPC health on port %d", name, port(cfg.Listen))
		}
	}
	if p := c.LivenessProbe.HTTPGet; p == nil || p.Path != "/healthz" || ports[p.Port] != port(cfg.MetricsListen) {
		t.Errorf("liveness probe: want GET /healthz on the metrics port")
	}
	svc := objs["Service/sluice-flightd"]
	peers := objs["Service/sluice-flightd-peers"]
	if len(svc.Spec.Ports) != 1 || ports[svc.Spec.Ports[0].TargetPort] != port(cfg.Listen) {
		t.Errorf("Service sluice-flightd does not reach the Flight port")
	}
	if peers.Spec.ClusterIP != "None" || len(cfg.Replicas.Peers) != 1 ||
		cfg.Replicas.Peers[0] != "dns://sluice-flightd-peers:"+strconv.Itoa(peers.Spec.Ports[0].Port) {
		t.Errorf("peers %v: want dns:// of the headless Service sluice-flightd-peers", cfg.Replicas.Peers)
	}
}
