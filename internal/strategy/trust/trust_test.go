package trust

import (
	"errors"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
	"github.com/virt-operator/virt-operator/internal/strategy/dumpjob"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

const id = "0123456789abcdef0123456789abcdef01234567"

func at(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }

func cm(uid string, created time.Duration, payload string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-" + uid, UID: types.UID(uid), CreationTimestamp: at(created),
		Annotations: map[string]string{metadata.InstallStrategyIdentifierAnnotation: id}},
		Data: map[string]string{strategy.ManifestsKey: payload}}
}

func job(name string, created time.Duration, finished batchv1.JobConditionType, at2 time.Duration) batchv1.Job {
	j := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: at(created),
		Annotations: map[string]string{metadata.InstallStrategyIdentifierAnnotation: id, dumpjob.AttemptAnnotation: "0"}}}
	if finished != "" {
		j.Status.Conditions = []batchv1.JobCondition{{Type: finished, Status: corev1.ConditionTrue, LastTransitionTime: at(at2)}}
	}
	return j
}

func TestDecide(t *testing.T) {
	ours := job(dumpjob.Name(id, 0), 20*time.Second, "", 0)
	accepted := []v1.InstallStrategyRef{{DeploymentID: id, UID: "a", Digest: strategy.Digest(cm("a", 0, "x")), Source: SourceJob}}
	yes := func(*corev1.ConfigMap) (bool, error) { return true, nil }
	no := func(*corev1.ConfigMap) (bool, error) { return false, nil }
	fails := func(*corev1.ConfigMap) (bool, error) {
		return false, errors.New(`monitor namespace "Not_A_Namespace": not a DNS label`)
	}
	policy := t0 // the writer policy in force from t0, settled at t0+10s
	for _, tc := range []struct {
		name     string
		cm       *corev1.ConfigMap
		accepted []v1.InstallStrategyRef
		jobs     []batchv1.Job
		render   func(*corev1.ConfigMap) (bool, error)
		since    time.Time
		want     string // source, "" when refused
	}{
		{"accepted before, unchanged", cm("a", time.Hour, "x"), accepted, nil, nil, time.Time{}, SourceJob},
		{"accepted before, then edited", cm("a", time.Hour, "edited"), accepted, nil, yes, policy, ""},
		{"another ConfigMap claiming an accepted ID", cm("b", time.Hour, "x"), accepted, []batchv1.Job{ours}, no, policy, ""},
		{"a builtin release, equal to our rendering", cm("b", time.Hour, "x"), nil, nil, yes, time.Time{}, SourceRendered},
		{"a builtin release, not our rendering, even with our Job", cm("b", time.Hour, "x"), nil, []batchv1.Job{ours}, no, policy, ""},
		{"a builtin release whose comparison fails is refused, not an error", cm("b", time.Hour, "x"), nil, nil, fails, policy, ""},
		{"a delegated release, written while our Job ran under the policy", cm("b", 30*time.Second, "x"), nil, []batchv1.Job{ours}, nil, policy, SourceJob},
		{"a delegated release, written before the policy settled", cm("b", 25*time.Second, "x"), nil, []batchv1.Job{ours}, nil, t0.Add(20 * time.Second), ""},
		{"a delegated release, without the policy in force", cm("b", 30*time.Second, "x"), nil, []batchv1.Job{ours}, nil, time.Time{}, ""},
		{"a delegated release, older than our Job", cm("b", 15*time.Second, "x"), nil, []batchv1.Job{ours}, nil, policy, ""},
		{"a delegated release, created after our Job finished", cm("b", time.Minute, "x"), nil,
			[]batchv1.Job{job(dumpjob.Name(id, 0), 20*time.Second, batchv1.JobFailed, 40*time.Second)}, nil, policy, ""},
		{"a delegated release, no Job", cm("b", 30*time.Second, "x"), nil, nil, nil, policy, ""},
		{"a delegated release, a Job not named as ours", cm("b", 30*time.Second, "x"), nil, []batchv1.Job{job("planted", 0, "", 0)}, nil, policy, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Decide(tc.cm, Evidence{ID: id, Accepted: tc.accepted, Rendered: tc.render, Jobs: tc.jobs, PolicySince: tc.since})
			if v.Trusted != (tc.want != "") || (v.Trusted && v.Source != tc.want) || (!v.Trusted && v.Why == "") {
				t.Fatalf("verdict %+v, want source %q (a refusal says why)", v, tc.want)
			}
		})
	}
	other := cm("c", time.Hour, "x")
	other.Annotations[metadata.InstallStrategyIdentifierAnnotation] = "another"
	if v := Decide(other, Evidence{ID: id, Rendered: yes}); v.Trusted {
		t.Fatal("a ConfigMap of another ID was trusted")
	}
}

func TestPolicyInForce(t *testing.T) {
	const manager, ann = "virt-operator", "hash"
	policy, binding := WriterPolicy("kubevirt", "dumper")
	stamp := func(m *metav1.ObjectMeta, hash string, created time.Duration, writes ...metav1.ManagedFieldsEntry) {
		m.Annotations = map[string]string{ann: hash}
		m.CreationTimestamp = at(created)
		m.ManagedFields = writes
	}
	write := func(manager string, when time.Duration, sub string) metav1.ManagedFieldsEntry {
		w := at(when)
		return metav1.ManagedFieldsEntry{Manager: manager, Time: &w, Subresource: sub}
	}
	stamp(&policy.ObjectMeta, "p", 0, write(manager, 0, ""), write("kube-apiserver", time.Hour, "status"))
	stamp(&binding.ObjectMeta, "b", 5*time.Second, write(manager, 5*time.Second, ""))
	if got := PolicyInForce(policy, binding, "p", "b", ann, manager); !got.Equal(t0.Add(5 * time.Second)) {
		t.Fatalf("in force since %v, want the binding's write at t0+5s (status writes do not count)", got)
	}
	if got := PolicyInForce(policy, binding, "p2", "b", ann, manager); !got.IsZero() {
		t.Fatal("a policy of other content is in force")
	}
	if got := PolicyInForce(nil, binding, "p", "b", ann, manager); !got.IsZero() {
		t.Fatal("a missing policy is in force")
	}
	edited := binding.DeepCopy()
	edited.ManagedFields = append(edited.ManagedFields, write("kubectl-edit", time.Minute, ""))
	if got := PolicyInForce(policy, edited, "p", "b", ann, manager); !got.IsZero() {
		t.Fatal("a binding someone else changed is in force")
	}
	rewritten := binding.DeepCopy()
	rewritten.ManagedFields = []metav1.ManagedFieldsEntry{write(manager, 2*time.Minute, "")}
	if got := PolicyInForce(policy, rewritten, "p", "b", ann, manager); !got.Equal(t0.Add(2 * time.Minute)) {
		t.Fatalf("in force since %v, want the operator's latest write", got)
	}
}
