package realkubevirt_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/sandbox/sandboxtest"
)

const (
	// oldLauncher is the launcher the test's VMIs pretend to run: a release
	// before the installed one, so both updaters find them outdated.
	oldLauncher = "quay.io/kubevirt/virt-launcher:v1.8.4"
	// Nothing completes a migration here (no virt-handler), and none gets far:
	// virt-controller cannot render the target pod of a containerDisk VMI whose
	// launcher pod reports no image digest (kwok reports none), so migrations
	// stay Pending, where deleting one cancels it cleanly. The VMIs are not
	// pinned to a node: the operator's updater creates no migration that no
	// other node could take, and the sandbox's two nodes can each take them.
	vmiNS = "default"

	// quiet is how long the updater that must not act is given to act anyway:
	// three turns of upstream's, which syncs at most every 5 s after an event
	// (this operator's reacts within a second).
	quiet = 15 * time.Second

	controllerUser = "system:serviceaccount:" + namespace + ":kubevirt-controller"
	operatorUser   = "system:serviceaccount:" + namespace + ":virt-operator"
	wuAnnotation   = "kubevirt.io/workloadUpdateMigration"
	wuGenerateName = "kubevirt-workload-update-"
	outdatedLabel  = "kubevirt.io/outdatedLauncherImage"
)

// TestOneWorkloadUpdaterActsPerConfiguration shows that, with upstream's v1.9.0
// virt-controller running beside this operator, exactly one of the two workload
// updaters moves outdated VMIs, and which one is the KubeVirt CR's choice:
//
//   - spec.workloadUpdateStrategy.workloadUpdateMethods (upstream's field):
//     virt-controller creates the workload-update migrations; the operator only
//     counts the VMIs (status.workloadUpdates.actor virt-controller) and neither
//     creates a migration nor evicts;
//   - spec.workloadUpdates.methods (this operator's field, upstream's empty): the
//     operator creates them (actor virt-operator) and virt-controller creates or
//     deletes none.
//
// Who made each request is read from kube-apiserver's audit log. No virt-handler
// runs, so the test plays it: each VMI's launcher pod is given the old launcher
// image (virt-controller copies the VMI's launcherContainerImageVersion from the
// pod's compute container on every sync, so a VMI status alone would be put back)
// and the VMI the status virt-handler would write: Running, LiveMigratable.
func TestOneWorkloadUpdaterActsPerConfiguration(t *testing.T) {
	bin := sandboxtest.UpstreamBinary(t, release, "virt-controller")
	e := startEnv(t)
	e.prepareNodes(t)
	ctrl := e.start(t, component{name: "virt-controller", binary: bin, addr: "127.0.0.2"})
	ctrl.ready(t, "/leader", 2*time.Minute)
	t.Logf("target launcher (virt-controller's --launcher-image): %s", e.targetLauncher(t))

	vmis := []string{"outdated-0", "outdated-1", "outdated-2"}
	if !t.Run("VMIs run on an old launcher and virt-controller leaves them so", func(t *testing.T) {
		for _, name := range vmis {
			e.createVMI(t, name)
		}
		for _, name := range vmis {
			e.runOnOldLauncher(t, name)
		}
		e.vmisStayOutdated(t, vmis, 10*time.Second)
		e.statusShows(t, v1.ActorNone, len(vmis), false) // counted, not moved
	}) {
		return
	}

	var first map[string]types.UID // configuration A's migration per VMI
	if !t.Run("upstream's methods: virt-controller migrates, the operator only counts", func(t *testing.T) {
		e.updateKubeVirt(t, func(kv *v1.KubeVirt) {
			kv.Spec.WorkloadUpdates = nil
			kv.Spec.WorkloadUpdateStrategy.WorkloadUpdateMethods = []v1.WorkloadUpdateMethod{v1.WorkloadUpdateMethodLiveMigrate}
		})
		first = e.eachVMIGetsAMigration(t, vmis, nil)
		e.statusShows(t, v1.ActorVirtController, len(vmis), true)
		time.Sleep(quiet) // the operator's chance to do what it must not
		e.auditShows(t, "configuration A", time.Time{}, controllerUser, len(vmis))
	}) {
		return
	}

	t.Run("the operator's methods: the operator migrates, virt-controller does nothing", func(t *testing.T) {
		// Upstream's field is cleared first, so its migrations can be deleted
		// without virt-controller making them again.
		switched := time.Now()
		e.updateKubeVirt(t, func(kv *v1.KubeVirt) { kv.Spec.WorkloadUpdateStrategy.WorkloadUpdateMethods = nil })
		e.deleteMigrations(t, first)
		e.updateKubeVirt(t, func(kv *v1.KubeVirt) {
			kv.Spec.WorkloadUpdates = &v1.WorkloadUpdatePolicy{
				Methods:              []v1.WorkloadUpdateMethod{v1.WorkloadUpdateMethodLiveMigrate},
				MaxMigrationsPerNode: ptr.To[int32](5),
			}
		})
		e.eachVMIGetsAMigration(t, vmis, first)
		e.statusShows(t, v1.ActorVirtOperator, len(vmis), false)
		time.Sleep(quiet) // virt-controller's chance to do what it must not
		e.auditShows(t, "configuration B", switched, operatorUser, len(vmis))
	})
}

