// Package upgradeplan says, before anything changes, what applying a new
// KubeVirt CR would do: the config keys that change and the new deployment ID;
// the objects created, updated (with the fields that change) and deleted; new
// images; which pods restart, in which order, and on which node the
// virt-handler canary would start; which VMIs would migrate, be evicted or be
// left; an estimate of the time; and the preflight results. Make is pure: the
// `virt-operator plan` command reads the cluster and passes an Input.
package upgradeplan

import (
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/preflight"
	"github.com/virt-operator/virt-operator/internal/rollout"
	"github.com/virt-operator/virt-operator/internal/storedversions"
)

// Input is everything a plan looks at.
type Input struct {
	// Current is the live CR (nil: a first install); NewKubeVirt the one planned.
	Current, NewKubeVirt *v1.KubeVirt
	// CurrentConfig is the current target config (nil on a first install);
	// NewConfig the planned one.
	CurrentConfig, NewConfig *deployid.Config
	// Steps are the planned strategy's steps, in the order they apply.
	Steps []apply.Step
	// Live are the live objects of the planned strategy, by reference.
	Live map[apply.ObjectRef]client.Object
	// Orphans are live managed objects the planned strategy no longer has.
	Orphans []client.Object
	// Removed is what the fate of each orphaned CRD depends on, by name
	// (apply.DecideCRD): one that holds user data is kept, not deleted. An
	// orphaned CRD it does not name was not counted (an offline plan).
	Removed map[string]apply.CRDData
	// Pods are the pods in the install namespace (components and virt-handler).
	Pods  []corev1.Pod
	Nodes []corev1.Node
	VMIs  []v1.VirtualMachineInstance
	// Preflight are the checks' results (internal/preflight's).
	Preflight []v1.PreflightCheck
	// StoredVersions say what becomes of the versions objects are stored in
	// that the planned CRDs no longer serve (nil when not read: offline).
	StoredVersions []storedversions.Decision
}

// Change is one object the plan writes (or, Op Keep, keeps for its data).
type Change struct {
	Ref    apply.ObjectRef
	Op     apply.Op
	Reason string
	// Fields are the changed fields of an update, "path: old -> new".
	Fields []string
}

// Restart is one step whose pods restart.
type Restart struct {
	Step      string
	Workloads []string
	// Pods restarting, by name.
	Pods []string
	// CanaryNodes: for virt-handler, where the canary starts.
	CanaryNodes []string
	// Checks: for virt-handler, what its data-plane checks would do after
	// the canary's bake (spec.handlerRollout.dataPlaneChecks).
	Checks []rollout.CheckPreview
}

// Plan is the answer.
type Plan struct {
	FromID, ToID         string
	FromVersion, Version string
	ChangedKeys          []string
	// NoChange: the planned ID is the current target; nothing rolls out.
	NoChange  bool
	Changes   []Change
	NewImages []string
	Restarts  []Restart
	VMIs      VMIPlan
	Estimate  Estimate
	Preflight []v1.PreflightCheck
	// Rollback is set when the planned release is older than the running one.
	Rollback *Rollback
}

// Blocked reports whether a preflight check failed.
func (p Plan) Blocked() bool {
	for _, c := range p.Preflight {
		if c.State == preflight.Failed {
			return true
		}
	}
	return false
}

// OpKeep is a plan's change for an orphaned CRD that holds user data, or
// whose objects cannot be counted: it is kept (the controller annotates it
// retained), not deleted.
const OpKeep apply.Op = "Keep"

// removedCRD is the change of an orphaned CRD: deleted or kept, as
// apply.DecideCRD says.
func removedCRD(ref apply.ObjectRef, removed map[string]apply.CRDData) Change {
	d, counted := removed[ref.Name]
	if !counted {
		return Change{Ref: ref, Op: OpKeep, Reason: "not in the planned strategy; not counted: kept if it holds user objects, deleted if empty"}
	}
	op := OpKeep
	if f := apply.DecideCRD(d); f == apply.FateDelete || f == apply.FateDeleteRetained {
		op = apply.OpDelete
	}
	return Change{Ref: ref, Op: op, Reason: "not in the planned strategy; " + d.Describe()}
}

