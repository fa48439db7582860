package workloadupdate

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/metadata"
)

type nodeOpt func(*corev1.Node)

func node(name string, opts ...nodeOpt) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	for _, o := range opts {
		o(&n)
	}
	return n
}

var (
	cordoned = func(n *corev1.Node) { n.Spec.Unschedulable = true }
	notReady = func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }
	noStatus = func(n *corev1.Node) { n.Status.Conditions = nil }
	deleting = func(n *corev1.Node) { n.DeletionTimestamp = &metav1.Time{Time: t0} }
)

func nodeLabel(k, v string) nodeOpt {
	return func(n *corev1.Node) {
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[k] = v
	}
}

func tainted(key string, effect corev1.TaintEffect) nodeOpt {
	return func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Effect: effect}) }
}

func on(nodeName string) vmiOpt {
	return func(v *v1.VirtualMachineInstance) { v.Status.NodeName = nodeName }
}

func spec(json string) vmiOpt {
	return func(v *v1.VirtualMachineInstance) { v.Spec = runtime.RawExtension{Raw: []byte(json)} }
}

func TestTargetsWhy(t *testing.T) {
	const (
		none     = "no other schedulable node"
		affinity = "no other schedulable node matches its node selector and affinity"
		taints   = "every other schedulable node matching it has a taint it does not tolerate"
	)
	requireZoneB := `{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":` +
		`{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["b"]}]}]}}}}`
	for _, tc := range []struct {
		name  string
		nodes []corev1.Node
		vmi   []vmiOpt
		want  string
	}{
		{"another Ready node", []corev1.Node{node("a"), node("b")}, nil, ""},
		{"one node", []corev1.Node{node("a")}, nil, none},
		{"no nodes listed", nil, nil, none},
		{"the other is cordoned", []corev1.Node{node("a"), node("b", cordoned)}, nil, none},
		{"the other is not Ready", []corev1.Node{node("a"), node("b", notReady)}, nil, none},
		{"the other reports no Ready condition", []corev1.Node{node("a"), node("b", noStatus)}, nil, none},
		{"the other is being deleted", []corev1.Node{node("a"), node("b", deleting)}, nil, none},
		{"virt-handler marked the other unschedulable", []corev1.Node{node("a"), node("b", nodeLabel(metadata.SchedulableLabel, "false"))}, nil, none},
		{"an absent schedulable label is not held against a node", []corev1.Node{node("a"), node("b", nodeLabel("other", "x"))}, nil, ""},
		{"node selector matches no other node", []corev1.Node{node("a", nodeLabel("gpu", "yes")), node("b")},
			[]vmiOpt{spec(`{"nodeSelector":{"gpu":"yes"},"domain":{"devices":{}}}`)}, affinity},
		{"node selector matches another node", []corev1.Node{node("a"), node("b", nodeLabel("gpu", "yes"))},
			[]vmiOpt{spec(`{"nodeSelector":{"gpu":"yes"}}`)}, ""},
		{"required affinity matches no other node", []corev1.Node{node("a"), node("b", nodeLabel("zone", "a"))},
			[]vmiOpt{spec(requireZoneB)}, affinity},
		{"required affinity matches another node", []corev1.Node{node("a"), node("b", nodeLabel("zone", "b"))},
			[]vmiOpt{spec(requireZoneB)}, ""},
		{"the other node's NoSchedule taint is not tolerated", []corev1.Node{node("a"), node("b", tainted("dedicated", corev1.TaintEffectNoSchedule))},
			nil, taints},
		{"a NoExecute taint is not tolerated", []corev1.Node{node("a"), node("b", tainted("dedicated", corev1.TaintEffectNoExecute))},
			nil, taints},
		{"a PreferNoSchedule taint does not keep it off", []corev1.Node{node("a"), node("b", tainted("dedicated", corev1.TaintEffectPreferNoSchedule))},
			nil, ""},
		{"a tolerated taint", []corev1.Node{node("a"), node("b", tainted("dedicated", corev1.TaintEffectNoSchedule))},
			[]vmiOpt{spec(`{"tolerations":[{"key":"dedicated","operator":"Exists"}]}`)}, ""},
		{"one tainted, one free", []corev1.Node{node("a"), node("b", tainted("x", corev1.TaintEffectNoSchedule)), node("c")}, nil, ""},
		{"a spec that cannot be read is left to the migration", []corev1.Node{node("a")},
			[]vmiOpt{spec(`{"nodeSelector":"not a map"}`)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := newVMI("vm", oldImage, append([]vmiOpt{on("a")}, tc.vmi...)...)
			if got := NewTargets(tc.nodes).why(compact(vmi)); got != tc.want {
				t.Errorf("Why = %q, want %q", got, tc.want)
			}
		})
	}
	var unchecked *Targets
	vmi := newVMI("vm", oldImage, on("a"))
	if got := unchecked.why(compact(vmi)); got != "" {
		t.Errorf("nil Targets: Why = %q, want \"\" (not checked)", got)
	}
}

