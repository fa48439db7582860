package kubevirt

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/preflight"
	"github.com/virt-operator/virt-operator/internal/release"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// The pre-pull pods run in the operator's namespace.
// +kubebuilder:rbac:groups="",namespace=kubevirt,resources=pods,verbs=create;delete

// ReasonPreflight is the hold and Upgradeable reason while a check fails or runs.
const ReasonPreflight = "PreflightCheck"

// preflightRecheck is how often a running pre-pull is looked at without an event.
const preflightRecheck = 2 * time.Second

// runPreflight checks an upgrade to the target before its first step (an
// install, or a target already reached, is not checked): the results go to
// status.preflight and the Upgradeable condition; a failing or running check
// not skipped by the CR's annotation holds the rollout.
func (r *Reconciler) runPreflight(ctx context.Context, kv *v1.KubeVirt, cfg *deployid.Config, s *strategy.Strategy) (*v1.RolloutHoldStatus, time.Duration, error) {
	st := &kv.Status
	if st.ObservedDeploymentID == "" || st.ObservedDeploymentID == st.TargetDeploymentID {
		return nil, 0, r.cleanUpPrepull(ctx, "")
	}
	pf := st.Preflight
	if pf == nil || pf.TargetID != st.TargetDeploymentID {
		pf = &v1.PreflightStatus{TargetID: st.TargetDeploymentID}
	}
	switch {
	case len(pf.Checks) == 0:
		checks, err := r.preflightChecks(ctx, kv, cfg, s)
		if err != nil {
			return nil, 0, err
		}
		pf.Checks = checks
	case !finished(pf):
		// Only the image pull can still run: the other checks are not asked
		// again (no version or CRD reads every recheck).
		for i, c := range pf.Checks {
			if c.State == preflight.Running && c.Name == preflight.CheckImages {
				images, err := r.prepull(ctx, kv, cfg, s)
				if err != nil {
					return nil, 0, err
				}
				pf.Checks[i] = images
			}
		}
	}
	st.Preflight = pf
	ok, reason, msg := preflight.Verdict(kv, pf.Checks)
	if ok {
		st.Conditions = setCondition(st.Conditions, v1.KubeVirtCondition{Type: v1.KubeVirtConditionUpgradeable, Status: corev1.ConditionTrue,
			Reason: "PreflightPassed", Message: summary(kv, pf.Checks)}, r.now())
		return nil, 0, r.cleanUpPrepull(ctx, "")
	}
	st.Conditions = setCondition(st.Conditions, v1.KubeVirtCondition{Type: v1.KubeVirtConditionUpgradeable, Status: corev1.ConditionFalse,
		Reason: reason, Message: msg}, r.now())
	requeue := time.Duration(0)
	if !finished(pf) {
		requeue = preflightRecheck
	}
	return &v1.RolloutHoldStatus{Reason: ReasonPreflight, Message: msg}, requeue, nil
}

// finished: every check has a final state.
func finished(pf *v1.PreflightStatus) bool {
	if len(pf.Checks) == 0 {
		return false
	}
	for _, c := range pf.Checks {
		if c.State == preflight.Running {
			return false
		}
	}
	return true
}

func summary(kv *v1.KubeVirt, checks []v1.PreflightCheck) string {
	var parts []string
	for _, c := range checks {
		state := c.State
		if c.State == preflight.Failed && preflight.IsSkipped(kv, c.Name) {
			state = "failed, skipped by " + preflight.SkipAnnotation
		}
		parts = append(parts, c.Name+" "+strings.ToLower(state))
	}
	return strings.Join(parts, ", ")
}

