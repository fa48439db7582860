package uninstall

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestDescribeRemainingSaysWhyACRDStays(t *testing.T) {
	now := metav1.Now()
	crd := func(name string, terminating bool, message string) *apiextensionsv1.CustomResourceDefinition {
		c := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if terminating {
			c.DeletionTimestamp = &now
			c.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{
				Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue, Message: message,
			}}
		}
		return c
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt-ca"}}
	for _, tc := range []struct {
		name string
		objs []client.Object
		want []string
		not  []string
	}{
		{
			name: "not yet terminating: only the names",
			objs: []client.Object{crd("a.kubevirt.io", false, "")},
			want: []string{"waiting for 1 objects to go: CustomResourceDefinition a.kubevirt.io"},
			not:  []string{"a.kubevirt.io: "},
		},
		{
			name: "the first terminating CRD's reason",
			objs: []client.Object{crd("a.kubevirt.io", false, ""), crd("b.kubevirt.io", true, "some instances are still present")},
			want: []string{"b.kubevirt.io: some instances are still present"},
		},
		{
			name: "more than three: counted",
			objs: []client.Object{cm, cm, cm, cm, cm},
			want: []string{"waiting for 5 objects to go", "and 2 more"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := describeRemaining(tc.objs)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("%q has %q", got, n)
				}
			}
		})
	}
}

func TestCRDNeedsNudge(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) string { return now.Add(-d).Format(time.RFC3339) }
	crd := func(deleting bool, reason string, failedAgo time.Duration, retried string) *apiextensionsv1.CustomResourceDefinition {
		c := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "a.kubevirt.io"}}
		if deleting {
			ts := metav1.NewTime(now.Add(-time.Minute))
			c.DeletionTimestamp = &ts
		}
		if reason != "" {
			c.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{
				Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue, Reason: reason,
				LastTransitionTime: metav1.NewTime(now.Add(-failedAgo)),
			}}
		}
		if retried != "" {
			c.Annotations = map[string]string{CRDCleanupRetryAnnotation: retried}
		}
		return c
	}
	for _, tc := range []struct {
		name string
		crd  *apiextensionsv1.CustomResourceDefinition
		want bool
	}{
		{"not deleting", crd(false, "InstanceDeletionFailed", time.Minute, ""), false},
		{"clean-up in progress", crd(true, "InstanceDeletionInProgress", time.Minute, ""), false},
		{"failed just now: the finalizer's own retry comes first", crd(true, "InstanceDeletionFailed", time.Second, ""), false},
		{"failed a while ago, never retried", crd(true, "InstanceDeletionFailed", time.Minute, ""), true},
		{"retried moments ago", crd(true, "InstanceDeletionFailed", time.Minute, ago(2*time.Second)), false},
		{"retried a while ago", crd(true, "InstanceDeletionFailed", time.Minute, ago(6*time.Second)), true},
		{"a retry annotation someone mangled", crd(true, "InstanceDeletionFailed", time.Minute, "yesterday"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := crdNeedsNudge(tc.crd, now); got != tc.want {
				t.Errorf("crdNeedsNudge = %v, want %v", got, tc.want)
			}
		})
	}
}
