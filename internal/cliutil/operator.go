package cliutil

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// SetupLogging routes controller-runtime and client-go logs through one
// structured logger writing to w: format json (production: stack traces on
// errors only) or text (development: readable lines).
func SetupLogging(format string, w io.Writer) error {
	opts := []zap.Opts{zap.WriteTo(w)}
	switch format {
	case "json":
		opts = append(opts, zap.UseDevMode(false))
	case "text":
		opts = append(opts, zap.UseDevMode(true))
	default:
		return fmt.Errorf("--log-format must be json or text, not %q", format)
	}
	logger := zap.New(opts...)
	ctrl.SetLogger(logger)
	klog.SetLogger(logger)
	return nil
}

// inClusterNamespaceFile is where a pod finds its own namespace.
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// DefaultNamespace is $POD_NAMESPACE, the pod's own namespace, or kubevirt.
func DefaultNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if b, err := os.ReadFile(inClusterNamespaceFile); err == nil {
		if ns := strings.TrimSpace(string(b)); ns != "" {
			return ns
		}
	}
	return "kubevirt"
}

// LoadKubeVirt reads one KubeVirt from a YAML or JSON file.
func LoadKubeVirt(path string) (*v1.KubeVirt, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the KubeVirt: %w", err)
	}
	doc, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("%s is not valid YAML: %w", path, err)
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal(doc, &head); err != nil || (head.APIVersion == "" && head.Kind == "") {
		return nil, fmt.Errorf("%s does not hold a Kubernetes object", path)
	}
	if head.APIVersion != v1.GroupVersion.String() || head.Kind != "KubeVirt" {
		return nil, fmt.Errorf("%s holds kind %q of apiVersion %q, not a %s KubeVirt", path, head.Kind, head.APIVersion, v1.GroupVersion)
	}
	kv := &v1.KubeVirt{}
	if err := json.Unmarshal(doc, kv); err != nil {
		return nil, fmt.Errorf("%s is not a valid KubeVirt: %w", path, err)
	}
	return kv, nil
}