// vmiManifest is a VMI the scheduler places. It is created without virt-api's
// webhooks (off in the sandbox), so it names the architecture and machine type
// the mutating webhook would add (virt-controller renders the launcher pod's node
// selectors from them).
func vmiManifest(name string) string {
	return fmt.Sprintf(`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":%q,"namespace":%q},
"spec":{"architecture":"amd64",
"domain":{"machine":{"type":"q35"},"devices":{"disks":[{"name":"containerdisk","disk":{"bus":"virtio"}}]},"resources":{"requests":{"memory":"128Mi"}}},
"volumes":[{"name":"containerdisk","containerDisk":{"image":"quay.io/kubevirt/cirros-container-disk-demo"}}]}}`, name, vmiNS)
}

func (e *env) createVMI(t *testing.T, name string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(vmiManifest(name))); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Create(t.Context(), u); err != nil {
		t.Fatalf("creating VMI %s: %v", name, err)
	}
}

// runOnOldLauncher waits until virt-controller scheduled the VMI (its launcher
// pod Ready on a node, the VMI Scheduled there), then plays virt-handler: the pod
// runs oldLauncher and the VMI is Running and live-migratable.
func (e *env) runOnOldLauncher(t *testing.T, name string) {
	t.Helper()
	var pod *corev1.Pod
	sandboxtest.Eventually(t, 2*time.Minute, "VMI "+name+" Scheduled with its launcher pod", func() (bool, error) {
		vmi := e.vmi(t, name)
		var err error
		if pod, err = e.launcherPod(t, vmi); err != nil {
			return false, err
		}
		return vmi.Status.Phase == v1.VMIScheduled && vmi.Status.NodeName == pod.Spec.NodeName,
			fmt.Errorf("VMI phase %q node %q; pod %s %s on %q", vmi.Status.Phase, vmi.Status.NodeName, pod.Name, pod.Status.Phase, pod.Spec.NodeName)
	})
	// The container image is one of the pod fields that may change.
	img := []byte(fmt.Sprintf(`{"spec":{"containers":[{"name":"compute","image":%q}]}}`, oldLauncher))
	if err := e.c.Patch(t.Context(), pod, client.RawPatch(types.StrategicMergePatchType, img)); err != nil {
		t.Fatalf("giving pod %s the old launcher: %v", pod.Name, err)
	}
	// Unstructured, so the status fields the Go type leaves out survive.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("kubevirt.io/v1")
		u.SetKind("VirtualMachineInstance")
		if err := e.c.Get(t.Context(), client.ObjectKey{Namespace: vmiNS, Name: name}, u); err != nil {
			return err
		}
		status, _, _ := unstructured.NestedMap(u.Object, "status")
		if status == nil {
			status = map[string]any{}
		}
		status["phase"] = string(v1.VMIRunning)
		status["nodeName"] = pod.Spec.NodeName
		status["launcherContainerImageVersion"] = oldLauncher
		status["activePods"] = map[string]any{string(pod.UID): pod.Spec.NodeName}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		conds = slices.DeleteFunc(conds, func(c any) bool {
			m, _ := c.(map[string]any)
			return m["type"] == string(v1.VMIConditionLiveMigratable)
		})
		status["conditions"] = append(conds, map[string]any{
			"type": string(v1.VMIConditionLiveMigratable), "status": "True",
			"lastProbeTime": nil, "lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
		})
		u.Object["status"] = status
		return e.c.Update(t.Context(), u)
	})
	if err != nil {
		t.Fatalf("writing VMI %s's status: %v", name, err)
	}
}

