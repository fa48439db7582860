package install_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/controller/kubevirt/strategysource"
	"github.com/virt-operator/virt-operator/internal/operator"
)

// A cluster without the ServiceAccount the strategy Job runs as: the Job
// controller cannot create the pod, and the CR says so within seconds instead
// of staying Deploying in silence.
func TestStrategyJobWithoutItsServiceAccountIsDegraded(t *testing.T) {
	t.Parallel()
	const missing = "virt-operator-missing"
	e := startEnvWithoutOperator(t, 3)
	e.startOperator(func(o *operator.Options) { o.ServiceAccount = missing })
	t.Cleanup(e.stopOperator)
	start := time.Now()
	e.createKubeVirt(v1.KubeVirtSpec{})
	e.eventually("Degraded naming the missing ServiceAccount", time.Minute, func() (bool, error) {
		d := condition(e.kubeVirt(), v1.KubeVirtConditionDegraded)
		return d != nil && d.Status == corev1.ConditionTrue && d.Reason == strategysource.ReasonJobBlocked &&
			strings.Contains(d.Message, `serviceaccount "`+missing+`" not found`), nil
	})
	kv := e.kubeVirt()
	t.Logf("after %.1fs: %s", time.Since(start).Seconds(), condition(kv, v1.KubeVirtConditionDegraded).Message)
	if kv.Status.Phase != v1.KubeVirtPhaseDeploying || conditionTrue(kv, v1.KubeVirtConditionAvailable) {
		t.Fatalf("phase %s, conditions %+v: want Deploying and not Available", kv.Status.Phase, kv.Status.Conditions)
	}
}
