package install_test

import (
	"bytes"
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
	e.updateSpec(func(s *v1.KubeVirtSpec) { s.ImageTag = "v1.9.0" })
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
func peakRSSMiB(b *testing.B, pid int) float64 { return procStatusMiB(b, pid, "VmHWM") }

// BenchmarkHandlerCanary200 compares, on a 200-node sandbox, the operator's
// whole upgrade (imageTag change → observed == target, canary bake included)
// with a plain DaemonSet rolling update at maxUnavailable 10% in the same run.
// Target: upgrade ≤ 1.3 × (plain update + bake time). It also times the same
// rolling update of a DaemonSet with virt-handler's pod template and labels
// (init container, a dozen volumes, pods behind the metrics Service), which on
// the sandbox takes two to three times the bare one, and reports the ratio
// against that (ratio-same-template), the part of the upgrade the operator
// itself adds. Each timed DaemonSet is deleted before the next measurement, so
// all three run next to the same pods. A second upgrade then turns every
// data-plane check on, over 40 VMs, and reports the time the checks add
// between the bake and the fast step (checks-added-s).
func BenchmarkHandlerCanary200(b *testing.B) {
	for range b.N {
		e := startEnvWithoutOperator(b, 200)
		p := &operatorProcess{t: b, kubeconfig: e.sb.Kubeconfig()}
		p.start()
		e.createKubeVirt(v1.KubeVirtSpec{})
		first := e.waitAvailable(5 * time.Minute)

		plain := e.plainDaemonSetUpdate(b)
		sameTemplate, floorLoad := e.handlerTemplateUpdate(b)
		b.Logf("same-template update %s", floorLoad)
		ctx, stop := context.WithCancel(context.Background())
		tl := e.recordTimeline(ctx)
		cpuBefore := cpuSeconds(b, p.cmd.Process.Pid)
		start := time.Now()
		e.updateSpec(func(s *v1.KubeVirtSpec) { s.ImageTag = "v1.9.0" })
		e.eventually("observed == target", 10*time.Minute, func() (bool, error) {
			kv := e.kubeVirt()
			return kv.Status.ObservedDeploymentID != first.Status.ObservedDeploymentID && kv.Status.ObservedDeploymentID == kv.Status.TargetDeploymentID, nil
		})
		upgrade := time.Since(start)
		cpu := cpuSeconds(b, p.cmd.Process.Pid) - cpuBefore
		stop()
		reportStages(b, e.kubeVirt())
		b.Logf("upgrade timeline:\n%s", tl)
		e.dataPlaneChecksUpgrade(b, 200, 40)
		p.kill()
		bake := rollout.DefaultBakeTime
		b.ReportMetric(plain.Seconds(), "plain-update-s")
		b.ReportMetric(upgrade.Seconds(), "upgrade-s")
		b.ReportMetric(bake.Seconds(), "bake-s")
		b.ReportMetric(upgrade.Seconds()/(plain+bake).Seconds(), "ratio")
		b.ReportMetric(cpu, "operator-cpu-s")
		b.ReportMetric(sameTemplate.Seconds(), "handler-template-update-s")
		b.ReportMetric(upgrade.Seconds()/(sameTemplate+bake).Seconds(), "ratio-same-template")
	}
}

// cpuSeconds is the CPU time (user and system) the process has used.
func cpuSeconds(b *testing.B, pid int) float64 {
	secs, err := processCPUSeconds(pid)
	if err != nil {
		b.Fatal(err)
	}
	return secs
}

// processCPUSeconds reads a process's CPU time from /proc/PID/stat.
func processCPUSeconds(pid int) (float64, error) {
	_, secs, err := procStat(pid)
	return secs, err
}

// procStat reads a process's command name and CPU time from /proc/PID/stat.
func procStat(pid int) (command string, cpuSeconds float64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, err
	}
	return parseProcStat(data)
}

