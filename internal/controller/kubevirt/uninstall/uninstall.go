// Package uninstall is the KubeVirt controller's delete path: held while user
// objects exist, or may exist, under BlockUninstallIfWorkloadsExist (the
// default) for a Deployed KubeVirt; otherwise every object the operator
// manages is deleted in upstream's order, the CRDs first (their instances go
// while the components still run), then everything else, and last the
// install-strategy ConfigMaps, Jobs and writer policy. The admission webhook
// refuses such a delete up front; this guard holds one that got past it (the
// webhook was not yet installed, or not reachable): the deletionTimestamp is
// set by then, so the uninstall can no longer be cancelled, only held.
//
// Step is one pass; the controller turns its Result into status and removes
// the finalizer once it is Done.
package uninstall

import (
	"context"
	"fmt"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/controller/kubevirt/report"
	"github.com/virt-operator/virt-operator/internal/controller/kubevirt/strategysource"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/workloads"
)

// A held uninstall looks again after the time it has been held so far, from
// PollMin up to BlockedPollMax: one a day old costs four lists of one item
// each per BlockedPollMax, not per second (the VMIs it waits for are not
// watched). A deletion under way looks again every PollMin: it lasts seconds,
// lists only the strategy's kinds where the strategy wrote them, and not every
// object it waits for sends an event (the ServiceAccounts are not watched).
const (
	PollMin        = time.Second
	BlockedPollMax = 30 * time.Second
)

// Uninstaller deletes what the operator manages.
type Uninstaller struct {
	// Client is the manager's client; Live reads what the cache may not
	// show (the objects being deleted).
	Client client.Client
	Live   client.Reader
	// Namespace is the operator's.
	Namespace string
	// Strategies are the install strategies (what was accepted says what to
	// list, and where).
	Strategies *strategysource.Source
	Clock      clock.PassiveClock
}

// Input is what a pass knows of the uninstall.
type Input struct {
	KubeVirt *v1.KubeVirt
	Now      time.Time
	// BlockedSince is when the uninstall was first held (zero: it is not).
	BlockedSince time.Time
}

// Result is where the uninstall stands after a pass.
type Result struct {
	// Blocked is why the uninstall is held; "" when it is not.
	Blocked string
	// Remaining describes what is still being deleted; "" when it has just
	// started.
	Remaining string
	// Failed is the error of this pass's deletions; "" when none failed.
	Failed string
	// Done: every object is gone and the finalizer can go.
	Done bool
	report.Report
}

// Step runs one pass of the uninstall.
func (u *Uninstaller) Step(ctx context.Context, in Input) (Result, error) {
	var res Result
	kv := in.KubeVirt
	// The count decides only a Deployed KubeVirt's uninstall under
	// BlockUninstallIfWorkloadsExist (as the webhook's): otherwise it is not
	// made, so a kind the operator cannot count blocks no other uninstall. A
	// deletion under way is Deleting, and goes on.
	if kv.Spec.UninstallStrategy != v1.UninstallStrategyRemoveWorkloads && kv.Status.Phase == v1.KubeVirtPhaseDeployed {
		counts, err := workloads.CountManaged(ctx, u.Client, u.Live)
		if err != nil {
			return res, err
		}
		if !counts.None() {
			res.Blocked = heldMessage(counts)
			since := in.BlockedSince
			if since.IsZero() {
				since = in.Now
			}
			res.RequeueAfter(HeldPoll(since, in.Now))
			return res, nil
		}
	}
	remaining, err := u.deleteEverything(ctx, kv)
	if err != nil {
		res.Failed = err.Error()
		return res, err
	}
	if len(remaining) > 0 {
		res.Remaining = describeRemaining(remaining)
		res.RequeueAfter(PollMin)
		return res, nil
	}
	res.Done = true
	res.Emit(report.Normal, "Deleted", "Uninstall", "Every object the operator created is deleted")
	return res, nil
}

// HeldPoll is when an uninstall held since heldSince looks again.
func HeldPoll(heldSince, now time.Time) time.Duration {
	return min(max(now.Sub(heldSince), PollMin), BlockedPollMax)
}

// heldMessage says why an uninstall is held: the user objects that exist, or
// the kinds that cannot be counted and why, and the override.
func heldMessage(counts workloads.Counts) string {
	what := counts.String() + " exist"
	if len(counts.Unknown()) > 0 {
		what = "user objects may exist (" + counts.String() + ")"
	}
	return fmt.Sprintf("Uninstall is held: %s and uninstallStrategy is BlockUninstallIfWorkloadsExist. "+
		"The deletion cannot be cancelled any more; delete them, or set uninstallStrategy: RemoveWorkloads to delete them with KubeVirt", what)
}

// scope is what an uninstall lists: the kinds and namespaces of the
// strategies status.installStrategies records as accepted (the observed
// deployment's, and the target's of an upgrade under way), and every namespace
// monitoring may be in for the target's and the observed configs. Without such
// a strategy (never installed, or its ConfigMap unreadable) every kind a
// strategy can hold is looked for, still namespaced. The last decoded
// strategies are cached, so a poll costs no decode.
func (u *Uninstaller) scope(ctx context.Context, kv *v1.KubeVirt) (apply.Scope, error) {
	inForce, complete, err := u.Strategies.Accepted(ctx, kv)
	if err != nil {
		return apply.Scope{}, err
	}
	var cfgs []*deployid.Config
	for _, raw := range []string{kv.Status.TargetDeploymentConfig, kv.Status.ObservedDeploymentConfig} {
		if cfg, err := deployid.Parse(raw); err == nil && raw != "" {
			cfgs = append(cfgs, cfg)
		}
	}
	scope := apply.ScopeOf(u.Namespace, cfgs, inForce...)
	if complete && len(inForce) > 0 {
		scope.Kinds = apply.StrategyKinds(inForce...)
	}
	return scope, nil
}
