package vmsim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// migrationInput is what the migration controller sees of one migration.
type migrationInput struct {
	Migration *v1.VirtualMachineInstanceMigration
	VMI       *v1.VirtualMachineInstance // nil: no such VMI
	Pods      []corev1.Pod               // the VMI's launcher pods, and the migration's target pod
	Image     string                     // the current launcher image, for the target pod
	Duration  time.Duration              // how long a migration runs
	// Refusing are the nodes whose virt-handler refuses migrations into them
	// (NoMigrateSuffix), with why.
	Refusing map[string]string
	Now      time.Time
}

// migrationPlan is what the migration controller does, in this order: the VMI
// always learns the outcome before the migration reports it, and pods are deleted
// last, so nobody sees a VMI whose launcher pod vanished.
type migrationPlan struct {
	CreatePod *corev1.Pod
	// ConsumeFailure decrements the VMI's FailMigrationsAnnotation and records the
	// migration in FailedMigrationAnnotation, in one update.
	ConsumeFailure bool
	VMIStatus      *v1.VirtualMachineInstanceStatus
	Status         *v1.VirtualMachineInstanceMigrationStatus
	DeletePods     []string
	RequeueAfter   time.Duration
}

// phaseOrder is the order migrations move through; a migration steps one phase at
// a time so every phase is written once.
var phaseOrder = []v1.VirtualMachineInstanceMigrationPhase{
	v1.MigrationPhaseUnset, v1.MigrationPending, v1.MigrationScheduling, v1.MigrationScheduled,
	v1.MigrationPreparingTarget, v1.MigrationTargetReady, v1.MigrationRunning,
}

func phaseIndex(p v1.VirtualMachineInstanceMigrationPhase) int { return slices.Index(phaseOrder, p) }

// migrationFinished: Succeeded or Failed, after which the migration is left alone.
func migrationFinished(p v1.VirtualMachineInstanceMigrationPhase) bool {
	return p == v1.MigrationSucceeded || p == v1.MigrationFailed
}

// planMigration plays virt-controller and virt-handler for a live migration: a
// target pod with the current launcher image, the phases up to Running, and at the
// end time (start + Duration, or once HoldMigrationAnnotation is gone if later)
// success, or failure when the VMI asks for it (FailMigrationsAnnotation). Every decision is derived from the objects, so a
// restarted simulator resumes where the previous one stopped.
func planMigration(in migrationInput) migrationPlan {
	m, vmi := in.Migration, in.VMI
	if migrationFinished(m.Status.Phase) {
		return cleanUpSource(in)
	}
	if m.DeletionTimestamp != nil {
		return planAbort(m.UID, vmi, in.Pods)
	}
	target := findPod(in.Pods, func(p *corev1.Pod) bool { return p.Labels[MigrationJobLabel] == string(m.UID) })
	if vmi == nil {
		return failMigration(in, target, false)
	}
	ms := vmi.Status.MigrationState
	mine := ms != nil && ms.MigrationUID == m.UID
	switch {
	case mine && ms.Completed && ms.Failed:
		return failMigration(in, target, false) // the VMI knows; the migration does not yet
	case mine && ms.Completed:
		return succeedMigration(in, target)
	case vmi.DeletionTimestamp != nil || vmi.Status.Phase != v1.VMIRunning || vmi.Labels[NonMigratableLabel] == "true":
		return failMigration(in, target, false)
	case !mine && ms != nil && !ms.Completed:
		// Another migration of this VMI runs: wait for it, as virt-controller does.
		return withPhase(migrationPlan{}, m, v1.MigrationPending, nil)
	}
	source := activePod(vmi, in.Pods)
	if podGone(source) {
		return failMigration(in, target, false) // the guest is going away
	}
	if target == nil {
		if phaseIndex(m.Status.Phase) >= phaseIndex(v1.MigrationScheduled) {
			return failMigration(in, nil, false) // its target pod was deleted
		}
		p := migrationPlan{CreatePod: targetPod(vmi, m, source, in.Image, in.Now)}
		return withPhase(p, m, v1.MigrationScheduling, nil)
	}
	if podGone(target) {
		return failMigration(in, target, false)
	}
	if target.Spec.NodeName == "" {
		return withPhase(migrationPlan{}, m, v1.MigrationScheduling, nil)
	}
	if !mine {
		// Scheduled: the VMI learns where it goes before anything else happens.
		st := vmi.Status.DeepCopy()
		st.MigrationState = &v1.VirtualMachineInstanceMigrationState{
			MigrationUID:   m.UID,
			SourceNode:     source.Spec.NodeName,
			TargetNode:     target.Spec.NodeName,
			TargetPod:      target.Name,
			StartTimestamp: ptrTime(metav1.NewTime(in.Now)),
		}
		return withPhase(migrationPlan{VMIStatus: st}, m, v1.MigrationScheduled, st.MigrationState)
	}
	if why := in.Refusing[target.Spec.NodeName]; why != "" {
		return refuseMigration(in, target, why)
	}
	if !podRunning(target) {
		return withPhase(migrationPlan{}, m, v1.MigrationScheduled, ms)
	}
	if next := phaseIndex(m.Status.Phase) + 1; next < len(phaseOrder) {
		// One step per reconcile; the status write triggers the next.
		return withPhase(migrationPlan{}, m, phaseOrder[max(next, phaseIndex(v1.MigrationScheduled))], ms)
	}
	end := migrationStart(m, target).Add(in.Duration)
	if wait := end.Sub(in.Now); wait > 0 {
		return withPhase(migrationPlan{RequeueAfter: wait}, m, v1.MigrationRunning, ms)
	}
	if m.Annotations[HoldMigrationAnnotation] == "true" {
		return withPhase(migrationPlan{}, m, v1.MigrationRunning, ms) // the release is an update: a reconcile
	}
	if failing(vmi, m.UID) {
		return failMigration(in, target, vmi.Annotations[FailedMigrationAnnotation] != string(m.UID))
	}
	return succeedMigration(in, target)
}