func (r *Reconciler) preflightChecks(ctx context.Context, kv *v1.KubeVirt, cfg *deployid.Config, s *strategy.Strategy) ([]v1.PreflightCheck, error) {
	var checks []v1.PreflightCheck
	rel, known := release.Lookup(cfg.KubeVirtVersion)
	switch {
	case !known:
		checks = append(checks, v1.PreflightCheck{Name: preflight.CheckKubernetes, State: preflight.Passed,
			Message: "release " + cfg.KubeVirtVersion + " is dumped by its own operator; its Kubernetes range is not known here"})
	case r.ServerVersion == nil:
		checks = append(checks, v1.PreflightCheck{Name: preflight.CheckKubernetes, State: preflight.Passed, Message: "the server version is not read"})
	default:
		info, err := r.ServerVersion()
		if err != nil {
			return nil, fmt.Errorf("reading the Kubernetes version: %w", err)
		}
		checks = append(checks, preflight.KubernetesOf(rel, info))
	}
	images, err := r.prepull(ctx, kv, cfg, s)
	if err != nil {
		return nil, err
	}
	checks = append(checks, images)
	reader := r.APIReader // the cache holds CRDs as metadata only
	if reader == nil {
		reader = r.Client
	}
	stored, err := preflight.ReadStoredVersions(ctx, reader, s.CRDs)
	if err != nil {
		return nil, err
	}
	checks = append(checks, preflight.StoredVersions(stored, s.CRDs))
	if known {
		checks = append(checks, preflight.Deprecated(rel, kv))
	}
	return checks, nil
}

// prepull runs one pre-pull pod per node pool with the target's images and
// judges them.
func (r *Reconciler) prepull(ctx context.Context, kv *v1.KubeVirt, cfg *deployid.Config, s *strategy.Strategy) (v1.PreflightCheck, error) {
	nodes := &corev1.NodeList{}
	if err := r.Client.List(ctx, nodes); err != nil {
		return v1.PreflightCheck{}, err
	}
	pools := preflight.Pools(nodes.Items)
	images := targetImages(cfg, s)
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(r.Namespace), client.MatchingLabels{preflight.PrepullLabel: preflight.PrepullValue}); err != nil {
		return v1.PreflightCheck{}, err
	}
	var mine []corev1.Pod
	started := r.Clock.Now()
	for _, p := range pods.Items {
		if p.Annotations["kubevirt.io/preflight-target"] == cfg.ID {
			mine = append(mine, p)
			if p.CreationTimestamp.Time.Before(started) {
				started = p.CreationTimestamp.Time
			}
		}
	}
	if len(mine) == 0 {
		if err := r.cleanUpPrepull(ctx, cfg.ID); err != nil {
			return v1.PreflightCheck{}, err
		}
		for i, node := range pools {
			pod := preflight.PrepullPod(r.Namespace, cfg.ID, node, i, images)
			if err := r.Client.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
				return v1.PreflightCheck{}, fmt.Errorf("creating pre-pull pod on %s: %w", node, err)
			}
		}
	}
	return preflight.Images(mine, len(pools), started, r.Clock.Now()), nil
}

// targetImages are the target's component images and its launcher.
func targetImages(cfg *deployid.Config, s *strategy.Strategy) []string {
	seen := map[string]bool{cfg.Image(deployid.Launcher): true}
	for _, d := range s.Deployments {
		for _, c := range append(d.Spec.Template.Spec.InitContainers, d.Spec.Template.Spec.Containers...) {
			seen[c.Image] = true
		}
	}
	for _, ds := range s.DaemonSets {
		for _, c := range append(ds.Spec.Template.Spec.InitContainers, ds.Spec.Template.Spec.Containers...) {
			seen[c.Image] = true
		}
	}
	out := make([]string, 0, len(seen))
	for img := range seen {
		out = append(out, img)
	}
	sort.Strings(out)
	return out
}

// cleanUpPrepull deletes the pre-pull pods, except those of keepTarget.
func (r *Reconciler) cleanUpPrepull(ctx context.Context, keepTarget string) error {
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(r.Namespace), client.MatchingLabels{preflight.PrepullLabel: preflight.PrepullValue}); err != nil {
		return err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil || (keepTarget != "" && p.Annotations["kubevirt.io/preflight-target"] == keepTarget) {
			continue
		}
		if err := r.Client.Delete(ctx, p); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting pre-pull pod %s: %w", p.Name, err)
		}
	}
	return nil
}
