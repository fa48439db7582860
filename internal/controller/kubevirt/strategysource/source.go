// Package strategysource owns where a deployment's install strategy comes
// from: the install-strategy ConfigMaps in the operator's namespace, which of
// them the operator trusts (package strategy/trust decides; this package
// gathers the evidence and refuses, deleting with a Warning, whatever it
// cannot vouch for), the ceiling every strategy passes before it is used
// (package strategy/ceiling), the writer policy that lets only the strategy
// Job write strategies, the Job that generates a missing or stale strategy
// (created, waited for, retried with backoff, its failures explained), and
// the cache of decoded strategies.
//
// Load is the phase: it returns the target's and the observed deployment's
// trusted strategies and the acceptances status.installStrategies records, or
// an error, and then the caller keeps the previous record: a pass that does
// not finish this phase concludes nothing about trust.
//
// Nothing here writes a strategy ConfigMap: they are written by the Job only
// (the writer policy enforces it where it is in force), and deleted here when
// refused, or by the caller when obsolete.
package strategysource

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/controller/kubevirt/report"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/release"
	"github.com/virt-operator/virt-operator/internal/strategy"
	"github.com/virt-operator/virt-operator/internal/strategy/ceiling"
	"github.com/virt-operator/virt-operator/internal/strategy/dumpjob"
	"github.com/virt-operator/virt-operator/internal/strategy/trust"
)

// Reasons this phase reports.
const (
	// ReasonUntrusted is the Warning of a strategy ConfigMap refused.
	ReasonUntrusted = "UntrustedInstallStrategy"
	// ReasonOverCeiling: a trusted strategy grants more than KubeVirt needs.
	ReasonOverCeiling = "InstallStrategyOverCeiling"
	// ReasonJobFailed: the strategy Job failed and waits to be retried.
	ReasonJobFailed = "InstallStrategyJobFailed"
	// ReasonJobBlocked: the strategy Job cannot run (its pod refused,
	// unschedulable, its image not pulled, its name taken).
	ReasonJobBlocked = "InstallStrategyJobBlocked"
	// ReasonWriterPolicy: the writer policy a delegated release's strategy
	// needs cannot be written.
	ReasonWriterPolicy = "InstallStrategyWriterPolicy"
	// ReasonCorrupt is the Warning of a trusted strategy that cannot be read.
	ReasonCorrupt = "CorruptInstallStrategy"
)

// jobCheckInterval is how often a running strategy Job is looked at while no
// strategy is in force: the Job controller's FailedCreate Events and a pod's
// scheduling change no object the operator watches.
const jobCheckInterval = 2 * time.Second

// Source loads install strategies. Its zero value is not usable: set the
// exported fields.
type Source struct {
	// Client is the manager's client: reads from the cache.
	Client client.Client
	// APIReader reads what the cache may not show yet.
	APIReader client.Reader
	// Namespace is the operator's (and the strategies').
	Namespace string
	// ServiceAccount runs the strategy Job.
	ServiceAccount string

	decoded decodeCache
}

// Input is what Load needs of the pass.
type Input struct {
	// KubeVirt is the CR as read (read-only): its status holds the recorded
	// acceptances and the observed deployment.
	KubeVirt *v1.KubeVirt
	// Target is the target deployment config; nil when the spec gives none.
	Target *deployid.Config
	Now    time.Time
}

// Loaded is one deployment's trusted strategy.
type Loaded struct {
	Config *deployid.Config
	// Strategy is as decoded (shared with the decode cache: never modified).
	Strategy *strategy.Strategy
	// ConfigMap is the strategy's ConfigMap's name; Key its UID and
	// resourceVersion, which change when another ConfigMap takes over.
	ConfigMap, Key string
	// MonitorNamespace is the monitoring namespace it was generated with.
	MonitorNamespace string
}

// Result is what the phase concluded.
type Result struct {
	// Target is the target's strategy; nil while it is generated, or refused.
	Target *Loaded
	// Observed is the observed deployment's, while it differs from the
	// target's; nil otherwise or when none is trusted.
	Observed *Loaded
	// Accepted is status.installStrategies: the acceptances of Target's and
	// Observed's ConfigMaps.
	Accepted []v1.InstallStrategyRef
	// Obsolete are the strategy ConfigMaps the target does not use, to delete
	// once it is rolled out everywhere.
	Obsolete []corev1.ConfigMap
	report.Report
}

// Load finds the target's and the observed deployment's strategies, drives the
// Job that generates a missing or stale one, and refuses every ConfigMap that
// claims either's ID but cannot be vouched for.
func (s *Source) Load(ctx context.Context, in Input) (Result, error) {
	var res Result
	cms, jobs, err := s.List(ctx)
	if err != nil {
		return Result{}, err
	}
	observed := observedConfig(in)
	policySince := s.writerPolicy(ctx, &res, in.Now, in.Target, observed)
	var inForce *corev1.ConfigMap
	if in.Target != nil {
		if inForce, err = s.loadTarget(ctx, in, cms, jobs, policySince, &res); err != nil {
			return Result{}, err
		}
	}
	if observed != nil {
		s.loadObserved(ctx, in, observed, cms, &res)
	}
	res.Obsolete = obsolete(cms, inForce)
	return res, nil
}

