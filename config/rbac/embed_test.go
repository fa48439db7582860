package rbac

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Every file parses; the operator's and the Job's accounts are both there, and
// every binding's subject is one of them.
func TestObjects(t *testing.T) {
	objs, err := Objects()
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	accounts := map[string]bool{}
	for _, o := range objs {
		kinds[o.GetKind()]++
		if o.GetKind() == "ServiceAccount" {
			accounts[o.GetName()] = true
		}
	}
	if !accounts["virt-operator"] || !accounts[StrategyDumperServiceAccount] {
		t.Fatalf("ServiceAccounts %v, want virt-operator and %s", accounts, StrategyDumperServiceAccount)
	}
	for _, o := range objs {
		if o.GetKind() != "RoleBinding" && o.GetKind() != "ClusterRoleBinding" {
			continue
		}
		subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
		for _, s := range subjects {
			if name, _ := s.(map[string]any)["name"].(string); !accounts[name] {
				t.Errorf("%s %s binds %q, not one of the ServiceAccounts", o.GetKind(), o.GetName(), name)
			}
		}
	}
	if kinds["ClusterRole"] != 3 || kinds["Role"] < 3 {
		t.Errorf("kinds %v: want the operator's, the Job's and the metrics reader's ClusterRole, and Roles in kubevirt, kube-system and the Job's", kinds)
	}
}
