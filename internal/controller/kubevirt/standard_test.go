package kubevirt

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

func TestStandardConditions(t *testing.T) {
	now := metav1.Now()
	const T, F = corev1.ConditionTrue, corev1.ConditionFalse
	cases := []struct {
		name                        string
		state                       State
		ready, reconciling, stalled corev1.ConditionStatus
		reason                      string
	}{
		{"first install", State{Kind: StateDeploying}, F, T, F, ReasonDeploying},
		{"update (upstream says Available, Progressing and Degraded)", State{Kind: StateUpdating}, F, T, F, ReasonUpdating},
		{"available", State{Kind: StateAvailable, Created: true}, T, F, F, ReasonAllComponentsReady},
		{"failed", State{Kind: StateFailed, Reason: ReasonStrategyJobFailed, Message: "boom"}, F, F, T, ReasonStrategyJobFailed},
		{"deleting", State{Kind: StateDeleting}, F, T, F, ReasonDeleting},
		{"uninstall blocked by workloads", State{Kind: StateBlocked, Reason: ReasonDeletionBlocked, Message: "VMs"}, F, F, T, ReasonDeletionBlocked},
		{"another CR is active", State{Kind: StateIgnored, Reason: "Ignored", Message: "another"}, F, F, T, "Ignored"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conds := StandardConditions(Conditions(nil, c.state, now), 7, now)
			for typ, want := range map[v1.KubeVirtConditionType]corev1.ConditionStatus{
				v1.KubeVirtConditionReady: c.ready, v1.KubeVirtConditionReconciling: c.reconciling, v1.KubeVirtConditionStalled: c.stalled,
			} {
				got := findCondition(conds, typ)
				if got == nil || got.Status != want || got.ObservedGeneration != 7 || got.Reason != c.reason {
					t.Errorf("%s = %+v, want %s reason %s at generation 7", typ, got, want, c.reason)
				}
			}
		})
	}
	// A failed upgrade keeps Available True (the old version serves), yet it is Stalled, not Ready.
	conds := Conditions(Conditions(nil, State{Kind: StateAvailable}, now), State{Kind: StateFailed, Reason: "X", Message: "y"}, now)
	conds = StandardConditions(conds, 2, now)
	if findCondition(conds, v1.KubeVirtConditionStalled).Status != T || findCondition(conds, v1.KubeVirtConditionReady).Status != F {
		t.Fatalf("failed upgrade: %+v", conds)
	}
	// Unchanged input writes nothing new: timestamps stay.
	later := metav1.NewTime(now.Add(3600e9))
	again := StandardConditions(conds, 2, later)
	if !findCondition(again, v1.KubeVirtConditionReady).LastTransitionTime.Equal(&now) {
		t.Fatal("a repeated derivation moved the timestamps")
	}
}

func TestMonitorAccountsFilterServiceAccounts(t *testing.T) {
	var m monitorAccounts
	sa := func(ns, name string) *corev1.ServiceAccount {
		return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	if !m.matches(sa("anywhere", "anything")) {
		t.Fatal("before the first reconcile every ServiceAccount must pass")
	}
	m.set([]string{"openshift-monitoring", "monitoring", ""}, "prometheus-k8s")
	if !m.matches(sa("monitoring", "prometheus-k8s")) || !m.matches(sa("openshift-monitoring", "prometheus-k8s")) {
		t.Fatal("the monitoring account was dropped")
	}
	if m.matches(sa("team-a", "builder")) || m.matches(sa("monitoring", "grafana")) || m.matches(sa("team-a", "prometheus-k8s")) {
		t.Fatal("an unrelated ServiceAccount passed")
	}
}
