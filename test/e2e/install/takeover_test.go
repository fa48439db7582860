package install_test

import (
	"context"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/certs"
	"github.com/virt-operator/virt-operator/internal/sandbox/sandboxtest"
	"github.com/virt-operator/virt-operator/internal/sandbox/vmsim"
)

// installSnapshot is what a switch of operators must not change: every pod of
// the install namespace, by name and UID, and every certificate, by Secret and
// serial number.
type installSnapshot struct {
	pods, certs map[string]string
}

func (e *env) snapshot() installSnapshot {
	e.t.Helper()
	s := installSnapshot{pods: map[string]string{}, certs: map[string]string{}}
	pods := &corev1.PodList{}
	if err := e.c.List(context.Background(), pods, client.InNamespace(namespace)); err != nil {
		e.t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && !strings.HasPrefix(p.Name, "virt-operator") && p.Labels["job-name"] == "" {
			s.pods[p.Name] = string(p.UID)
		}
	}
	secrets := &corev1.SecretList{}
	if err := e.c.List(context.Background(), secrets, client.InNamespace(namespace)); err != nil {
		e.t.Fatal(err)
	}
	for i := range secrets.Items {
		if kp, err := certs.ParseSecret(&secrets.Items[i]); err == nil {
			s.certs[secrets.Items[i].Name] = kp.Cert.SerialNumber.String()
		}
	}
	return s
}

// certificateWrites returns what names the certificate Secrets and CA
// ConfigMaps written since it was called (their resourceVersion changed).
func (e *env) certificateWrites() func() []string {
	e.t.Helper()
	read := func() map[string]string {
		versions := map[string]string{}
		secrets := &corev1.SecretList{}
		configMaps := &corev1.ConfigMapList{}
		for _, l := range []client.ObjectList{secrets, configMaps} {
			if err := e.c.List(context.Background(), l, client.InNamespace(namespace)); err != nil {
				e.t.Fatal(err)
			}
		}
		for _, s := range secrets.Items {
			if _, ok := certs.ProfileFor(s.Name, s.Namespace); ok {
				versions["Secret "+s.Name] = s.ResourceVersion
			}
		}
		for _, cm := range configMaps.Items {
			if certs.IsBundleName(cm.Name) {
				versions["ConfigMap "+cm.Name] = cm.ResourceVersion
			}
		}
		return versions
	}
	before := read()
	return func() []string {
		var written []string
		for name, version := range read() {
			if before[name] != version {
				written = append(written, name)
			}
		}
		sort.Strings(written)
		return written
	}
}

// changedSince names the pods replaced and the certificates reissued since before.
func (s installSnapshot) changedSince(before installSnapshot) (pods, certificates []string) {
	for name, uid := range before.pods {
		if s.pods[name] != uid {
			pods = append(pods, name)
		}
	}
	for name, serial := range before.certs {
		if s.certs[name] != serial {
			certificates = append(certificates, name)
		}
	}
	sort.Strings(pods)
	sort.Strings(certificates)
	return pods, certificates
}

// conditionWatch records, while it runs, whether the CR was ever not
// Available or Degraded with a problem (upstream's Degraded during its own
// rollout reads UpdateInProgress; this operator's take-over never sets it).
type conditionWatch struct {
	stop     chan struct{}
	done     sync.WaitGroup
	mu       sync.Mutex
	problems []string
}

func (e *env) watchConditions() *conditionWatch {
	w := &conditionWatch{stop: make(chan struct{})}
	w.done.Add(1)
	go func() {
		defer w.done.Done()
		for {
			select {
			case <-w.stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			kv := &v1.KubeVirt{}
			if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: "kubevirt"}, kv); err != nil {
				continue
			}
			for _, c := range kv.Status.Conditions {
				bad := (c.Type == v1.KubeVirtConditionAvailable && c.Status != corev1.ConditionTrue) ||
					(c.Type == v1.KubeVirtConditionDegraded && c.Status == corev1.ConditionTrue)
				if bad {
					w.mu.Lock()
					w.problems = append(w.problems, string(c.Type)+" "+string(c.Status)+" "+c.Reason+": "+c.Message)
					w.mu.Unlock()
				}
			}
		}
	}()
	return w
}

func (w *conditionWatch) end() []string {
	close(w.stop)
	w.done.Wait()
	return w.problems
}

