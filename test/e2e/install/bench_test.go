package install_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/rollout"
)

// BenchmarkOperatorLifecycle measures, on a 3-node sandbox with the operator
// binary as its own process: KubeVirt CR created → Available, imageTag changed
// → observed == target, CR deleted → gone, and the operator's peak resident
// memory. Run it with `make bench`.
func BenchmarkOperatorLifecycle(b *testing.B) {
	for range b.N {
		benchLifecycleOnce(b)
	}
}

func benchLifecycleOnce(b *testing.B) {
	e := startEnvWithoutOperator(b, 3)
	p := &operatorProcess{t: b, kubeconfig: e.sb.Kubeconfig()}
	p.start()
	defer p.kill()
	ctx := context.Background()

	start := time.Now()
	e.createKubeVirt(v1.KubeVirtSpec{})
	first := e.waitAvailable(3 * time.Minute)
	b.ReportMetric(time.Since(start).Seconds(), "install-s")

	start = time.Now()
	e.updateSpec(func(s *v1.KubeVirtSpec) { s.ImageTag = "v1.7.0" })
	e.eventually("observed == target", 3*time.Minute, func() (bool, error) {
		kv := e.kubeVirt()
		return kv.Status.ObservedDeploymentID != first.Status.ObservedDeploymentID && kv.Status.ObservedDeploymentID == kv.Status.TargetDeploymentID, nil
	})
	b.ReportMetric(time.Since(start).Seconds(), "upgrade-s")

	start = time.Now()
	if err := e.c.Delete(ctx, e.kubeVirt()); err != nil {
		b.Fatal(err)
	}
	e.eventually("the CR gone", 3*time.Minute, func() (bool, error) {
		err := e.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "kubevirt"}, &v1.KubeVirt{})
		return err != nil && client.IgnoreNotFound(err) == nil, nil
	})
	b.ReportMetric(time.Since(start).Seconds(), "uninstall-s")
	b.ReportMetric(peakRSSMiB(b, p.cmd.Process.Pid), "operator-peak-rss-MiB")
}

// peakRSSMiB is the process' VmHWM (its peak resident set).
func peakRSSMiB(b *testing.B, pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				b.Fatal(err)
			}
			return float64(kb) / 1024
		}
	}
	b.Fatal("no VmHWM in /proc status")
	return 0
}

// BenchmarkHandlerCanary200 compares, on a 200-node sandbox, the operator's
// whole upgrade (imageTag change → observed == target, canary bake included)
// with a plain DaemonSet rolling update at maxUnavailable 10% in the same run.
// Target: upgrade ≤ 1.3 × (plain update + bake time).
func BenchmarkHandlerCanary200(b *testing.B) {
	for range b.N {
		e := startEnvWithoutOperator(b, 200)
		p := &operatorProcess{t: b, kubeconfig: e.sb.Kubeconfig()}
		p.start()
		e.createKubeVirt(v1.KubeVirtSpec{})
		first := e.waitAvailable(5 * time.Minute)

		plain := e.plainDaemonSetUpdate(b)
		start := time.Now()
		e.updateSpec(func(s *v1.KubeVirtSpec) { s.ImageTag = "v1.7.0" })
		e.eventually("observed == target", 10*time.Minute, func() (bool, error) {
			kv := e.kubeVirt()
			return kv.Status.ObservedDeploymentID != first.Status.ObservedDeploymentID && kv.Status.ObservedDeploymentID == kv.Status.TargetDeploymentID, nil
		})
		upgrade := time.Since(start)
		p.kill()
		bake := rollout.DefaultBakeTime
		b.ReportMetric(plain.Seconds(), "plain-update-s")
		b.ReportMetric(upgrade.Seconds(), "upgrade-s")
		b.ReportMetric(bake.Seconds(), "bake-s")
		b.ReportMetric(upgrade.Seconds()/(plain+bake).Seconds(), "ratio")
	}
}

// plainDaemonSetUpdate times a rolling update of a bare DaemonSet (one pod per
// node, maxUnavailable 10%) from the image change to every pod updated and Ready.
func (e *env) plainDaemonSetUpdate(b *testing.B) time.Duration {
	ctx := context.Background()
	labels := map[string]string{"app": "plain"}
	ten := intstr.FromString("10%")
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: "default"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &ten}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/plain:v1"}}},
			},
		},
	}
	if err := e.c.Create(ctx, ds); err != nil {
		b.Fatal(err)
	}
	rolledOut := func(image string) func() (bool, error) {
		return func() (bool, error) {
			live := &appsv1.DaemonSet{}
			if err := e.c.Get(ctx, client.ObjectKeyFromObject(ds), live); err != nil {
				return false, err
			}
			st := live.Status
			return live.Spec.Template.Spec.Containers[0].Image == image && st.ObservedGeneration == live.Generation &&
				st.DesiredNumberScheduled > 0 && st.UpdatedNumberScheduled == st.DesiredNumberScheduled && st.NumberReady == st.DesiredNumberScheduled, nil
		}
	}
	e.eventually("the plain DaemonSet ready", 5*time.Minute, rolledOut("example.com/plain:v1"))
	start := time.Now()
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(ds), ds); err != nil {
		b.Fatal(err)
	}
	ds.Spec.Template.Spec.Containers[0].Image = "example.com/plain:v2"
	if err := e.c.Update(ctx, ds); err != nil {
		b.Fatal(err)
	}
	e.eventually("the plain DaemonSet updated", 10*time.Minute, rolledOut("example.com/plain:v2"))
	return time.Since(start)
}
