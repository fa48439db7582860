package kubevirt

import (
	"bytes"
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/release"
	"github.com/virt-operator/virt-operator/internal/strategy"
	"github.com/virt-operator/virt-operator/internal/strategy/generate"
)

// How a strategy ConfigMap was accepted (status.installStrategies[].source).
const (
	// TrustRendered: its content is this operator's own rendering of a release
	// it knows, for the ID's config.
	TrustRendered = "Rendered"
	// TrustJob: the strategy Job the operator started for the ID wrote it (it
	// was created while that Job was there, after the Job).
	TrustJob = "Job"
)

// ReasonUntrustedStrategy is the Warning of a strategy ConfigMap refused.
const ReasonUntrustedStrategy = "UntrustedInstallStrategy"

// An install strategy is applied with the operator's rights, which include
// binding roles to every authenticated user; a ConfigMap in the operator's
// namespace is something many can write. So a strategy ConfigMap is applied only
// once the operator has accepted it for its deployment ID (trustOf), and the
// acceptance is recorded in status.installStrategies (UID and content digest),
// which only the operator (and cluster admins) can write: an edit of an
// accepted ConfigMap, or another ConfigMap claiming the same ID, is refused.

// trustOf says whether cm, which claims deployment id, may be applied, and on
// what grounds: an acceptance recorded in status; for a release this operator
// renders itself, equality with its own rendering (matchesRender, nil for
// other releases); for a release its own operator renders, the strategy Job
// this operator started for id, which must be there and older than cm.
func trustOf(cm *corev1.ConfigMap, id string, accepted []v1.InstallStrategyRef, jobs []batchv1.Job, matchesRender func() (bool, error)) (string, bool, error) {
	for _, ref := range accepted {
		if ref.DeploymentID == id && ref.UID == string(cm.UID) && ref.Digest == strategy.Digest(cm) {
			return ref.Source, true, nil
		}
	}
	if matchesRender != nil {
		ok, err := matchesRender()
		return TrustRendered, ok, err
	}
	for i := range jobs {
		job := &jobs[i]
		if job.Annotations[metadata.InstallStrategyIdentifierAnnotation] == id && job.Name == StrategyJobName(id, Attempt(job)) &&
			!cm.CreationTimestamp.Before(&job.CreationTimestamp) {
			return TrustJob, true, nil
		}
	}
	return "", false, nil
}

// trustedStrategies splits the strategy ConfigMaps claiming id into those
// that may be applied (with their acceptance) and those refused; ConfigMaps
// of other IDs are left out of both.
func (r *Reconciler) trustedStrategies(s *scope, id string, cfg *deployid.Config, jobs []batchv1.Job) (trusted []corev1.ConfigMap, refs []v1.InstallStrategyRef, refused []corev1.ConfigMap, err error) {
	for _, cm := range s.strategies {
		if cm.Annotations[metadata.InstallStrategyIdentifierAnnotation] != id || cm.DeletionTimestamp != nil {
			continue
		}
		var render func() (bool, error)
		if _, builtin := release.Lookup(cfg.KubeVirtVersion); builtin {
			render = func() (bool, error) { return r.matchesRender(&cm, cfg) }
		}
		source, ok, err := trustOf(&cm, id, s.kv.Status.InstallStrategies, jobs, render)
		if err != nil {
			return nil, nil, nil, err
		}
		if !ok {
			refused = append(refused, cm)
			continue
		}
		trusted = append(trusted, cm)
		refs = append(refs, v1.InstallStrategyRef{DeploymentID: id, ConfigMap: cm.Name, UID: string(cm.UID), Digest: strategy.Digest(&cm), Source: source})
	}
	return trusted, refs, refused, nil
}

// matchesRender: cm's strategy is this operator's rendering of cfg's release
// (with the monitoring namespace cm was generated with). A ConfigMap that
// cannot be decoded does not match.
func (r *Reconciler) matchesRender(cm *corev1.ConfigMap, cfg *deployid.Config) (bool, error) {
	decoded, err := r.decode(cm)
	if err != nil {
		return false, nil //nolint:nilerr // a ConfigMap that cannot be decoded is no rendering of ours: refused, not a failure
	}
	rendered, err := generate.Generate(generate.Input{Config: cfg, MonitorNamespace: strategy.MonitorNamespaceOf(decoded)})
	if err != nil {
		return false, err
	}
	want, err := strategy.Manifests(rendered)
	if err != nil {
		return false, err
	}
	got, err := strategy.Manifests(decoded)
	if err != nil {
		return false, err
	}
	return bytes.Equal(want, got), nil
}

// refuse deletes strategy ConfigMaps the operator will not apply, each named
// in a Warning: whoever wrote it, it would run with the operator's rights.
func (r *Reconciler) refuse(ctx context.Context, s *scope, refused []corev1.ConfigMap) error {
	for i := range refused {
		cm := &refused[i]
		if err := client.IgnoreNotFound(r.Client.Delete(ctx, cm)); err != nil {
			return fmt.Errorf("deleting untrusted install strategy %s: %w", cm.Name, err)
		}
		s.emit(eventWarning, ReasonUntrustedStrategy, "Refuse", fmt.Sprintf(
			"Deleted ConfigMap %s, which claims to be the install strategy of deployment %s but is neither this operator's rendering of that release nor written by the strategy Job it started: it is never applied",
			cm.Name, cm.Annotations[metadata.InstallStrategyIdentifierAnnotation]))
	}
	return nil
}
