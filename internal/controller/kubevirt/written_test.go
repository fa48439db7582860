package kubevirt

import (
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
