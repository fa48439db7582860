package generate

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/virt-operator/virt-operator/internal/strategy"
)

// OpenShift API versions; the objects are unstructured so the operator needs no
// OpenShift API module.
const (
	sccAPIVersion   = "security.openshift.io/v1"
	routeAPIVersion = "route.openshift.io/v1"
)

// openShift adds, on OpenShift only, the SecurityContextConstraints virt-handler
// and the pods virt-controller creates need, and a Route to virt-exportproxy.
func (b *builder) openShift() {
	if !b.in.OpenShift {
		return
	}
	runAsAny := map[string]any{"type": "RunAsAny"}
	common := func(sa string) map[string]any {
		return map[string]any{
			"allowHostIPC":           false,
			"allowHostNetwork":       false,
			"allowHostPorts":         false,
			"readOnlyRootFilesystem": false,
			"runAsUser":              copyJSON(runAsAny),
			"seLinuxContext":         copyJSON(runAsAny),
			"fsGroup":                copyJSON(runAsAny),
			"supplementalGroups":     copyJSON(runAsAny),
			"users":                  []any{"system:serviceaccount:" + b.ns + ":" + sa},
			"groups":                 []any{},
		}
	}
	handler := common(saHandler)
	handler["allowPrivilegedContainer"] = true
	handler["allowPrivilegeEscalation"] = true
	handler["allowHostDirVolumePlugin"] = true
	handler["allowHostPID"] = true
	handler["allowedCapabilities"] = []any{"*"}
	handler["volumes"] = []any{"*"}
	b.add(b.unstructured(sccAPIVersion, strategy.KindSecurityContextConstraints, "kubevirt-handler", "", handler))

	controller := common(saController)
	controller["allowPrivilegedContainer"] = false
	controller["allowHostDirVolumePlugin"] = true
	controller["allowHostPID"] = false
	controller["allowedCapabilities"] = []any{"SYS_NICE", "NET_BIND_SERVICE"}
	controller["seccompProfiles"] = []any{"runtime/default", "unconfined", "localhost/kubevirt/kubevirt.json"}
	controller["volumes"] = []any{"configMap", "downwardAPI", "emptyDir", "ephemeral", "hostPath", "persistentVolumeClaim", "projected", "secret"}
	b.add(b.unstructured(sccAPIVersion, strategy.KindSecurityContextConstraints, "kubevirt-controller", "", controller))

	// The destination CA is the export CA, filled at apply time.
	route := b.unstructured(routeAPIVersion, strategy.KindRoute, virtExportProxy, b.ns, nil)
	route.Object["spec"] = map[string]any{
		"to":   map[string]any{"kind": "Service", "name": svcExportProxy},
		"port": map[string]any{"targetPort": "https"},
		"tls":  map[string]any{"termination": "reencrypt", "insecureEdgeTerminationPolicy": "Redirect"},
	}
	b.add(route)
}

// unstructured builds an object whose top-level fields (SCCs have no spec) are fields.
func (b *builder) unstructured(apiVersion, kind, name, namespace string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	for k, v := range fields {
		u.Object[k] = v
	}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetName(name)
	if namespace != "" {
		u.SetNamespace(namespace)
	}
	return u
}

func copyJSON(m map[string]any) map[string]any {
	return runtime.DeepCopyJSON(m)
}