// vmisStayOutdated waits until virt-controller marked every VMI outdated (its
// label), then checks for hold that the status written stays: Running on the old
// launcher, live-migratable.
func (e *env) vmisStayOutdated(t *testing.T, names []string, hold time.Duration) {
	t.Helper()
	sandboxtest.Eventually(t, time.Minute, "virt-controller labels the VMIs "+outdatedLabel, func() (bool, error) {
		for _, n := range names {
			if vmi := e.vmi(t, n); !metav1.HasLabel(vmi.ObjectMeta, outdatedLabel) {
				return false, fmt.Errorf("%s: labels %v, %s", n, vmi.Labels, describeVMI(vmi))
			}
		}
		return true, nil
	})
	for deadline := time.Now().Add(hold); time.Now().Before(deadline); time.Sleep(time.Second) {
		for _, n := range names {
			vmi := e.vmi(t, n)
			if vmi.Status.Phase != v1.VMIRunning || vmi.Status.LauncherContainerImageVersion != oldLauncher || !liveMigratable(vmi) {
				t.Fatalf("virt-controller changed VMI %s back: %s", n, describeVMI(vmi))
			}
		}
	}
	t.Logf("%d VMIs Running on %s for %s, as written", len(names), oldLauncher, hold)
}

// eachVMIGetsAMigration waits until every VMI has one workload-update migration
// whose UID is not in before, and returns them.
func (e *env) eachVMIGetsAMigration(t *testing.T, vmis []string, before map[string]types.UID) map[string]types.UID {
	t.Helper()
	got := map[string]types.UID{}
	sandboxtest.Eventually(t, 2*time.Minute, "a workload-update migration for each VMI", func() (bool, error) {
		list := e.migrations(t)
		clear(got)
		for _, m := range list {
			if m.DeletionTimestamp == nil && m.UID != before[m.Spec.VMIName] {
				got[m.Spec.VMIName] = m.UID
			}
		}
		for _, n := range vmis {
			if got[n] == "" {
				return false, fmt.Errorf("none for %s; migrations: %s; CR: %s", n, describeMigrations(list), describeKubeVirt(e.kubeVirt(t)))
			}
		}
		return true, nil
	})
	for _, m := range e.migrations(t) {
		if got[m.Spec.VMIName] != m.UID {
			continue
		}
		if _, ok := m.Annotations[wuAnnotation]; !ok || m.GenerateName != wuGenerateName {
			t.Errorf("migration %s: annotations %v, generateName %q: not a workload-update migration", m.Name, m.Annotations, m.GenerateName)
		}
	}
	t.Logf("migrations: %s", describeMigrations(e.migrations(t)))
	return got
}

// deleteMigrations deletes them and waits until virt-controller's migration
// controller has cancelled them and let them go (its finalizer).
func (e *env) deleteMigrations(t *testing.T, uids map[string]types.UID) {
	t.Helper()
	for _, m := range e.migrations(t) {
		if uids[m.Spec.VMIName] == m.UID {
			if err := e.c.Delete(t.Context(), &m); err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
		}
	}
	sandboxtest.Eventually(t, 2*time.Minute, "the deleted migrations gone", func() (bool, error) {
		list := e.migrations(t)
		for _, m := range list {
			if uids[m.Spec.VMIName] == m.UID {
				return false, fmt.Errorf("left: %s", describeMigrations(list))
			}
		}
		return true, nil
	})
}

// statusShows waits until the CR's status names actor and the operator counts
// outdated VMIs; with upstreamCount, virt-controller's own count
// (outdatedVirtualMachineInstanceWorkloads) too.
func (e *env) statusShows(t *testing.T, actor v1.WorkloadUpdateActor, outdated int, upstreamCount bool) {
	t.Helper()
	sandboxtest.Eventually(t, time.Minute, "status.workloadUpdates.actor "+string(actor), func() (bool, error) {
		kv := e.kubeVirt(t)
		wu := kv.Status.WorkloadUpdates
		ok := wu != nil && wu.Actor == actor && wu.Outdated == outdated
		if upstreamCount {
			ok = ok && kv.Status.OutdatedVirtualMachineInstanceWorkloads != nil && *kv.Status.OutdatedVirtualMachineInstanceWorkloads == outdated
		}
		return ok, fmt.Errorf("%s", describeKubeVirt(kv))
	})
}

