// Package rbac embeds the operator's RBAC (the generated role.yaml, the bindings,
// its ServiceAccount and the install-strategy Job's), so the sandbox and the tests
// create exactly what `kubectl apply -k config/default` would.
package rbac

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// The files, in kustomization.yaml's order.
var (
	//go:embed service_account.yaml
	serviceAccount []byte
	//go:embed role.yaml
	role []byte
	//go:embed role_binding.yaml
	roleBinding []byte
	//go:embed cluster_role_binding.yaml
	clusterRoleBinding []byte
	//go:embed strategy_dumper.yaml
	strategyDumper []byte
	//go:embed metrics_reader.yaml
	metricsReader []byte
)

// StrategyDumperServiceAccount runs the install-strategy Job.
const StrategyDumperServiceAccount = "virt-operator-strategy-dumper"

// MetricsReaderClusterRole grants reading the operator's /metrics.
const MetricsReaderClusterRole = "virt-operator-metrics-reader"

// Objects are every object of config/rbac.
func Objects() ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, f := range []struct {
		name string
		raw  []byte
	}{
		{"service_account.yaml", serviceAccount}, {"role.yaml", role}, {"role_binding.yaml", roleBinding},
		{"cluster_role_binding.yaml", clusterRoleBinding}, {"strategy_dumper.yaml", strategyDumper},
		{"metrics_reader.yaml", metricsReader},
	} {
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(f.raw), 4096)
		for {
			u := &unstructured.Unstructured{}
			err := dec.Decode(&u.Object)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("config/rbac/%s: %w", f.name, err)
			}
			if len(u.Object) > 0 {
				out = append(out, u)
			}
		}
	}
	return out, nil
}
