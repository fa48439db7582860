package activecr

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

func kvAt(ns, name string, created int64) v1.KubeVirt {
	return v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(time.Unix(created, 0))}}
}

func TestOf(t *testing.T) {
	cases := []struct {
		name string
		all  []v1.KubeVirt
		want string
	}{
		{"none", nil, ""},
		{"only one elsewhere", []v1.KubeVirt{kvAt("other", "kv", 1)}, ""},
		{"the oldest in the namespace wins", []v1.KubeVirt{kvAt("kubevirt", "b", 2), kvAt("kubevirt", "a", 3), kvAt("other", "c", 1)}, "b"},
		{"a tie goes to the first name", []v1.KubeVirt{kvAt("kubevirt", "b", 2), kvAt("kubevirt", "a", 2)}, "a"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Of(c.all, "kubevirt")
			if (got == nil) != (c.want == "") || (got != nil && got.Name != c.want) {
				t.Fatalf("Of = %v, want %q", got, c.want)
			}
		})
	}
}

func TestIgnoredMessageNamesTheActiveCR(t *testing.T) {
	active := kvAt("kubevirt", "kubevirt", 1)
	second := kvAt("kubevirt", "second", 2)
	if msg := IgnoredMessage(&second, &active, "kubevirt"); !strings.Contains(msg, "kubevirt/kubevirt") {
		t.Fatalf("message does not name the active CR: %s", msg)
	}
	foreign := kvAt("default", "kv", 0)
	if msg := IgnoredMessage(&foreign, &active, "kubevirt"); !strings.Contains(msg, `"kubevirt"`) {
		t.Fatalf("message does not name the operator's namespace: %s", msg)
	}
}