// auditShows checks the migration and eviction requests from since on: at least
// want migrations created (201) by creator, no migration create by anyone else,
// no migration delete by virt-controller and no eviction by the operator. The
// creates are waited for (the audit log may trail the API).
func (e *env) auditShows(t *testing.T, what string, since time.Time, creator string, want int) {
	t.Helper()
	created := func(events []auditRecord) int {
		n := 0
		for _, ev := range events {
			if ev.is("create", "virtualmachineinstancemigrations", "") && ev.User.Username == creator && ev.ResponseStatus.Code == 201 {
				n++
			}
		}
		return n
	}
	events := auditRecords(t, e.audit, since)
	for deadline := time.Now().Add(time.Minute); created(events) < want && time.Now().Before(deadline); {
		time.Sleep(time.Second)
		events = auditRecords(t, e.audit, since)
	}
	if n := created(events); n < want {
		t.Errorf("%s: %d migrations created by %s in the audit log, want at least %d", what, n, creator, want)
	}
	for _, ev := range events {
		switch {
		case ev.is("create", "virtualmachineinstancemigrations", "") && ev.User.Username != creator:
			t.Errorf("%s: a migration create by %s: %s", what, ev.User.Username, ev)
		case ev.is("delete", "virtualmachineinstancemigrations", "") && ev.User.Username == controllerUser:
			t.Errorf("%s: virt-controller deleted a migration: %s", what, ev)
		case ev.is("create", "pods", "eviction") && ev.User.Username == operatorUser:
			t.Errorf("%s: the operator evicted: %s", what, ev)
		}
	}
	if t.Failed() {
		t.Logf("%s: migration and eviction requests since %s:\n%s", what, since.Format(time.RFC3339Nano), strings.Join(describeAudit(events), "\n"))
		return
	}
	t.Logf("%s: audit log: %s", what, summarize(events))
}

// auditRecord is the part of an audit event these checks read.
type auditRecord struct {
	Verb string `json:"verb"`
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceived metav1.MicroTime `json:"requestReceivedTimestamp"`
}

func (r auditRecord) is(verb, resource, subresource string) bool {
	return r.Verb == verb && r.ObjectRef != nil && r.ObjectRef.Resource == resource && r.ObjectRef.Subresource == subresource
}

func (r auditRecord) String() string {
	ref := r.ObjectRef
	return fmt.Sprintf("%s %s %s %s/%s %s/%s -> %d", r.RequestReceived.Format("15:04:05.000000"), r.User.Username, r.Verb,
		ref.Resource, ref.Subresource, ref.Namespace, ref.Name, r.ResponseStatus.Code)
}

// auditRecords are the migration requests and evictions received from since on.
func auditRecords(t *testing.T, path string, since time.Time) []auditRecord {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var out []auditRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var r auditRecord
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.ObjectRef == nil || r.RequestReceived.Time.Before(since) {
			continue
		}
		if r.ObjectRef.Resource == "virtualmachineinstancemigrations" && (r.Verb == "create" || r.Verb == "delete" || r.Verb == "deletecollection") ||
			r.is("create", "pods", "eviction") {
			out = append(out, r)
		}
	}
	return out
}

// summarize counts the requests by user, verb and resource.
func summarize(events []auditRecord) string {
	n := map[string]int{}
	for _, ev := range events {
		n[fmt.Sprintf("%s %s %s/%s %d", ev.User.Username, ev.Verb, ev.ObjectRef.Resource, ev.ObjectRef.Subresource, ev.ResponseStatus.Code)]++
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(n)) {
		out = append(out, fmt.Sprintf("%s x%d", k, n[k]))
	}
	return strings.Join(out, "; ")
}

func describeAudit(events []auditRecord) []string {
	out := make([]string, 0, len(events))
	for _, ev := range events {
		out = append(out, "  "+ev.String())
	}
	return out
}

func (e *env) vmi(t *testing.T, name string) *v1.VirtualMachineInstance {
	t.Helper()
	vmi := &v1.VirtualMachineInstance{}
	if err := e.c.Get(t.Context(), client.ObjectKey{Namespace: vmiNS, Name: name}, vmi); err != nil {
		t.Fatalf("VMI %s: %v", name, err)
	}
	return vmi
}

