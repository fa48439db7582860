package kubevirt

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

func kubeVirtAt(uid types.UID, rv, target string) *v1.KubeVirt {
	return &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{UID: uid, ResourceVersion: rv},
		Status: v1.KubeVirtStatus{TargetDeploymentID: target}}
}

// A read of a version the last status write replaced gets that write's status;
// anything else is taken as it is.
func TestWrittenStatusRefreshesOnlyStaleReads(t *testing.T) {
	var w writtenStatus
	if w.refresh(kubeVirtAt("a", "10", "old")) {
		t.Fatal("nothing written yet, nothing to refresh")
	}
	w.remember(kubeVirtAt("a", "12", "new"), "10", "11")
	tests := []struct {
		name string
		uid  types.UID
		rv   string
		want bool
	}{
		{"the version the write replaced", "a", "10", true},
		{"an intermediate version it replaced", "a", "11", true},
		{"the written version", "a", "12", false},
		{"a later version", "a", "13", false},
		{"another CR", "b", "10", false},
	}
	for _, tt := range tests {
		kv := kubeVirtAt(tt.uid, tt.rv, "old")
		got := w.refresh(kv)
		want := "old"
		if tt.want {
			want = "new"
		}
		if got != tt.want || kv.Status.TargetDeploymentID != want {
			t.Errorf("%s: refreshed %v, target %q; want %v, %q", tt.name, got, kv.Status.TargetDeploymentID, tt.want, want)
		}
	}
}

// Two writes before the cache shows the first: the second was made from a
// read refreshed with the first's status, so a read of the first's version is
// stale too and gets the second's status (else the next pass would patch over
// a status without the second write's decisions).
func TestWrittenStatusRefreshesVersionsOfEarlierWrites(t *testing.T) {
	var w writtenStatus
	w.remember(kubeVirtAt("a", "11", "first"), "10")
	stale := kubeVirtAt("a", "10", "old")
	if !w.refresh(stale) {
		t.Fatal("the first write's replaced version is not refreshed")
	}
	w.remember(kubeVirtAt("a", "12", "second"), "10")
	for _, rv := range []string{"10", "11"} {
		kv := kubeVirtAt("a", rv, "old")
		if !w.refresh(kv) || kv.Status.TargetDeploymentID != "second" {
			t.Errorf("a read at %s: target %q, want the second write's", rv, kv.Status.TargetDeploymentID)
		}
	}
	if w.refresh(kubeVirtAt("a", "12", "old")) {
		t.Error("the written version itself is refreshed")
	}
	// Another CR's write starts afresh.
	w.remember(kubeVirtAt("b", "20", "b"), "19")
	if w.refresh(kubeVirtAt("b", "11", "old")) {
		t.Error("a version of the earlier CR is refreshed for another")
	}
	// The remembered versions stay bounded.
	for i := range 3 * maxReplaced {
		w.remember(kubeVirtAt("b", fmt.Sprint(100+i), "b"), fmt.Sprint(99+i))
	}
	if n := len(w.replaced); n > maxReplaced+2 {
		t.Errorf("%d versions remembered, want at most %d", n, maxReplaced+2)
	}
}