// parseProcStat reads a /proc/PID/stat line: "pid (command) state ...", where
// the command may hold spaces and parentheses; utime and stime are fields 14
// and 15, in clock ticks (USER_HZ is 100 on Linux).
func parseProcStat(data []byte) (command string, cpuSeconds float64, err error) {
	open, closing := bytes.IndexByte(data, '('), bytes.LastIndexByte(data, ')')
	if open < 0 || closing < open {
		return "", 0, fmt.Errorf("/proc stat %q: no command", data)
	}
	fields := strings.Fields(string(data[closing+1:]))
	if len(fields) < 13 {
		return "", 0, fmt.Errorf("/proc stat %q: %d fields after the command", data, len(fields))
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return "", 0, fmt.Errorf("/proc stat %q: %v %v", data, err1, err2)
	}
	return string(data[open+1 : closing]), (utime + stime) / 100, nil
}

// plainDaemonSetUpdate times a rolling update of a bare DaemonSet (one pod per
// node, maxUnavailable 10%) from the image change to every pod updated and Ready,
// and deletes it afterwards.
func (e *env) plainDaemonSetUpdate(b testing.TB) time.Duration {
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/plain:v1"}}}}
	took, _ := e.timeDaemonSetUpdate(b, "default", "plain", tmpl)
	e.deleteDaemonSet(b, "default", "plain")
	return took
}

// handlerTemplateUpdate times the same rolling update of a DaemonSet with
// virt-handler's own pod template (in its namespace, for its ServiceAccount),
// and deletes it afterwards. On kwok a virt-handler pod (init container, a
// dozen volumes, probes) costs the control plane more than a bare one, so this
// is the rollout the operator's fast step can at best match. The copy keeps the
// pod labels other than virt-handler's selector: the metrics Service selects
// them, and the endpoints it follows through the rollout are part of the cost.
// The window is the control plane's load while the update ran.
func (e *env) handlerTemplateUpdate(b testing.TB) (time.Duration, loadWindow) {
	live := e.daemonSet("virt-handler")
	tmpl := *live.Spec.Template.DeepCopy()
	tmpl.Annotations = nil
	for key := range live.Spec.Selector.MatchLabels {
		delete(tmpl.Labels, key)
	}
	took, load := e.timeDaemonSetUpdate(b, namespace, "plain-handler", tmpl)
	e.deleteDaemonSet(b, namespace, "plain-handler")
	return took, load
}

// deleteDaemonSet deletes a timed DaemonSet and waits for its pods to be gone, so
// every measurement runs next to the same pods: virt-handler's 200.
func (e *env) deleteDaemonSet(b testing.TB, ns, name string) {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if err := e.c.Delete(context.Background(), ds, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		b.Fatal(err)
	}
	e.eventually("DaemonSet "+name+" and its pods gone", 5*time.Minute, func() (bool, error) {
		pods := &corev1.PodList{}
		if err := e.c.List(context.Background(), pods, client.InNamespace(ns), client.MatchingLabels{"app": name}); err != nil {
			return false, err
		}
		return len(pods.Items) == 0, nil
	})
}

// timeDaemonSetUpdate creates a DaemonSet with tmpl (labels replaced), waits
// for it, then times changing its first container's image at maxUnavailable
// 10% until every pod is updated and Ready, sampling the control plane's load
// around it.
func (e *env) timeDaemonSetUpdate(b testing.TB, ns, name string, tmpl corev1.PodTemplateSpec) (time.Duration, loadWindow) {
	ctx := context.Background()
	labels := map[string]string{"app": name}
	if tmpl.Labels == nil {
		tmpl.Labels = map[string]string{}
	}
	tmpl.Labels["app"] = name
	ten := intstr.FromString("10%")
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &ten}},
			Template: tmpl,
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
	image := tmpl.Spec.Containers[0].Image
	e.eventually("DaemonSet "+name+" ready", 5*time.Minute, rolledOut(image))
	load := loadWindow{from: e.sampleLoad(b)}
	start := time.Now()
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(ds), ds); err != nil {
		b.Fatal(err)
	}
	ds.Spec.Template.Spec.Containers[0].Image = image + "-next"
	if err := e.c.Update(ctx, ds); err != nil {
		b.Fatal(err)
	}
	e.eventually("DaemonSet "+name+" updated", 10*time.Minute, rolledOut(image+"-next"))
	took := time.Since(start)
	load.to = e.sampleLoad(b)
	return took, load
}