// Make builds the plan.
func Make(in Input) Plan {
	p := Plan{ToID: in.NewConfig.ID, Version: in.NewConfig.KubeVirtVersion, Preflight: in.Preflight}
	if in.CurrentConfig != nil {
		p.FromID, p.FromVersion = in.CurrentConfig.ID, in.CurrentConfig.KubeVirtVersion
		p.ChangedKeys = deployid.ChangedKeys(in.CurrentConfig, in.NewConfig)
		p.NoChange = in.CurrentConfig.ID == in.NewConfig.ID
	}
	gens := []v1.GenerationStatus(nil)
	if in.Current != nil {
		gens = in.Current.Status.Generations
	}
	liveImages := imagesOf(in.Live)
	for _, step := range in.Steps {
		restarted := Restart{Step: step.Name}
		for _, a := range apply.Plan(step.Objects, in.Live, gens) {
			if a.Op == apply.OpNone {
				continue
			}
			c := Change{Ref: apply.RefOf(a.Object), Op: a.Op, Reason: a.Reason}
			if a.Op == apply.OpUpdate && a.Live != nil {
				c.Fields = FieldChanges(a.Live, a.Object)
			}
			p.Changes = append(p.Changes, c)
			if restarts(a) {
				restarted.Workloads = append(restarted.Workloads, c.Ref.Kind+"/"+c.Ref.Name)
				restarted.Pods = append(restarted.Pods, podsOf(a.Live, in.Pods)...)
				if ds, ok := a.Live.(*appsv1.DaemonSet); ok && step.Name == apply.StepVirtHandler {
					restarted.CanaryNodes = canaryNodes(in, ds)
					restarted.Checks = previewChecks(in, restarted.CanaryNodes)
				}
			}
		}
		if len(restarted.Workloads) > 0 {
			p.Restarts = append(p.Restarts, restarted)
		}
	}
	for _, o := range in.Orphans {
		ref := apply.RefOf(o)
		if ref.Kind == "CustomResourceDefinition" {
			p.Changes = append(p.Changes, removedCRD(ref, in.Removed))
			continue
		}
		p.Changes = append(p.Changes, Change{Ref: ref, Op: apply.OpDelete, Reason: "not in the planned strategy"})
	}
	for _, img := range desiredImages(in.Steps) {
		if !liveImages[img] {
			p.NewImages = append(p.NewImages, img)
		}
	}
	p.VMIs = planVMIs(in)
	p.Estimate = estimate(in, p.Restarts)
	if !p.NoChange && isRollback(p.FromVersion, p.Version) {
		p.Rollback = rollbackOf(in, p)
	}
	return p
}

// restarts: the action changes a live workload's pod template.
func restarts(a apply.Action) bool {
	if a.Live == nil || a.Op == apply.OpCreate || a.Op == apply.OpDelete {
		return false
	}
	want, live := apply.PodTemplate(a.Object), apply.PodTemplate(a.Live)
	return want != nil && live != nil && !equality.Semantic.DeepDerivative(want, live)
}

// podsOf are the pods the live workload selects.
func podsOf(workload client.Object, pods []corev1.Pod) []string {
	var sel *metav1.LabelSelector
	switch o := workload.(type) {
	case *appsv1.Deployment:
		sel = o.Spec.Selector
	case *appsv1.DaemonSet:
		sel = o.Spec.Selector
	}
	match, err := metav1.LabelSelectorAsSelector(sel)
	if sel == nil || err != nil {
		return nil
	}
	var out []string
	for _, p := range pods {
		if p.Namespace == workload.GetNamespace() && match.Matches(labels.Set(p.Labels)) {
			out = append(out, p.Name)
		}
	}
	sort.Strings(out)
	return out
}

func imagesOf(live map[apply.ObjectRef]client.Object) map[string]bool {
	out := map[string]bool{}
	for _, o := range live {
		if t := apply.PodTemplate(o); t != nil {
			for _, c := range append(t.Spec.InitContainers, t.Spec.Containers...) {
				out[c.Image] = true
			}
		}
	}
	return out
}

