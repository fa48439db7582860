package workloadupdate

import (
	"encoding/json"
	"slices"
	"sync"
	"time"
	"unique"
	"weak"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// The compact forms: what the planner and the virt-handler rollout read of a
// VMI and of a migration, and nothing else, in a few hundred bytes. The
// operator keeps every VMI and migration of the cluster in memory in these
// forms (internal/workloadcache converts each object as it arrives), so its
// memory grows by about 300 bytes per VMI, not by the 2 to 3 KB a decoded
// object costs: a VMI's name, UID and state, the strings most VMIs share
// (namespace, node, launcher image, phase) interned, its placement shared
// with every VMI of the same placement, no labels, annotations or conditions
// but the few the decisions read.
//
// A compact value is read-only once made: the cache hands the same pointer to
// every reader.

// VMI is what the updater reads of a VirtualMachineInstance.
type VMI struct {
	Namespace, Name string
	UID             types.UID
	// Created is the VMI's creationTimestamp, in Unix seconds: the backoff
	// counts failed migrations since then.
	Created int64
	Phase   v1.VirtualMachineInstancePhase
	// Node is status.nodeName; Launcher status.launcherContainerImageVersion.
	Node, Launcher string
	// Evacuation is status.evacuationNodeName.
	Evacuation string
	// Choice is the value of ChoiceKey, from the label, else the annotation
	// (HasChoice says whether either is set).
	Choice string
	Flags  VMIFlags
	// Migration is status.migrationState; nil when it has none.
	Migration *MigrationState
	// Placement is what of the spec decides where it may run; nil when the
	// spec sets none or cannot be read (SpecUnreadable).
	Placement *Placement
	// ActivePods are the launcher pods status.activePods lists (an eviction
	// prefers them).
	ActivePods []types.UID
}

// VMIFlags are a VMI's yes/no facts.
type VMIFlags uint16

const (
	// Deleting: the VMI has a deletionTimestamp.
	Deleting VMIFlags = 1 << iota
	// LiveMigratable: condition LiveMigratable is True.
	LiveMigratable
	// HotVCPUChange: condition HotVCPUChange is present, whatever its status.
	HotVCPUChange
	// HotMemoryChange: condition HotMemoryChange is True.
	HotMemoryChange
	// MigrationRequired: condition MigrationRequired is True.
	MigrationRequired
	// VolumesChange: condition VolumesChange is True.
	VolumesChange
	// TestAbort: annotation TestAbortionAnnotation is present.
	TestAbort
	// HasChoice: ChoiceKey is set, as a label or an annotation.
	HasChoice
	// SpecUnreadable: the spec's placement cannot be read; the target
	// checks take the VMI as fitting anywhere (the migration itself will say
	// what is wrong with it).
	SpecUnreadable
)

// Has reports whether every flag of f is set.
func (v *VMI) Has(f VMIFlags) bool { return v.Flags&f == f }

// Key is the VMI's key.
func (v *VMI) Key() Key { return Key{v.Namespace, v.Name} }

// MigrationState is what the decisions read of a migration state, a VMI's
// or a migration's.
type MigrationState struct {
	// UID is the migration's it describes.
	UID types.UID
	// Source and Target are the nodes.
	Source, Target string
	// Started and Ended are Unix seconds; 0 when unset.
	Started, Ended           int64
	Completed, Failed        bool
	AbortRequested           bool
	TargetPod, FailureReason string
}

// Migration is what the updater and the virt-handler rollout read of a
// VirtualMachineInstanceMigration.
type Migration struct {
	Namespace, Name string
	UID             types.UID
	// VMI is spec.vmiName.
	VMI   string
	Phase v1.VirtualMachineInstanceMigrationPhase
	// Created is the creationTimestamp, in Unix seconds.
	Created  int64
	Deleting bool
	// WorkloadUpdate: the updater created it (WorkloadUpdateMigrationAnnotation).
	WorkloadUpdate bool
	// Probe is the value of HandlerProbeLabel (IsProbe says whether it is
	// set): the virt-handler canary's migration probe created it.
	Probe   string
	IsProbe bool
	// Direction is the probe's ProbeDirectionAnnotation.
	Direction string
	// FailedAt is when it failed (failureTime), in Unix nanoseconds; 0 unless
	// it is Failed.
	FailedAt int64
	// State is status.migrationState; nil when it has none.
	State *MigrationState
}

// Key is the key of the VMI the migration targets.
func (m *Migration) Key() Key { return Key{m.Namespace, m.VMI} }

// Finished reports whether the migration reached Succeeded or Failed.
func (m *Migration) Finished() bool {
	return m.Phase == v1.MigrationSucceeded || m.Phase == v1.MigrationFailed
}

// ProbeDirectionAnnotation is the direction of a probe migration
// (internal/rollout writes it under this name; a test pins the two).
const ProbeDirectionAnnotation = "kubevirt.io/virt-operator-handler-probe-direction"

// intern returns the one copy of s every compact form shares: the strings
// thousands of VMIs hold alike (a namespace, a node's name, the launcher
// image, a phase) are kept once.
func intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}