// The compact form keeps of a spec its placement only, shared by every VMI
// of the same placement; none when the spec sets none or cannot be read.
func TestCompactPlacement(t *testing.T) {
	full := `{"domain":{"cpu":{"cores":4}},"nodeSelector":{"gpu":"yes"},` +
		`"tolerations":[{"key":"k","operator":"Exists"}],"affinity":{"podAntiAffinity":{}}}`
	a, b := compact(newVMI("a", oldImage, spec(full))), compact(newVMI("b", oldImage, spec(full)))
	p := a.Placement
	if p == nil || p.NodeSelector["gpu"] != "yes" || len(p.Tolerations) != 1 || p.Affinity == nil {
		t.Fatalf("placement %+v, want the node selector, tolerations and affinity", p)
	}
	if a.Placement != b.Placement {
		t.Error("two VMIs of the same placement hold a copy each")
	}
	if c := compact(newVMI("c", oldImage, spec(`{"nodeSelector":{"gpu":"no"}}`))); c.Placement == a.Placement {
		t.Error("another placement shares the first's")
	}
	for name, raw := range map[string]string{"no placement": `{"domain":{}}`, "unreadable": `{"nodeSelector":1}`} {
		if got := compact(newVMI("d", oldImage, spec(raw))).Placement; got != nil {
			t.Errorf("%s: placement %+v, want none", name, got)
		}
	}
	if got := compact(newVMI("e", oldImage)).Placement; got != nil {
		t.Errorf("no spec: placement %+v, want none", got)
	}
	if _, err := PlacementOf(runtime.RawExtension{Raw: []byte(`[`)}); err == nil {
		t.Error("PlacementOf of broken JSON: no error")
	}
}

// On one node, nothing is migrated: with eviction allowed the VMIs are evicted,
// without it they are reported not movable, with the reason, in the plan and
// in status.
func TestPlanCreatesNoMigrationWithoutATarget(t *testing.T) {
	single := NewTargets([]corev1.Node{node("a")})
	vmis := many("vm", 3, oldImage, migratable, on("a"))

	in := inputs(vmis, nil, Methods{LiveMigrate: true})
	in.Targets = single
	p := PlanUpdate(in)
	if len(p.Migrate) != 0 || len(p.Evict) != 0 {
		t.Fatalf("one node, LiveMigrate only: migrate %d, evict %d; want nothing", len(p.Migrate), len(p.Evict))
	}
	if len(p.NotMovable) != 3 || p.NotMovable[0].Key.String() != "default/vm-000" || p.NotMovable[0].Reason != "no other schedulable node" {
		t.Fatalf("NotMovable = %+v, want the 3 VMIs, sorted, with the reason", p.NotMovable)
	}
	if p.Outdated != 3 || p.WaitingMigrate != 0 {
		t.Errorf("outdated %d, waiting for migration %d; want 3 and 0", p.Outdated, p.WaitingMigrate)
	}
	st := NextStatus(nil, Report{TargetID: "id"}, p, Done{})
	if st.NotMovable != 3 || len(st.NotMovableVMIs) != 3 || st.NotMovableVMIs[0] != "default/vm-000: no other schedulable node" {
		t.Errorf("status notMovable %d %v", st.NotMovable, st.NotMovableVMIs)
	}

	in = inputs(vmis, nil, both)
	in.Targets = single
	p = PlanUpdate(in)
	_, evicted := names(p)
	if len(p.Migrate) != 0 || len(evicted) != 3 || len(p.NotMovable) != 0 {
		t.Fatalf("one node, both methods: migrate %d, evict %v, not movable %d; want the 3 evicted", len(p.Migrate), evicted, len(p.NotMovable))
	}
	if r := p.Decisions[KeyOf(&vmis[0])].Reason; !strings.Contains(r, "no migration target") {
		t.Errorf("reason %q, want it to say there is no migration target", r)
	}

	// A VM's own LiveMigrate choice is not overridden by the cluster's Evict.
	chosen := many("vm", 1, oldImage, migratable, on("a"), func(v *v1.VirtualMachineInstance) {
		v.Labels = map[string]string{ChoiceKey: string(ChoiceLiveMigrate)}
	})
	in = inputs(chosen, nil, both)
	in.Targets = single
	if p = PlanUpdate(in); len(p.Evict) != 0 || len(p.NotMovable) != 1 {
		t.Errorf("a VM that chose LiveMigrate: evict %d, not movable %d; want 0 and 1", len(p.Evict), len(p.NotMovable))
	}

	// Two nodes: migrated as before.
	in = inputs(vmis, nil, Methods{LiveMigrate: true})
	in.Targets = NewTargets([]corev1.Node{node("a"), node("b")})
	if p = PlanUpdate(in); len(p.Migrate) != 3 || len(p.NotMovable) != 0 {
		t.Errorf("two nodes: migrate %d, not movable %d; want 3 and 0", len(p.Migrate), len(p.NotMovable))
	}
}

// A VMI evicted for want of a target, still listed as running, is in flight:
// never migrated (a loaded e2e run created one).
func TestPlanEvictingWithoutATargetIsInFlight(t *testing.T) {
	vmis := many("vm", 1, oldImage, migratable, on("a"))
	in := inputs(vmis, nil, both)
	in.Targets = NewTargets([]corev1.Node{node("a")})
	in.Evicting = map[Key]bool{KeyOf(&vmis[0]): true}
	p := PlanUpdate(in)
	if len(p.Migrate) != 0 || len(p.Evict) != 0 || p.InFlight != 1 {
		t.Fatalf("migrate %d, evict %d, in flight %d; want only in flight", len(p.Migrate), len(p.Evict), p.InFlight)
	}
}
