package install_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/operator"
	"github.com/virt-operator/virt-operator/internal/version"
)

// A change restarts only the components whose pod template it changes, on
// this operator's own install: every change below gives a new deployment ID,
// which every object's stamps follow, yet only the named pods are replaced
// and no certificate is reissued.
func TestChangesRestartOnlyWhatTheyChange(t *testing.T) {
	t.Parallel()
	e := startEnv(t, 3)
	e.createKubeVirt(v1.KubeVirtSpec{ImageTag: "v1.8.4", ImageRegistry: "quay.io/kubevirt"})
	e.waitAvailable(5 * time.Minute)

	// change applies mutate (to the spec, or by restarting the operator) and
	// returns the pods it replaced, once the new target is observed and quiet,
	// and the workloads' stamps before and after (for a failure's message).
	change := func(what string, mutate func()) (pods []string, stamps string) {
		t.Helper()
		before, stampsBefore := e.snapshot(), e.workloadStamps()
		oldID := e.kubeVirt().Status.ObservedDeploymentID
		mutate()
		e.eventually(what+" rolled out", 4*time.Minute, func() (bool, error) {
			kv := e.kubeVirt()
			return kv.Status.TargetDeploymentID != oldID && kv.Status.ObservedDeploymentID == kv.Status.TargetDeploymentID &&
				conditionTrue(kv, v1.KubeVirtConditionAvailable), nil
		})
		// A restart the change would still cause is written before the
		// operator leaves the components alone, and is in the pods once they
		// have settled.
		e.waitOperatorQuiet(3*time.Second, time.Minute, "deployments", "daemonsets", "pods", "secrets")
		e.eventually(what+": the components settled", 2*time.Minute, func() (bool, error) { return e.workloadsSettled(), nil })
		pods, certificates := e.snapshot().changedSince(before)
		t.Logf("%s: %d pods replaced %v, %d certificates reissued", what, len(pods), pods, len(certificates))
		if len(certificates) > 0 {
			t.Errorf("%s reissued certificates %v", what, certificates)
		}
		return pods, fmt.Sprintf("workloads before: %v\nafter: %v", stampsBefore, e.workloadStamps())
	}
	only := func(what string, pods []string, stamps string, prefixes ...string) {
		t.Helper()
		for _, p := range pods {
			if !hasAnyPrefix(p, prefixes) {
				t.Errorf("%s replaced %s; only %v may restart\n%s", what, p, prefixes, stamps)
			}
		}
	}

	// infra placement: virt-api's and virt-controller's templates, not virt-handler's.
	pods, stamps := change("an infra.nodePlacement change", func() {
		e.updateSpec(func(s *v1.KubeVirtSpec) {
			s.Infra = &v1.ComponentConfig{NodePlacement: &v1.NodePlacement{Tolerations: []corev1.Toleration{
				{Key: "example.com/infra", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
			}}}
		})
	})
	only("an infra.nodePlacement change", pods, stamps, "virt-api-", "virt-controller-", "virt-exportproxy-")
	if !hasPodWithPrefix(pods, "virt-api-") {
		t.Errorf("the infra placement reached no virt-api pod: replaced %v", pods)
	}

	// A patch of virt-api's Deployment: virt-api only.
	pods, stamps = change("a customizeComponents patch on virt-api", func() {
		e.updateSpec(func(s *v1.KubeVirtSpec) {
			s.CustomizeComponents.Patches = []v1.CustomizeComponentsPatch{{
				ResourceType: "Deployment", ResourceName: "virt-api", Type: v1.StrategicMergePatchType,
				Patch: `{"spec":{"template":{"metadata":{"annotations":{"example.com/patched":"yes"}}}}}`,
			}}
		})
	})
	only("a customizeComponents patch on virt-api", pods, stamps, "virt-api-")
	if !hasPodWithPrefix(pods, "virt-api-") {
		t.Error("the patch replaced no virt-api pod")
	}

	// Another operator image (this operator's own repository): nothing.
	pods, stamps = change("an operator-image change", func() {
		e.stopOperator()
		e.startOperator(func(o *operator.Options) {
			o.Env = deployid.MapEnv{"VIRT_OPERATOR_IMAGE": version.Repository + ":v0.0.0-restart-test"}
		})
	})
	only("an operator-image change", pods, stamps)
}

// workloadStamps says, per Deployment and DaemonSet, the deployment ID of the
// object and of its pod template, and its template hash (for a failure's log).
func (e *env) workloadStamps() map[string]string {
	out := map[string]string{}
	add := func(o client.Object, tmpl *corev1.PodTemplateSpec) {
		out[o.GetName()] = fmt.Sprintf("object %s template %s hash %s", o.GetAnnotations()[metadata.InstallStrategyIdentifierAnnotation],
			tmpl.Annotations[metadata.InstallStrategyIdentifierAnnotation], o.GetAnnotations()[apply.TemplateHashAnnotation])
	}
	deployments := e.deployments()
	for i := range deployments {
		add(&deployments[i], &deployments[i].Spec.Template)
	}
	dss := &appsv1.DaemonSetList{}
	if err := e.c.List(context.Background(), dss, client.InNamespace(namespace)); err != nil {
		e.t.Fatal(err)
	}
	for i := range dss.Items {
		add(&dss.Items[i], &dss.Items[i].Spec.Template)
	}
	return out
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func hasPodWithPrefix(pods []string, prefix string) bool {
	for _, p := range pods {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}