// CompactVMI is vmi's compact form.
func CompactVMI(vmi *v1.VirtualMachineInstance) *VMI {
	st := &vmi.Status
	var err error
	out := &VMI{
		Namespace: intern(vmi.Namespace), Name: vmi.Name, UID: vmi.UID, Created: vmi.CreationTimestamp.Unix(),
		Phase: v1.VirtualMachineInstancePhase(intern(string(st.Phase))), Node: intern(st.NodeName),
		Launcher: intern(st.LauncherContainerImageVersion), Evacuation: intern(st.EvacuationNodeName),
		Migration: compactState(st.MigrationState),
	}
	if out.Placement, err = sharedPlacement(vmi.Spec); err != nil {
		out.Flags |= SpecUnreadable
	}
	if vmi.DeletionTimestamp != nil {
		out.Flags |= Deleting
	}
	if raw, ok := vmi.Labels[ChoiceKey]; ok {
		out.Choice, out.Flags = intern(raw), out.Flags|HasChoice
	} else if raw, ok := vmi.Annotations[ChoiceKey]; ok {
		out.Choice, out.Flags = intern(raw), out.Flags|HasChoice
	}
	if _, ok := vmi.Annotations[TestAbortionAnnotation]; ok {
		out.Flags |= TestAbort
	}
	for _, c := range st.Conditions {
		out.Flags |= conditionFlag(c)
	}
	for uid := range st.ActivePods {
		out.ActivePods = append(out.ActivePods, uid)
	}
	slices.Sort(out.ActivePods) // one order, so two compact forms compare
	return out
}

// conditionFlag is the flag a condition sets, as the first condition of its
// type decides (isTrue reads the first).
func conditionFlag(c v1.VirtualMachineInstanceCondition) VMIFlags {
	isTrue := c.Status == corev1.ConditionTrue
	switch c.Type {
	case VMIConditionHotVCPUChange:
		return HotVCPUChange
	case v1.VMIConditionLiveMigratable:
		if isTrue {
			return LiveMigratable
		}
	case VMIConditionHotMemoryChange:
		if isTrue {
			return HotMemoryChange
		}
	case v1.VMIConditionMigrationRequired:
		if isTrue {
			return MigrationRequired
		}
	case v1.VMIConditionVolumesChange:
		if isTrue {
			return VolumesChange
		}
	}
	return 0
}

// CompactMigration is m's compact form.
func CompactMigration(m *v1.VirtualMachineInstanceMigration) *Migration {
	out := &Migration{
		Namespace: intern(m.Namespace), Name: m.Name, UID: m.UID, VMI: m.Spec.VMIName,
		Phase: v1.VirtualMachineInstanceMigrationPhase(intern(string(m.Status.Phase))), Created: m.CreationTimestamp.Unix(),
		Deleting: m.DeletionTimestamp != nil, WorkloadUpdate: IsWorkloadUpdate(m), State: compactState(m.Status.MigrationState),
	}
	out.Probe, out.IsProbe = m.Labels[HandlerProbeLabel]
	if out.IsProbe {
		out.Direction = m.Annotations[ProbeDirectionAnnotation]
	}
	if m.Status.Phase == v1.MigrationFailed {
		out.FailedAt = failureTime(m).UnixNano()
	}
	return out
}

func compactState(s *v1.VirtualMachineInstanceMigrationState) *MigrationState {
	if s == nil {
		return nil
	}
	return &MigrationState{UID: s.MigrationUID, Source: intern(s.SourceNode), Target: intern(s.TargetNode),
		Started: unixOrZero(s.StartTimestamp), Ended: unixOrZero(s.EndTimestamp), Completed: s.Completed, Failed: s.Failed,
		AbortRequested: s.AbortRequested, TargetPod: s.TargetPod, FailureReason: s.FailureReason}
}

// unixOrZero is t in Unix seconds, 0 for none (a set zero time is not 0).
func unixOrZero(t *metav1.Time) int64 {
	if t == nil {
		return 0
	}
	return t.Unix()
}

func timeOrNil(unix int64) *metav1.Time {
	if unix == 0 {
		return nil
	}
	t := metav1.Unix(unix, 0)
	return &t
}

// placements holds one copy of each distinct placement: the VMIs of one
// template share theirs.
var placements = &placementTable{byJSON: map[string]weak.Pointer[Placement]{}}

type placementTable struct {
	mu     sync.Mutex
	byJSON map[string]weak.Pointer[Placement]
	live   int // entries after the last clean-up
}

// share returns the placement already held for key, else p, held from now on.
// The table holds them weakly: a placement no VMI holds any more goes, and
// its entry with the next clean-up (when the table has doubled since the last).
func (t *placementTable) share(key string, p *Placement) *Placement {
	t.mu.Lock()
	defer t.mu.Unlock()
	if held := t.byJSON[key].Value(); held != nil {
		return held
	}
	if len(t.byJSON) >= 2*t.live && len(t.byJSON) >= 64 {
		for k, w := range t.byJSON {
			if w.Value() == nil {
				delete(t.byJSON, k)
			}
		}
		t.live = len(t.byJSON)
	}
	t.byJSON[key] = weak.Make(p)
	return p
}

