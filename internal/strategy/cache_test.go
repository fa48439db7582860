package strategy

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virt-operator/virt-operator/internal/metadata"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// strategyCM is a strategy ConfigMap named name for id, created at t0+age seconds.
// monitor "-" means "no monitoring annotation" (as upstream writes them).
func strategyCM(name, id string, age int, monitor string) corev1.ConfigMap {
	cm := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: testNS,
		CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(age) * time.Second)),
		Labels:            map[string]string{metadata.InstallStrategyLabel: ""},
		Annotations:       map[string]string{},
	}}
	if id != "" {
		cm.Annotations[metadata.InstallStrategyIdentifierAnnotation] = id
	}
	if monitor != "-" {
		cm.Annotations[MonitorNamespaceAnnotation] = monitor
	}
	return cm
}

func unlabeled(cm corev1.ConfigMap) corev1.ConfigMap {
	cm.Labels = nil
	return cm
}

func terminating(cm corev1.ConfigMap) corev1.ConfigMap {
	now := metav1.NewTime(t0.Add(time.Hour))
	cm.DeletionTimestamp = &now
	return cm
}

func names(cms []corev1.ConfigMap) []string {
	out := []string{}
	for _, cm := range cms {
		out = append(out, cm.Name)
	}
	return out
}

func TestFindForID(t *testing.T) {
	cases := []struct {
		name string
		cms  []corev1.ConfigMap
		id   string
		want string // "" for nil
	}{
		{"empty cache", nil, "a", ""},
		{"no match", []corev1.ConfigMap{strategyCM("x", "b", 0, "")}, "a", ""},
		{"the one match", []corev1.ConfigMap{strategyCM("x", "b", 0, ""), strategyCM("y", "a", 0, "")}, "a", "y"},
		{"newest of several", []corev1.ConfigMap{strategyCM("old", "a", 0, ""), strategyCM("new", "a", 5, "monitoring"), strategyCM("mid", "a", 3, "")}, "a", "new"},
		{"same second: the greater name", []corev1.ConfigMap{strategyCM("s-bbbbb", "a", 1, ""), strategyCM("s-aaaaa", "a", 1, "")}, "a", "s-bbbbb"},
		{"unlabeled ones are ignored", []corev1.ConfigMap{strategyCM("old", "a", 0, ""), unlabeled(strategyCM("foreign", "a", 9, ""))}, "a", "old"},
		{"terminating ones are ignored", []corev1.ConfigMap{strategyCM("old", "a", 0, ""), terminating(strategyCM("going", "a", 9, ""))}, "a", "old"},
		{"an empty id matches nothing", []corev1.ConfigMap{strategyCM("legacy", "", 0, "")}, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := FindForID(tc.cms, tc.id)
			switch {
			case tc.want == "" && got != nil:
				t.Fatalf("got %s, want none", got.Name)
			case tc.want != "" && (got == nil || got.Name != tc.want):
				t.Fatalf("got %v, want %s", got, tc.want)
			}
		})
	}
}

func TestFresh(t *testing.T) {
	none, mon, unrecorded := strategyCM("a", "a", 0, ""), strategyCM("b", "a", 0, "monitoring"), strategyCM("c", "a", 0, "-")
	cases := []struct {
		name string
		cm   *corev1.ConfigMap
		live string
		want bool
	}{
		{"generated without monitoring, still none", &none, "", true},
		{"generated without monitoring, now monitoring", &none, "monitoring", false},
		{"generated with monitoring, still there", &mon, "monitoring", true},
		{"generated with monitoring, now gone", &mon, "", false},
		{"generated with monitoring, moved", &mon, "openshift-monitoring", false},
		{"never recorded, none", &unrecorded, "", false},
		{"never recorded, monitoring", &unrecorded, "monitoring", false},
		{"no ConfigMap", nil, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Fresh(tc.cm, tc.live); got != tc.want {
				t.Fatalf("Fresh = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestObsolete(t *testing.T) {
	cases := []struct {
		name             string
		cms              []corev1.ConfigMap
		target, observed string
		want             []string
	}{
		{"nothing cached", nil, "a", "a", []string{}},
		{"installed, steady", []corev1.ConfigMap{strategyCM("a1", "a", 0, "")}, "a", "a", []string{}},
		{"updating: target and observed are kept",
			[]corev1.ConfigMap{strategyCM("a1", "a", 0, ""), strategyCM("b1", "b", 1, "")}, "b", "a", []string{}},
		{"after the update the old one goes",
			[]corev1.ConfigMap{strategyCM("a1", "a", 0, ""), strategyCM("b1", "b", 1, "")}, "b", "b", []string{"a1"}},
		{"other IDs go, in input order",
			[]corev1.ConfigMap{strategyCM("z1", "z", 0, ""), strategyCM("a1", "a", 0, ""), strategyCM("y1", "y", 2, "")}, "a", "a", []string{"z1", "y1"}},
		{"no identifier (legacy) goes",
			[]corev1.ConfigMap{strategyCM("legacy", "", 0, "-"), strategyCM("a1", "a", 0, "")}, "a", "a", []string{"legacy"}},
		{"uninstall: all of them",
			[]corev1.ConfigMap{strategyCM("a1", "a", 0, ""), strategyCM("b1", "b", 1, ""), strategyCM("legacy", "", 0, "-")}, "", "", []string{"a1", "b1", "legacy"}},
		{"race duplicates: all but the newest",
			[]corev1.ConfigMap{strategyCM("a1", "a", 0, ""), strategyCM("a2", "a", 2, ""), strategyCM("a3", "a", 1, "")}, "a", "a", []string{"a1", "a3"}},
		{"same-second duplicates: all but the greater name",
			[]corev1.ConfigMap{strategyCM("s-bbbbb", "a", 1, ""), strategyCM("s-aaaaa", "a", 1, "")}, "a", "a", []string{"s-aaaaa"}},
		{"monitoring appeared: the stale strategy goes once the new one exists",
			[]corev1.ConfigMap{strategyCM("stale", "a", 0, ""), strategyCM("fresh", "a", 30, "monitoring")}, "a", "a", []string{"stale"}},
		{"duplicates of the observed ID while updating",
			[]corev1.ConfigMap{strategyCM("a1", "a", 0, ""), strategyCM("a2", "a", 1, ""), strategyCM("b1", "b", 2, "")}, "b", "a", []string{"a1"}},
		{"unlabeled ConfigMaps are never touched",
			[]corev1.ConfigMap{unlabeled(strategyCM("foreign", "z", 0, "")), strategyCM("a1", "a", 0, "")}, "", "", []string{"a1"}},
		{"terminating ones are not deleted again",
			[]corev1.ConfigMap{terminating(strategyCM("z1", "z", 0, "")), strategyCM("a1", "a", 0, "")}, "a", "a", []string{}},
		{"a terminating newest does not hide the live one",
			[]corev1.ConfigMap{strategyCM("a1", "a", 0, ""), terminating(strategyCM("a2", "a", 5, ""))}, "a", "a", []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := names(Obsolete(tc.cms, tc.target, tc.observed))
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Obsolete = %v, want %v", got, tc.want)
			}
			// Invariant: GC never deletes the ConfigMap in force for a kept ID.
			for _, id := range []string{tc.target, tc.observed} {
				if inUse := FindForID(tc.cms, id); inUse != nil {
					for _, n := range got {
						if n == inUse.Name {
							t.Fatalf("Obsolete deletes %s, the strategy in force for %q", n, id)
						}
					}
				}
			}
		})
	}
}
