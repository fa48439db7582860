package manager

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/virt-operator/virt-operator/internal/admission"
	"github.com/virt-operator/virt-operator/internal/operator"
)

func TestPriorityClass(t *testing.T) {
	pc, err := PriorityClass()
	if err != nil {
		t.Fatal(err)
	}
	if pc.Name != "kubevirt-cluster-critical" || pc.Value != 1_000_000_000 || pc.GlobalDefault {
		t.Errorf("%+v", pc)
	}
}

// The operator reads its container's memory limit from the environment to set
// Go's soft limit (internal/operator.TuneGC); the reference must name its own
// container, or a renamed one would make the pod fail to start.
func TestDeploymentPassesItsMemoryLimit(t *testing.T) {
	dep, err := Deployment()
	if err != nil {
		t.Fatal(err)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	for _, e := range c.Env {
		if e.Name != operator.MemoryLimitEnv {
			continue
		}
		if r := e.ValueFrom.ResourceFieldRef; r == nil || r.ContainerName != c.Name || r.Resource != "limits.memory" || !r.Divisor.IsZero() {
			t.Fatalf("%s from %+v, want its own container's limits.memory in bytes", e.Name, e.ValueFrom)
		}
		if c.Resources.Limits.Memory().IsZero() {
			t.Fatalf("%s has no memory limit to pass", c.Name)
		}
		return
	}
	t.Fatalf("container %s has no %s", c.Name, operator.MemoryLimitEnv)
}

// The NetworkPolicy selects the operator's pods and admits the webhook port,
// by the name the Deployment gives it, from every source (a rule that named the
// API server wrongly would refuse every KubeVirt edit), and /metrics from the
// monitoring namespace; a renamed port would silently close the webhook.
func TestNetworkPolicyAdmitsTheWebhooksFromAnywhere(t *testing.T) {
	np, err := NetworkPolicy()
	if err != nil {
		t.Fatal(err)
	}
	dep, err := Deployment()
	if err != nil {
		t.Fatal(err)
	}
	if np.Namespace != dep.Namespace || !selects(t, np.Spec.PodSelector, dep.Spec.Template.Labels) {
		t.Errorf("the policy in %s selecting %v misses the operator's pods in %s labelled %v", np.Namespace, np.Spec.PodSelector, dep.Namespace, dep.Spec.Template.Labels)
	}
	if len(np.Spec.PolicyTypes) != 1 || np.Spec.PolicyTypes[0] != networkingv1.PolicyTypeIngress {
		t.Errorf("policy types %v, want Ingress only", np.Spec.PolicyTypes)
	}
	ports := map[string]int32{}
	for _, p := range dep.Spec.Template.Spec.Containers[0].Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["webhooks"] != admission.DefaultPort {
		t.Errorf("the container's webhooks port is %d, the webhook server's %d", ports["webhooks"], admission.DefaultPort)
	}
	admitted := map[string][]networkingv1.NetworkPolicyPeer{}
	for _, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			if p.Port == nil || p.Port.Type != intstr.String || ports[p.Port.StrVal] == 0 || p.Protocol == nil || *p.Protocol != corev1.ProtocolTCP {
				t.Errorf("rule port %v is no TCP port the container names (%v)", p.Port, ports)
				continue
			}
			admitted[p.Port.StrVal] = rule.From
		}
	}
	if from, ok := admitted["webhooks"]; !ok || len(from) != 0 {
		t.Errorf("the webhooks port is admitted from %v (present %v), want from every source", from, ok)
	}
	if from := admitted["metrics"]; len(from) != 1 || from[0].NamespaceSelector == nil || from[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "monitoring" {
		t.Errorf("/metrics is admitted from %v, want namespace monitoring's pods", from)
	}
	if len(admitted) != 2 {
		t.Errorf("ports admitted: %v, want webhooks and metrics", admitted)
	}
}

func selects(t *testing.T, sel metav1.LabelSelector, set map[string]string) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(&sel)
	if err != nil {
		t.Fatal(err)
	}
	return s.Matches(labels.Set(set))
}