// launcherPod is the VMI's launcher pod (not a migration target).
func (e *env) launcherPod(t *testing.T, vmi *v1.VirtualMachineInstance) (*corev1.Pod, error) {
	t.Helper()
	pods := &corev1.PodList{}
	if err := e.c.List(t.Context(), pods, client.InNamespace(vmiNS), client.MatchingLabels{"kubevirt.io/created-by": string(vmi.UID)}); err != nil {
		t.Fatal(err)
	}
	for i, p := range pods.Items {
		if _, target := p.Labels["kubevirt.io/migrationJobUID"]; !target {
			return &pods.Items[i], nil
		}
	}
	return nil, fmt.Errorf("VMI %s (phase %q) has no launcher pod yet", vmi.Name, vmi.Status.Phase)
}

func (e *env) migrations(t *testing.T) []v1.VirtualMachineInstanceMigration {
	t.Helper()
	list := &v1.VirtualMachineInstanceMigrationList{}
	if err := e.c.List(t.Context(), list, client.InNamespace(vmiNS)); err != nil {
		t.Fatal(err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Spec.VMIName < list.Items[j].Spec.VMIName })
	return list.Items
}

func (e *env) kubeVirt(t *testing.T) *v1.KubeVirt {
	t.Helper()
	kv := &v1.KubeVirt{}
	if err := e.c.Get(t.Context(), client.ObjectKey{Namespace: namespace, Name: "kubevirt"}, kv); err != nil {
		t.Fatal(err)
	}
	return kv
}

func (e *env) updateKubeVirt(t *testing.T, mutate func(*v1.KubeVirt)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		kv := e.kubeVirt(t)
		mutate(kv)
		return e.c.Update(t.Context(), kv)
	})
	if err != nil {
		t.Fatalf("updating the KubeVirt CR: %v", err)
	}
}

// targetLauncher is virt-controller's --launcher-image, the image VMIs are
// compared with.
func (e *env) targetLauncher(t *testing.T) string {
	t.Helper()
	dep := &appsv1.Deployment{}
	if err := e.c.Get(t.Context(), client.ObjectKey{Namespace: namespace, Name: "virt-controller"}, dep); err != nil {
		t.Fatal(err)
	}
	args := dep.Spec.Template.Spec.Containers[0].Args
	for i, a := range args {
		if a == "--launcher-image" && i+1 < len(args) {
			if args[i+1] == oldLauncher {
				t.Fatalf("the target launcher is %s, the image the test calls old", oldLauncher)
			}
			return args[i+1]
		}
	}
	t.Fatalf("virt-controller has no --launcher-image: %v", args)
	return ""
}

func liveMigratable(vmi *v1.VirtualMachineInstance) bool {
	for _, c := range vmi.Status.Conditions {
		if c.Type == v1.VMIConditionLiveMigratable {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func describeVMI(vmi *v1.VirtualMachineInstance) string {
	var conds []string
	for _, c := range vmi.Status.Conditions {
		conds = append(conds, fmt.Sprintf("%s=%s", c.Type, c.Status))
	}
	return fmt.Sprintf("phase %q node %q launcher %q conditions %v activePods %v", vmi.Status.Phase, vmi.Status.NodeName,
		vmi.Status.LauncherContainerImageVersion, conds, vmi.Status.ActivePods)
}

func describeMigrations(list []v1.VirtualMachineInstanceMigration) string {
	if len(list) == 0 {
		return "none"
	}
	var out []string
	for _, m := range list {
		managers := map[string]bool{}
		for _, f := range m.ManagedFields {
			managers[f.Manager] = true
		}
		deleting := ""
		if m.DeletionTimestamp != nil {
			deleting = " deleting"
		}
		out = append(out, fmt.Sprintf("%s (VMI %s, %s%s, managers %v)", m.Name, m.Spec.VMIName, m.Status.Phase, deleting, keys(managers)))
	}
	return strings.Join(out, "; ")
}

func describeKubeVirt(kv *v1.KubeVirt) string {
	s := kv.Status
	upstream := "unset"
	if s.OutdatedVirtualMachineInstanceWorkloads != nil {
		upstream = fmt.Sprint(*s.OutdatedVirtualMachineInstanceWorkloads)
	}
	wu, _ := json.Marshal(s.WorkloadUpdates)
	return fmt.Sprintf("phase %s, observed/target deployment %s/%s, outdatedVirtualMachineInstanceWorkloads %s, workloadUpdates %s",
		s.Phase, s.ObservedDeploymentID, s.TargetDeploymentID, upstream, wu)
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
