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
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/preflight"
	"github.com/virt-operator/virt-operator/internal/release"
	"github.com/virt-operator/virt-operator/internal/storedversions"
	"github.com/virt-operator/virt-operator/internal/strategy"
	"github.com/virt-operator/virt-operator/internal/workloads"
)

// The pre-pull pods run in the operator's namespace.
// +kubebuilder:rbac:groups="",namespace=kubevirt,resources=pods,verbs=create;delete

// ReasonPreflight is the hold and Upgradeable reason while a check fails or runs.
const ReasonPreflight = "PreflightCheck"

// preflightRecheck is how often a running pre-pull is looked at without an event.
const preflightRecheck = 2 * time.Second

// runPreflight checks an upgrade to the target before its first step (an
// install, or a target already reached, is not checked; a rollout held by
// spec.paused or the windows is checked once it may go on): the verdict goes to
// s.preflight (status.preflight and the Upgradeable condition), and a failing
// or running check not skipped by the CR's annotation holds the rollout.
func (r *Reconciler) runPreflight(ctx context.Context, s *scope) error {
	if s.target == nil {
		return nil
	}
	observed := s.kv.Status.ObservedDeploymentID
	if observed == "" || observed == s.cfg.ID || s.takeover.sameRelease(s.cfg) {
		return r.cleanUpPrepull(ctx, "") // nothing to check: an install, the target reached, or the same release taken over
	}
	if s.held() {
		return nil
	}
	pf := s.kv.Status.Preflight.DeepCopy()
	if pf == nil || pf.TargetID != s.cfg.ID {
		pf = &v1.PreflightStatus{TargetID: s.cfg.ID}
	}
	switch {
	case len(pf.Checks) == 0:
		checks, err := r.preflightChecks(ctx, s.kv, s.cfg, s.target.strategy)
		if err != nil {
			return err
		}
		pf.Checks = checks
	case !finished(pf):
		// Only the image pull can still run: the other checks are not asked
		// again (no version or CRD reads every recheck).
		for i, c := range pf.Checks {
			if c.State == preflight.Running && c.Name == preflight.CheckImages {
				images, err := r.prepull(ctx, s.cfg, s.target.strategy, s.now)
				if err != nil {
					return err
				}
				pf.Checks[i] = images
			}
		}
	}
	ok, reason, msg := preflight.Verdict(s.kv, pf.Checks)
	s.preflight = &preflightResult{targetID: pf.TargetID, checks: pf.Checks, passed: ok, reason: reason, message: msg, summary: summary(s.kv, pf.Checks)}
	if ok {
		return r.cleanUpPrepull(ctx, "")
	}
	s.hold = preflightHold(msg)
	if !finished(pf) {
		s.requeueAfter(preflightRecheck)
	}
	return nil
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
	checks := []v1.PreflightCheck{preflight.UpgradePath(kv.Status.ObservedKubeVirtVersion, cfg.KubeVirtVersion)}
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
	images, err := r.prepull(ctx, cfg, s, r.Clock.Now())
	if err != nil {
		return nil, err
	}
	checks = append(checks, images)
	reader := r.APIReader // the cache holds CRDs as metadata only
	if reader == nil {
		reader = r.Client
	}
	decisions, err := storedversions.Read(ctx, reader, s.CRDs)
	if err != nil {
		return nil, err
	}
	checks = append(checks, preflight.StoredVersions(decisions))
	removed, counts, err := workloads.InRemovedCRDs(ctx, r.Client, r.APIReaderOrClient(), s.CRDs)
	if err != nil {
		return nil, err
	}
	checks = append(checks, preflight.RemovedCRDs(apply.DataOfEach(removed, counts.For, apply.DeleteRetainedNames(kv.Annotations))))
	if known {
		checks = append(checks, preflight.Deprecated(rel, kv))
	} else {
		// The RBAC is generated for the builtin releases' CRDs; a delegated
		// release's new kinds are not granted.
		checks = append(checks, preflight.CountableCRDs(workloads.Unlistable(ctx, r.Client, s.CRDs)))
	}
	return checks, nil
}

// prepull runs one pre-pull pod per node pool with the target's images and
// judges them.
func (r *Reconciler) prepull(ctx context.Context, cfg *deployid.Config, s *strategy.Strategy, now time.Time) (v1.PreflightCheck, error) {
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
	started := now
	for _, p := range pods.Items {
		if p.Annotations[preflight.TargetAnnotation] == cfg.ID {
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
	return preflight.Images(mine, len(pools), started, now), nil
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
		if p.DeletionTimestamp != nil || (keepTarget != "" && p.Annotations[preflight.TargetAnnotation] == keepTarget) {
			continue
		}
		if err := r.Client.Delete(ctx, p); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting pre-pull pod %s: %w", p.Name, err)
		}
	}
	return nil
}
