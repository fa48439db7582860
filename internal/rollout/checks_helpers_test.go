package rollout

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/workloadupdate"
)

// Fixtures of the data-plane checks' tests: three Ready nodes, the canary on
// node-0, VMIs labelled app=probe unless an option says otherwise.

type vmiOpt func(*apiv1.VirtualMachineInstance)

// vmi is a Running, live-migratable VMI default/name on node, labelled app=probe.
func vmi(name, node string, opts ...vmiOpt) apiv1.VirtualMachineInstance {
	v := apiv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"app": "probe"}},
		Status: apiv1.VirtualMachineInstanceStatus{Phase: apiv1.VMIRunning, NodeName: node,
			Conditions: []apiv1.VirtualMachineInstanceCondition{{Type: apiv1.VMIConditionLiveMigratable, Status: corev1.ConditionTrue}}},
	}
	for _, o := range opts {
		o(&v)
	}
	return v
}

func vmiPhase(p apiv1.VirtualMachineInstancePhase) vmiOpt {
	return func(v *apiv1.VirtualMachineInstance) { v.Status.Phase = p }
}

func uid(u string) vmiOpt { return func(v *apiv1.VirtualMachineInstance) { v.UID = types.UID(u) } }

func unlabelled(v *apiv1.VirtualMachineInstance) { v.Labels = nil }

func choice(c string) vmiOpt {
	return func(v *apiv1.VirtualMachineInstance) { v.Labels[workloadupdate.ChoiceKey] = c }
}

func notMigratable(v *apiv1.VirtualMachineInstance) {
	v.Status.Conditions[0].Status = corev1.ConditionFalse
}

// movedBy: the VMI's last migration (uid m) went from one node to another.
func movedBy(m types.UID, from, to string, completed, failed bool, reason string) vmiOpt {
	return func(v *apiv1.VirtualMachineInstance) {
		v.Status.NodeName = to
		if failed {
			v.Status.NodeName = from
		}
		v.Status.MigrationState = &apiv1.VirtualMachineInstanceMigrationState{MigrationUID: m, SourceNode: from, TargetNode: to,
			Completed: completed, Failed: failed, FailureReason: reason}
	}
}

func readyNode(name string, lbls ...string) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	for i := 0; i+1 < len(lbls); i += 2 {
		n.Labels[lbls[i]] = lbls[i+1]
	}
	return n
}

func threeNodes() []corev1.Node {
	return []corev1.Node{readyNode("node-0"), readyNode("node-1"), readyNode("node-2")}
}

// probeMigration is this test rollout's probe move i of VMI vmi, in phase.
func probeMigration(i int, dir Direction, vmiName string, phase apiv1.VirtualMachineInstanceMigrationPhase) apiv1.VirtualMachineInstanceMigration {
	key := ProbeKey(newTgt.ID, t0)
	return apiv1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: ProbeMigrationName(key, i), UID: types.UID("mig-" + ProbeMigrationName(key, i)),
			Labels:            map[string]string{workloadupdate.HandlerProbeLabel: key},
			Annotations:       map[string]string{ProbeDirectionAnnotation: string(dir)},
			CreationTimestamp: metav1.NewTime(at(60))},
		Spec:   apiv1.VirtualMachineInstanceMigrationSpec{VMIName: vmiName},
		Status: apiv1.VirtualMachineInstanceMigrationStatus{Phase: phase},
	}
}

func probeOn(sel string) DataPlaneChecks {
	s, err := labels.Parse(sel)
	if err != nil {
		panic(err)
	}
	return DataPlaneChecks{Probe: &ProbePolicy{Selector: s, Timeout: DefaultProbeTimeout}}
}

func withChecks(c DataPlaneChecks) Policy {
	p := DefaultPolicy()
	p.Checks = c
	return p
}

// canaryObs is three nodes with the canary pod on node-0 updated and Ready
// since at(0), at at(100) in phase (CanaryNodes node-0), with the checks'
// progress prev and the cluster dp.
func canaryObs(phase Phase, prev Checks, dp *DataPlane, busy ...Migration) Observation {
	st := state(phase, at(50), "node-0")
	st.Checks = prev
	if dp != nil && dp.Nodes == nil {
		dp.Nodes = threeNodes()
	}
	return Observation{DaemonSet: daemonSet(newTgt, OnDelete(), 3), Pods: with(pods(oldTgt, 1, 3), pod("node-0", newTgt, at(0))),
		Target: newTgt, Previous: st, DataPlane: dp, Migrations: busy, Now: at(100)}
}

// running is a check already running since at(50).
func running(name CheckName) CheckResult {
	return CheckResult{Name: name, State: CheckRunning, StartedAt: at(50)}
}

// probing is a probe of default/name whose moves so far are moves.
func probing(name string, moves ...ProbeMove) *ProbeState {
	return &ProbeState{Namespace: "default", Name: name, UID: types.UID("uid-" + name), Node: "node-0", Moves: moves}
}

func move(i int, dir Direction, phase string) ProbeMove {
	return ProbeMove{Direction: dir, Migration: ProbeMigrationName(ProbeKey(newTgt.ID, t0), i), Phase: phase, CreatedAt: at(60)}
}

func since(d time.Duration) time.Time { return at(60).Add(d) }

func passWhenNone(c DataPlaneChecks) DataPlaneChecks {
	c.Probe.PassWhenNoneEligible = true
	return c
}

// capped: parallelMigrationsPerCluster 1.
func capped(o Observation) Observation {
	o.DataPlane.Limits.ParallelMigrations = 1
	return o
}

func paused(o Observation) Observation {
	o.Paused = true
	return o
}

func late(o Observation, now time.Time) Observation {
	o.Now = now
	return o
}

// usersRunning is someone else's migration of vmiName, running.
func usersRunning(vmiName string) apiv1.VirtualMachineInstanceMigration {
	return apiv1.VirtualMachineInstanceMigration{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "users-" + vmiName},
		Spec: apiv1.VirtualMachineInstanceMigrationSpec{VMIName: vmiName}, Status: apiv1.VirtualMachineInstanceMigrationStatus{Phase: apiv1.MigrationRunning}}
}

// staleProbe is an earlier rollout's probe migration of default/b, running.
func staleProbe() apiv1.VirtualMachineInstanceMigration {
	return apiv1.VirtualMachineInstanceMigration{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubevirt-handler-probe-0123456789-0", UID: "stale",
		Labels: map[string]string{workloadupdate.HandlerProbeLabel: "0123456789"}},
		Spec: apiv1.VirtualMachineInstanceMigrationSpec{VMIName: "b"}, Status: apiv1.VirtualMachineInstanceMigrationStatus{Phase: apiv1.MigrationRunning}}
}

func withPhase(m apiv1.VirtualMachineInstanceMigration, p apiv1.VirtualMachineInstanceMigrationPhase) apiv1.VirtualMachineInstanceMigration {
	m.Status.Phase = p
	return m
}

func placed(spec string) vmiOpt {
	return func(v *apiv1.VirtualMachineInstance) { v.Spec.Raw = []byte(spec) }
}

func metaSelector(l map[string]string) metav1.LabelSelector {
	return metav1.LabelSelector{MatchLabels: l}
}

func badSelector() metav1.LabelSelector {
	return metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Sometimes"}}}
}

func withTimeout(p *apiv1.HandlerMigrationProbe, d *apiv1.Duration) *apiv1.HandlerMigrationProbe {
	p.Timeout = d
	return p
}