// Taking over an install KubeVirt's own v1.9.0 operator made, with VMs, and
// handing it back: no pod is replaced and no certificate reissued either way
// (upstream's operator writes no certificate object at all on the hand-back,
// stamped by handback for the deployment it then targets),
// the CR stays Available and never Degraded while this operator takes over;
// upstream's operator reaches Available again on its own install; the CR then
// deletes cleanly.
func TestTakeOverFromUpstreamAndHandBack(t *testing.T) {
	t.Parallel()
	const release = "v1.9.0"
	e := startEnvWithoutOperator(t, 5, sandboxtest.WithUpstreamOperator(t, release))
	sandboxtest.PrepareUpstreamOperator(t, e.sb)
	upstream := sandboxtest.StartUpstreamOperator(t, e.sb, release)
	e.createKubeVirt(v1.KubeVirtSpec{ImageTag: release})
	e.waitAvailable(5 * time.Minute)

	_, vms := e.runVMs(vmsim.CreateOptions{Count: 6}, "quay.io/kubevirt/virt-launcher:"+release)
	ctx := context.Background()
	upstreamID := e.kubeVirt().Status.ObservedDeploymentID
	before := e.snapshot()
	t.Logf("upstream's install: %d pods, %d certificates, deployment %s", len(before.pods), len(before.certs), upstreamID)

	// Take over.
	if err := upstream.Stop(); err != nil {
		t.Fatal(err)
	}
	watch := e.watchConditions()
	e.startOperator()
	e.eventually("taken over: this operator's deployment observed", 4*time.Minute, func() (bool, error) {
		st := e.kubeVirt().Status
		return st.ObservedDeploymentID != upstreamID && st.ObservedDeploymentID == st.TargetDeploymentID && st.ObservedKubeVirtVersion == release, nil
	})
	// What the take-over would still replace, it writes before it leaves
	// the components alone, and it is in the pods once they have settled.
	e.waitOperatorQuiet(5*time.Second, time.Minute, "deployments", "daemonsets", "pods", "secrets")
	e.eventually("the components settled", 2*time.Minute, func() (bool, error) { return e.workloadsSettled(), nil })
	problems := watch.end()
	ourID := e.kubeVirt().Status.ObservedDeploymentID
	taken := e.snapshot()
	pods, certificates := taken.changedSince(before)
	t.Logf("take-over: %d pods replaced %v, %d certificates reissued %v", len(pods), pods, len(certificates), certificates)
	if len(pods) > 0 || len(certificates) > 0 || len(problems) > 0 {
		t.Fatalf("the take-over replaced pods %v, reissued certificates %v, showed %q", pods, certificates, problems)
	}
	events := &corev1.EventList{}
	if err := e.c.List(ctx, events, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	announced := false
	for _, ev := range events.Items {
		announced = announced || (ev.Reason == "TargetChanged" && strings.Contains(ev.Message, "taking over KubeVirt "+release))
	}
	if !announced {
		t.Error("no Event says what was taken over")
	}

	// Hand back.
	e.stopOperator()
	out, err := exec.Command(sandboxtest.OperatorBinary(t), "handback", "--kubeconfig", e.sb.Kubeconfig(), "--namespace", namespace).CombinedOutput()
	if err != nil {
		t.Fatalf("handback: %v\n%s", err, out)
	}
	t.Logf("handback:\n%s", out)
	stamped := regexp.MustCompile(`stamped for upstream's deployment ([0-9a-f]{40})`).FindSubmatch(out)
	if stamped == nil {
		t.Fatal("handback stamped no certificate for upstream's deployment")
	}
	for _, c := range e.kubeVirt().Status.Conditions {
		if c.Type == v1.KubeVirtConditionReady || c.Type == v1.KubeVirtConditionUpgradeable {
			t.Fatalf("a condition of this operator's is left: %+v", c)
		}
	}
	handedBack := e.snapshot()
	written := e.certificateWrites()
	sandboxtest.StartUpstreamOperator(t, e.sb, release)
	e.eventually("upstream's deployment observed again", 5*time.Minute, func() (bool, error) {
		kv := e.kubeVirt()
		return conditionTrue(kv, v1.KubeVirtConditionAvailable) && kv.Status.ObservedDeploymentID == kv.Status.TargetDeploymentID &&
			kv.Status.ObservedDeploymentID != ourID, nil
	})
	// Upstream's operator observes its deployment only after a pass that
	// checked every certificate against its target: had one differed, it
	// would have patched it in that pass (and reissued it in the next), so an
	// unwritten certificate now stays as it is.
	if target := e.kubeVirt().Status.TargetDeploymentID; target != string(stamped[1]) {
		t.Errorf("handback stamped the certificates for deployment %s, upstream's operator targets %s", stamped[1], target)
	}
	e.waitQuiet("upstream's operator", byUser(upstreamOperatorUser), 5*time.Second, time.Minute, "deployments", "daemonsets", "pods")
	e.eventually("the components settled", 2*time.Minute, func() (bool, error) { return e.workloadsSettled(), nil })
	back := e.snapshot()
	pods, certificates = back.changedSince(taken)
	_, reissued := back.changedSince(handedBack)
	patched := written()
	t.Logf("hand-back: %d pods replaced %v, %d certificates reissued %v, certificate objects upstream's operator wrote %v", len(pods), pods, len(certificates), certificates, patched)
	if len(pods) > 0 || len(certificates) > 0 || len(reissued) > 0 || len(patched) > 0 {
		t.Fatalf("upstream's operator replaced pods %v, reissued certificates %v, wrote certificate objects %v on the hand-back", pods, certificates, patched)
	}

	// The CR deletes cleanly (its VMs first: the sandbox's API server calls no webhook).
	for _, name := range vms {
		vm := &v1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: vmNamespace, Name: name}}
		if err := e.c.Delete(ctx, vm, client.PropagationPolicy(metav1.DeletePropagationForeground), client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	e.eventually("the VMIs gone", 3*time.Minute, func() (bool, error) {
		list := &v1.VirtualMachineInstanceList{}
		err := e.c.List(ctx, list, client.InNamespace(vmNamespace))
		return err == nil && len(list.Items) == 0, err
	})
	kv := e.kubeVirt()
	if err := e.c.Delete(ctx, kv, &client.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatal(err)
	}
	e.eventually("the CR deleted", 5*time.Minute, func() (bool, error) {
		err := e.c.Get(ctx, client.ObjectKeyFromObject(kv), &v1.KubeVirt{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}