// List lists the install-strategy ConfigMaps and Jobs.
func (s *Source) List(ctx context.Context) ([]corev1.ConfigMap, []batchv1.Job, error) {
	cms := &corev1.ConfigMapList{}
	if err := s.Client.List(ctx, cms, client.InNamespace(s.Namespace), client.HasLabels{metadata.InstallStrategyLabel}); err != nil {
		return nil, nil, err
	}
	jobs := &batchv1.JobList{}
	if err := s.Client.List(ctx, jobs, client.InNamespace(s.Namespace), client.MatchingLabels{metadata.AppLabel: dumpjob.AppLabelValue}); err != nil {
		return nil, nil, err
	}
	return cms.Items, jobs.Items, nil
}

// loadTarget vouches for the ConfigMaps of the target's ID, refuses those it
// cannot, drives the strategy Job, and loads the trusted strategy in force. It
// returns the ConfigMap in force.
func (s *Source) loadTarget(ctx context.Context, in Input, cms []corev1.ConfigMap, jobs []batchv1.Job, policySince time.Time, res *Result) (*corev1.ConfigMap, error) {
	cfg := in.Target
	liveNS, err := s.liveMonitorNamespace(ctx, cfg)
	if err != nil {
		return nil, err
	}
	ev := trust.Evidence{ID: cfg.ID, Accepted: in.KubeVirt.Status.InstallStrategies, Jobs: jobs, PolicySince: policySince}
	if builtin(cfg) {
		ev.Rendered = func(cm *corev1.ConfigMap) (bool, error) { return s.matchesRender(cm, cfg, liveNS) }
	}
	var trusted []corev1.ConfigMap
	sources := map[string]string{}
	for _, cm := range claiming(cms, cfg.ID) {
		verdict := trust.Decide(&cm, ev)
		if !verdict.Trusted {
			s.refuse(ctx, res, &cm, verdict.Why)
			continue
		}
		trusted = append(trusted, cm)
		sources[string(cm.UID)] = verdict.Source
	}
	inForce := strategy.FindForID(trusted, cfg.ID)
	fresh := false
	if inForce != nil {
		if decoded, err := s.decode(inForce); err == nil {
			fresh = strategy.MonitorNamespaceOf(decoded) == liveNS
		}
	}
	decision := DecideJobs(JobInputs{ID: cfg.ID, InForce: inForce, Fresh: fresh, Recorded: recorded(in.KubeVirt, inForce), Jobs: jobs, Now: in.Now})
	if err := s.actOnJobs(ctx, in, decision, policySince, res); err != nil {
		return nil, err
	}
	if inForce == nil {
		return nil, nil
	}
	decoded, err := s.decode(inForce)
	if errors.Is(err, strategy.ErrCorrupt) {
		res.Emit(report.Warning, ReasonCorrupt, "Regenerate", fmt.Sprintf("ConfigMap %s is corrupt and is regenerated: %v", inForce.Name, err))
		return nil, client.IgnoreNotFound(s.Client.Delete(ctx, inForce)) // its deletion brings the operator back
	}
	if err != nil {
		return nil, err
	}
	if !s.underCeiling(res, inForce, decoded, cfg) {
		return nil, nil
	}
	res.Target = loaded(cfg, decoded, inForce)
	res.Accepted = append(res.Accepted, acceptance(cfg.ID, inForce, sources[string(inForce.UID)]))
	return inForce, nil
}

// loadObserved loads the strategy of the deployment that last rolled out
// everywhere, while the target differs from it: what runs is repaired from it
// while the rollout is held. Only a ConfigMap the operator can vouch for is
// used; the others are not deleted here (the target's phase refuses those of
// its own ID, and obsolete ones go once the target is rolled out).
func (s *Source) loadObserved(ctx context.Context, in Input, cfg *deployid.Config, cms []corev1.ConfigMap, res *Result) {
	ev := trust.Evidence{ID: cfg.ID, Accepted: in.KubeVirt.Status.InstallStrategies}
	var trusted []corev1.ConfigMap
	sources := map[string]string{}
	for _, cm := range claiming(cms, cfg.ID) {
		if v := trust.Decide(&cm, ev); v.Trusted {
			trusted = append(trusted, cm)
			sources[string(cm.UID)] = v.Source
		}
	}
	cm := strategy.FindForID(trusted, cfg.ID)
	if cm == nil {
		return
	}
	decoded, err := s.decode(cm)
	if err != nil {
		log.FromContext(ctx).Info("the observed deployment's strategy cannot be read", "configMap", cm.Name, "error", err.Error())
		return
	}
	if !s.underCeiling(res, cm, decoded, cfg) {
		return
	}
	res.Observed = loaded(cfg, decoded, cm)
	res.Accepted = append(res.Accepted, acceptance(cfg.ID, cm, sources[string(cm.UID)]))
}