// migrationStart is when the migration's clock started: when the simulator created
// its target pod, right after the migration appeared (the migration's
// creationTimestamp, to the second, if the pod lacks the annotation).
func migrationStart(m *v1.VirtualMachineInstanceMigration, target *corev1.Pod) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, target.Annotations[MigrationStartAnnotation]); err == nil {
		return t
	}
	return m.CreationTimestamp.Time
}

// failing reports whether the migration must fail: it already took a count of
// FailMigrationsAnnotation, or one is left.
func failing(vmi *v1.VirtualMachineInstance, uid types.UID) bool {
	return vmi.Annotations[FailedMigrationAnnotation] == string(uid) || failuresLeft(vmi) > 0
}

// failuresLeft is the VMI's FailMigrationsAnnotation count (0 if absent or invalid).
func failuresLeft(vmi *v1.VirtualMachineInstance) int {
	n, err := strconv.Atoi(vmi.Annotations[FailMigrationsAnnotation])
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// consumeFailure is the VMI's annotations after a failure was taken by uid.
func consumeFailure(annotations map[string]string, uid types.UID) map[string]string {
	out := make(map[string]string, len(annotations)+1)
	for k, v := range annotations {
		out[k] = v
	}
	n, _ := strconv.Atoi(out[FailMigrationsAnnotation])
	if n <= 1 {
		delete(out, FailMigrationsAnnotation)
	} else {
		out[FailMigrationsAnnotation] = strconv.Itoa(n - 1)
	}
	out[FailedMigrationAnnotation] = string(uid)
	return out
}

// succeedMigration moves the VMI to the target pod, then marks the migration
// Succeeded, then deletes the source pod.
func succeedMigration(in migrationInput, target *corev1.Pod) migrationPlan {
	m, vmi := in.Migration, in.VMI
	st := vmi.Status.DeepCopy()
	if ms := st.MigrationState; !ms.Completed {
		ms.Completed = true
		ms.EndTimestamp = ptrTime(metav1.NewTime(in.Now))
		st.NodeName = target.Spec.NodeName
		st.LauncherContainerImageVersion = computeImage(target)
		st.ActivePods = map[types.UID]string{target.UID: target.Spec.NodeName}
	}
	p := migrationPlan{VMIStatus: st}
	if equality.Semantic.DeepEqual(&vmi.Status, st) {
		p.VMIStatus = nil
	}
	p = withPhase(p, m, v1.MigrationSucceeded, st.MigrationState)
	if target != nil {
		if source := target.Annotations[SourcePodAnnotation]; source != "" && findPod(in.Pods, byName(source)) != nil {
			p.DeletePods = []string{source}
		}
	}
	return p
}

// failMigration marks the VMI's migration state failed (when it is this
// migration's), takes a count of FailMigrationsAnnotation when consume is set (a
// failure the VMI asked for), marks the migration Failed and deletes its target pod.
func failMigration(in migrationInput, target *corev1.Pod, consume bool) migrationPlan {
	m, vmi := in.Migration, in.VMI
	p := migrationPlan{ConsumeFailure: consume}
	var ms *v1.VirtualMachineInstanceMigrationState
	if vmi != nil && vmi.Status.MigrationState != nil && vmi.Status.MigrationState.MigrationUID == m.UID {
		st := vmi.Status.DeepCopy()
		ms = st.MigrationState
		if !ms.Completed {
			ms.Completed, ms.Failed = true, true
			ms.EndTimestamp = ptrTime(metav1.NewTime(in.Now))
			p.VMIStatus = st
		}
	}
	p = withPhase(p, m, v1.MigrationFailed, ms)
	if target != nil && target.DeletionTimestamp == nil && (vmi == nil || !isActive(vmi, target)) {
		p.DeletePods = []string{target.Name}
	}
	return p
}

// refuseMigration fails a migration its target node's virt-handler refuses,
// saying why in both migration states.
func refuseMigration(in migrationInput, target *corev1.Pod, why string) migrationPlan {
	p := failMigration(in, target, false)
	for _, st := range []*v1.VirtualMachineInstanceMigrationState{vmiState(p.VMIStatus), migrationState(p.Status)} {
		if st != nil {
			st.FailureReason = why
		}
	}
	return p
}

func vmiState(st *v1.VirtualMachineInstanceStatus) *v1.VirtualMachineInstanceMigrationState {
	if st == nil {
		return nil
	}
	return st.MigrationState
}

func migrationState(st *v1.VirtualMachineInstanceMigrationStatus) *v1.VirtualMachineInstanceMigrationState {
	if st == nil {
		return nil
	}
	return st.MigrationState
}

// RefusingNodes are the nodes whose virt-handler pod (not terminating) runs
// an image tagged NoMigrateSuffix, with why their migrations fail.
func RefusingNodes(handlers []corev1.Pod) map[string]string {
	out := map[string]string{}
	for i := range handlers {
		pod := &handlers[i]
		if pod.DeletionTimestamp != nil || pod.Spec.NodeName == "" || len(pod.Spec.Containers) == 0 {
			continue
		}
		if img := pod.Spec.Containers[0].Image; strings.HasSuffix(img, NoMigrateSuffix) {
			out[pod.Spec.NodeName] = fmt.Sprintf("virt-handler on node %s (%s) refuses migrations into its node", pod.Spec.NodeName, img)
		}
	}
	return out
}

// cleanUpSource finishes a Succeeded migration whose source pod outlived it (the
// simulator stopped between the two writes); otherwise a finished migration is left
// alone.
func cleanUpSource(in migrationInput) migrationPlan {
	m, vmi := in.Migration, in.VMI
	if m.Status.Phase != v1.MigrationSucceeded || vmi == nil {
		return migrationPlan{}
	}
	target := findPod(in.Pods, func(p *corev1.Pod) bool { return p.Labels[MigrationJobLabel] == string(m.UID) })
	if target == nil || !isActive(vmi, target) {
		return migrationPlan{}
	}
	source := findPod(in.Pods, byName(target.Annotations[SourcePodAnnotation]))
	if source == nil || source.DeletionTimestamp != nil || isActive(vmi, source) {
		return migrationPlan{}
	}
	return migrationPlan{DeletePods: []string{source.Name}}
}

// planAbort undoes a migration deleted before it finished: its target pod goes
// (unless the VMI already runs in it) and the VMI forgets the unfinished migration.
// pods are the target pods labelled with the migration's UID.
func planAbort(uid types.UID, vmi *v1.VirtualMachineInstance, pods []corev1.Pod) migrationPlan {
	var p migrationPlan
	for i := range pods {
		pod := &pods[i]
		if pod.Labels[MigrationJobLabel] != string(uid) || pod.DeletionTimestamp != nil {
			continue
		}
		if vmi != nil && isActive(vmi, pod) {
			continue
		}
		p.DeletePods = append(p.DeletePods, pod.Name)
	}
	if vmi != nil && vmi.Status.MigrationState != nil && vmi.Status.MigrationState.MigrationUID == uid && !vmi.Status.MigrationState.Completed {
		st := vmi.Status.DeepCopy()
		st.MigrationState = nil
		p.VMIStatus = st
	}
	return p
}

// withPhase sets p.Status to the migration's status with phase and migration state
// (nil keeps the current state) unless that is what it already has. A finished
// phase is never stepped back.
func withPhase(p migrationPlan, m *v1.VirtualMachineInstanceMigration, phase v1.VirtualMachineInstanceMigrationPhase, ms *v1.VirtualMachineInstanceMigrationState) migrationPlan {
	st := m.Status.DeepCopy()
	if !migrationFinished(phase) && phaseIndex(st.Phase) > phaseIndex(phase) {
		phase = st.Phase // never backwards: a stale pod cache must not undo progress
	}
	st.Phase = phase
	if ms != nil {
		st.MigrationState = ms.DeepCopy()
	}
	if !equality.Semantic.DeepEqual(&m.Status, st) {
		p.Status = st
	}
	return p
}

func isActive(vmi *v1.VirtualMachineInstance, pod *corev1.Pod) bool {
	_, ok := vmi.Status.ActivePods[pod.UID]
	return ok
}

func byName(name string) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool { return name != "" && p.Name == name }
}

func ptrTime(t metav1.Time) *metav1.Time { return &t }