func desiredImages(steps []apply.Step) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range steps {
		for _, o := range s.Objects {
			if t := apply.PodTemplate(o); t != nil {
				for _, c := range append(t.Spec.InitContainers, t.Spec.Containers...) {
					if !seen[c.Image] {
						seen[c.Image] = true
						out = append(out, c.Image)
					}
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// createdByKind summarises the creations: "12 Deployment, 3 Service, ...".
func createdByKind(changes []Change) string {
	n := map[string]int{}
	for _, c := range changes {
		if c.Op == apply.OpCreate {
			n[c.Ref.Kind]++
		}
	}
	kinds := make([]string, 0, len(n))
	for k := range n {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool {
		return n[kinds[i]] > n[kinds[j]] || (n[kinds[i]] == n[kinds[j]] && kinds[i] < kinds[j])
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%d %s", n[k], k)
	}
	return strings.Join(parts, ", ")
}

// Text renders the plan for a terminal.
func (p Plan) Text() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	switch {
	case p.FromID == "":
		w("Install KubeVirt %s (deployment %s)", p.Version, p.ToID)
	case p.NoChange:
		w("No rollout: the deployment ID stays %s (KubeVirt %s)", p.ToID, p.Version)
	case p.Rollback != nil:
		w("Roll back KubeVirt %s -> %s (deployment %s -> %s)", p.FromVersion, p.Version, p.FromID, p.ToID)
		w("Changed keys: %s", strings.Join(p.ChangedKeys, ", "))
		w("")
		b.WriteString(p.Rollback.text(p.FromVersion, p.Version))
	default:
		w("Upgrade KubeVirt %s -> %s (deployment %s -> %s)", p.FromVersion, p.Version, p.FromID, p.ToID)
		w("Changed keys: %s", strings.Join(p.ChangedKeys, ", "))
	}
	w("")
	w("Preflight")
	for _, c := range p.Preflight {
		mark := "ok  "
		if c.State == preflight.Failed {
			mark = "FAIL"
		}
		w("  %s %-28s %s", mark, c.Name, c.Message)
	}
	counts := map[apply.Op]int{}
	for _, c := range p.Changes {
		counts[c.Op]++
	}
	w("")
	w("Objects: %d created, %d updated, %d recreated, %d deleted, %d kept for their data", counts[apply.OpCreate], counts[apply.OpUpdate],
		counts[apply.OpRecreate], counts[apply.OpDelete], counts[OpKeep])
	if created := createdByKind(p.Changes); created != "" {
		w("  Create   %s", created)
	}
	stampsOnly := 0
	for _, c := range p.Changes {
		switch {
		case c.Op == apply.OpCreate:
			continue
		case c.Op == apply.OpUpdate && len(c.Fields) == 0:
			stampsOnly++
			continue
		}
		w("  %-8s %s", c.Op, c.Ref)
		if c.Op == OpKeep || c.Ref.Kind == "CustomResourceDefinition" && c.Op == apply.OpDelete { // what becomes of its objects
			w("             %s", c.Reason)
		}
		for _, f := range c.Fields {
			w("             %s", f)
		}
	}
	if stampsOnly > 0 {
		w("  Update   %d more objects get only the operator's version stamps", stampsOnly)
	}
	if len(p.NewImages) > 0 {
		w("")
		w("New images")
		for _, img := range p.NewImages {
			w("  %s", img)
		}
	}
	w("")
	w("Pods restarting, in order")
	if len(p.Restarts) == 0 {
		w("  none")
	}
	for i, r := range p.Restarts {
		w("  %d. %s: %s (%d pods)", i+1, r.Step, strings.Join(r.Workloads, ", "), len(r.Pods))
		if len(r.CanaryNodes) > 0 {
			w("     canary on %s, then the fast step", strings.Join(r.CanaryNodes, ", "))
		}
		if len(r.Checks) > 0 {
			w("     data-plane checks after the bake, before the fast step (a failed one rolls back):")
		}
		for _, c := range r.Checks {
			w("       %-15s %s", c.Name, c.Plan)
		}
		w("     %s", strings.Join(r.Pods, " "))
	}
	w("")
	b.WriteString(p.VMIs.text())
	w("")
	b.WriteString(p.Estimate.text())
	return b.String()
}