// underCeiling checks a trusted strategy against the ceiling; one over it is
// refused whole (not deleted: regenerated, it would be the same).
func (s *Source) underCeiling(res *Result, cm *corev1.ConfigMap, decoded *strategy.Strategy, cfg *deployid.Config) bool {
	violations := ceiling.Check(decoded, ceiling.Namespaces{Install: cfg.Namespace, Monitoring: cfg.MonitoringNamespaces()})
	if len(violations) == 0 {
		return true
	}
	const shown = 3
	var parts []string
	for i, v := range violations {
		if i == shown {
			parts = append(parts, fmt.Sprintf("and %d more", len(violations)-shown))
			break
		}
		parts = append(parts, v.String())
	}
	res.Fail(report.Problem{Reason: ReasonOverCeiling, Warning: ReasonOverCeiling, Message: fmt.Sprintf(
		"The install strategy of KubeVirt %s (ConfigMap %s) grants more than KubeVirt needs and is not applied: %s",
		cfg.KubeVirtVersion, cm.Name, strings.Join(parts, "; "))})
	return false
}

// refuse deletes a ConfigMap the operator will not apply, named in a Warning
// with why: whoever wrote it, it would run with the operator's rights. A
// failed delete is retried by a later pass; the ConfigMap is not applied
// either way.
func (s *Source) refuse(ctx context.Context, res *Result, cm *corev1.ConfigMap, why string) {
	if err := client.IgnoreNotFound(s.Client.Delete(ctx, cm)); err != nil {
		log.FromContext(ctx).Info("cannot delete an untrusted install strategy", "configMap", cm.Name, "error", err.Error())
		res.RequeueAfter(jobCheckInterval)
	}
	res.Emit(report.Warning, ReasonUntrusted, "Refuse", fmt.Sprintf(
		"Deleted ConfigMap %s, which claims to be the install strategy of deployment %s but is refused (%s): it is never applied",
		cm.Name, cm.Annotations[metadata.InstallStrategyIdentifierAnnotation], why))
}

// matchesRender: cm's strategy is this operator's rendering of cfg's release
// for the live monitoring answer. A ConfigMap that cannot be decoded does not
// match.
func (s *Source) matchesRender(cm *corev1.ConfigMap, cfg *deployid.Config, liveNS string) (bool, error) {
	key := renderKeyOf(cm, cfg, liveNS)
	if same, ok := rendered.get(key); ok {
		return same, nil
	}
	decoded, err := s.decode(cm)
	if err != nil {
		return false, nil //nolint:nilerr // a ConfigMap that cannot be decoded is no rendering of ours: refused, not a failure
	}
	same, err := renderedEqual(decoded, cfg, liveNS)
	if err == nil {
		rendered.put(key, same)
	}
	return same, err
}

// observedConfig is the observed deployment's config while it differs from
// the target; nil when there is none, it is the target, or it cannot be read.
func observedConfig(in Input) *deployid.Config {
	st := in.KubeVirt.Status
	if st.ObservedDeploymentID == "" || (in.Target != nil && st.ObservedDeploymentID == in.Target.ID) {
		return nil
	}
	cfg, err := deployid.Parse(st.ObservedDeploymentConfig)
	if err != nil {
		return nil
	}
	return cfg
}

// builtin: the operator renders cfg's release itself.
func builtin(cfg *deployid.Config) bool {
	_, ok := release.Lookup(cfg.KubeVirtVersion)
	return ok
}

// claiming are the usable strategy ConfigMaps claiming id.
func claiming(cms []corev1.ConfigMap, id string) []corev1.ConfigMap {
	var out []corev1.ConfigMap
	for _, cm := range cms {
		if cm.Annotations[metadata.InstallStrategyIdentifierAnnotation] == id && cm.DeletionTimestamp == nil {
			out = append(out, cm)
		}
	}
	return out
}

// recorded: cm's acceptance is in the status as read.
func recorded(kv *v1.KubeVirt, cm *corev1.ConfigMap) bool {
	if cm == nil {
		return false
	}
	for _, ref := range kv.Status.InstallStrategies {
		if ref.UID == string(cm.UID) && ref.Digest == strategy.Digest(cm) {
			return true
		}
	}
	return false
}

// obsolete are the usable strategy ConfigMaps but the one in force.
func obsolete(cms []corev1.ConfigMap, inForce *corev1.ConfigMap) []corev1.ConfigMap {
	if inForce == nil {
		return nil
	}
	var out []corev1.ConfigMap
	for _, cm := range cms {
		if cm.UID != inForce.UID && cm.DeletionTimestamp == nil {
			out = append(out, cm)
		}
	}
	return out
}

func loaded(cfg *deployid.Config, decoded *strategy.Strategy, cm *corev1.ConfigMap) *Loaded {
	return &Loaded{Config: cfg, Strategy: decoded, ConfigMap: cm.Name, Key: string(cm.UID) + "/" + cm.ResourceVersion,
		MonitorNamespace: strategy.MonitorNamespaceOf(decoded)}
}

func acceptance(id string, cm *corev1.ConfigMap, source string) v1.InstallStrategyRef {
	return v1.InstallStrategyRef{DeploymentID: id, ConfigMap: cm.Name, UID: string(cm.UID), Digest: strategy.Digest(cm), Source: source}
}