// sharedPlacement is spec's placement, shared with every VMI of the same
// placement; nil when it has none, or cannot be read (the error).
func sharedPlacement(spec runtime.RawExtension) (*Placement, error) {
	p, err := PlacementOf(spec)
	if err != nil {
		return nil, err
	}
	if len(p.NodeSelector) == 0 && p.Affinity == nil && len(p.Tolerations) == 0 {
		return nil, nil
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	return placements.share(string(raw), &p), nil
}

// The typed forms again, for the virt-handler rollout's data-plane checks
// (internal/rollout reads the API types): what the compact form keeps, in
// the fields it came from.

// Expand is v as an API object holding what v keeps.
func (v *VMI) Expand() v1.VirtualMachineInstance {
	out := v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: v.Namespace, Name: v.Name, UID: v.UID, CreationTimestamp: metav1.Unix(v.Created, 0)},
		Status: v1.VirtualMachineInstanceStatus{Phase: v.Phase, NodeName: v.Node, LauncherContainerImageVersion: v.Launcher,
			EvacuationNodeName: v.Evacuation, MigrationState: v.Migration.expand()},
	}
	if v.Has(Deleting) {
		out.DeletionTimestamp = &metav1.Time{Time: time.Unix(v.Created, 0)}
	}
	if v.Has(HasChoice) {
		out.Annotations = map[string]string{ChoiceKey: v.Choice}
	}
	if v.Has(TestAbort) {
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[TestAbortionAnnotation] = ""
	}
	for _, c := range []struct {
		flag VMIFlags
		typ  v1.VirtualMachineInstanceConditionType
	}{{LiveMigratable, v1.VMIConditionLiveMigratable}, {HotVCPUChange, VMIConditionHotVCPUChange}, {HotMemoryChange, VMIConditionHotMemoryChange},
		{MigrationRequired, v1.VMIConditionMigrationRequired}, {VolumesChange, v1.VMIConditionVolumesChange}} {
		if v.Has(c.flag) {
			out.Status.Conditions = append(out.Status.Conditions, v1.VirtualMachineInstanceCondition{Type: c.typ, Status: corev1.ConditionTrue})
		}
	}
	switch {
	case v.Has(SpecUnreadable):
		out.Spec = runtime.RawExtension{Raw: []byte(`{"nodeSelector":"unreadable"}`)}
	case v.Placement != nil:
		if raw, err := json.Marshal(v.Placement); err == nil {
			out.Spec = runtime.RawExtension{Raw: raw}
		}
	}
	if len(v.ActivePods) > 0 {
		out.Status.ActivePods = map[types.UID]string{}
		for _, uid := range v.ActivePods {
			out.Status.ActivePods[uid] = v.Node
		}
	}
	return out
}

// Expand is m as an API object holding what m keeps.
func (m *Migration) Expand() v1.VirtualMachineInstanceMigration {
	out := v1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name, UID: m.UID, CreationTimestamp: metav1.Unix(m.Created, 0)},
		Spec:       v1.VirtualMachineInstanceMigrationSpec{VMIName: m.VMI},
		Status:     v1.VirtualMachineInstanceMigrationStatus{Phase: m.Phase, MigrationState: m.State.expand()},
	}
	if m.Deleting {
		out.DeletionTimestamp = &metav1.Time{Time: time.Unix(m.Created, 0)}
	}
	if m.WorkloadUpdate {
		out.Annotations = map[string]string{WorkloadUpdateMigrationAnnotation: ""}
	}
	if m.IsProbe {
		out.Labels = map[string]string{HandlerProbeLabel: m.Probe}
		if m.Direction != "" {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[ProbeDirectionAnnotation] = m.Direction
		}
	}
	if m.FailedAt != 0 {
		// failureTime adds a second to the time it reads.
		at := metav1.NewTime(time.Unix(0, m.FailedAt).Add(-time.Second))
		out.Status.PhaseTransitionTimestamps = []v1.MigrationPhaseTransitionTimestamp{{Phase: v1.MigrationFailed, PhaseTransitionTimestamp: at}}
	}
	return out
}

func (s *MigrationState) expand() *v1.VirtualMachineInstanceMigrationState {
	if s == nil {
		return nil
	}
	return &v1.VirtualMachineInstanceMigrationState{MigrationUID: s.UID, SourceNode: s.Source, TargetNode: s.Target,
		StartTimestamp: timeOrNil(s.Started), EndTimestamp: timeOrNil(s.Ended), Completed: s.Completed, Failed: s.Failed,
		AbortRequested: s.AbortRequested, TargetPod: s.TargetPod, FailureReason: s.FailureReason}
}
