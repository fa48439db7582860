package ceiling

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virt-operator/virt-operator/internal/strategy"
)

// Random strategies through the ceiling: whatever it accepts, checked here
// by an evaluator of its own, grants nothing outside KubeVirt's API groups to
// everyone or through the built-in user roles, never every API group, never
// a privileged verb, and binds no role outside the strategy but the two
// built-in ones. Seeded; a failing seed is printed for replay.
func TestRandomStrategiesNeverGrantMoreThanTheCeiling(t *testing.T) {
	// Weighted towards what KubeVirt grants, so that many pass and the
	// accepted ones are checked, with every way out in reach.
	groups := []string{"kubevirt.io", "kubevirt.io", "subresources.kubevirt.io", "cdi.kubevirt.io", "kubevirt.io", "kubevirt.io",
		"", "apps", "rbac.authorization.k8s.io", "*", "kubevirt.io.evil.com"}
	resources := []string{"virtualmachines", "virtualmachines", "pods", "secrets", "*", "clusterroles", "users"}
	verbs := []string{"get", "get", "list", "list", "create", "*", "escalate", "bind", "impersonate", "delete"}
	subjects := []rbacv1.Subject{
		{Kind: rbacv1.GroupKind, Name: "system:authenticated"},
		{Kind: rbacv1.ServiceAccountKind, Namespace: "kubevirt", Name: "kubevirt-handler"},
		{Kind: rbacv1.UserKind, Name: "system:anonymous"},
		{Kind: rbacv1.GroupKind, Name: "system:masters"},
		{Kind: rbacv1.ServiceAccountKind, Namespace: "kubevirt", Name: "kubevirt-controller"},
		{Kind: rbacv1.ServiceAccountKind, Namespace: "attacker", Name: "x"},
	}
	roleNames := []string{"kubevirt.io:default", "r1", "kubevirt.io:default", "r1", "cluster-admin", "system:auth-delegator"}
	pick := func(r *rand.Rand, from []string, n int) []string {
		var out []string
		for range n {
			out = append(out, from[r.IntN(len(from))])
		}
		return out
	}
	accepted := 0
	for seed := uint64(1); seed <= 20000; seed++ {
		r := rand.New(rand.NewPCG(seed, 42))
		s := &strategy.Strategy{}
		for _, name := range []string{"kubevirt.io:default", "r1"} {
			role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}}
			if r.IntN(3) == 0 {
				role.Labels = map[string]string{"rbac.authorization.k8s.io/aggregate-to-edit": "true"}
			}
			for range 1 + r.IntN(2) {
				role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: pick(r, groups, 1), Resources: pick(r, resources, 1+r.IntN(2)), Verbs: pick(r, verbs, 1+r.IntN(2))})
			}
			_ = s.Add(role)
		}
		for i := range 1 + r.IntN(2) {
			b := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b" + string(rune('a'+i))},
				RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: roleNames[r.IntN(len(roleNames))]}}
			for range 1 {
				b.Subjects = append(b.Subjects, subjects[r.IntN(len(subjects))])
			}
			_ = s.Add(b)
		}
		if len(Check(s, ns)) > 0 {
			continue
		}
		accepted++
		if why := overCeiling(s); why != "" {
			t.Fatalf("seed %d: accepted, yet %s", seed, why)
		}
	}
	if accepted < 300 {
		t.Fatalf("only %d of 20000 random strategies were accepted: the test says little", accepted)
	}
	t.Logf("%d of 20000 random strategies accepted, each within the ceiling", accepted)
}

// overCeiling evaluates what s grants, independently of Check.
func overCeiling(s *strategy.Strategy) string {
	rules := map[string][]rbacv1.PolicyRule{}
	for _, role := range s.ClusterRoles {
		rules[role.Name] = role.Rules
		for _, rule := range role.Rules {
			if slices.Contains(rule.APIGroups, "*") {
				return role.Name + " names every API group"
			}
			for _, v := range []string{"escalate", "bind", "impersonate"} {
				if slices.Contains(rule.Verbs, v) {
					return role.Name + " grants " + v
				}
			}
			if (slices.Contains(rule.Verbs, "*") || slices.Contains(rule.Resources, "*")) && !allKubeVirt(rule.APIGroups) {
				return role.Name + " grants a wildcard outside KubeVirt"
			}
			if role.Labels["rbac.authorization.k8s.io/aggregate-to-edit"] == "true" && !allKubeVirt(rule.APIGroups) {
				return role.Name + " is aggregated into edit with rules outside KubeVirt"
			}
		}
	}
	for _, b := range s.ClusterRoleBindings {
		granted, inStrategy := rules[b.RoleRef.Name]
		if !inStrategy && b.RoleRef.Name != "system:auth-delegator" {
			return b.Name + " binds " + b.RoleRef.Name
		}
		for _, sub := range b.Subjects {
			everyone := sub.Name == "system:authenticated" || sub.Name == "system:anonymous"
			if sub.Kind == rbacv1.ServiceAccountKind && sub.Namespace != "kubevirt" {
				return b.Name + " binds a ServiceAccount of " + sub.Namespace
			}
			if sub.Kind != rbacv1.ServiceAccountKind && !everyone {
				return b.Name + " binds " + sub.Name
			}
			if everyone {
				if !inStrategy {
					return b.Name + " binds a built-in role to everyone"
				}
				for _, rule := range granted {
					if !allKubeVirt(rule.APIGroups) {
						return b.Name + " grants outside KubeVirt to everyone"
					}
				}
			}
		}
	}
	return ""
}

func allKubeVirt(groups []string) bool {
	for _, g := range groups {
		if g != "kubevirt.io" && !strings.HasSuffix(g, ".kubevirt.io") {
			return false
		}
	}
	return true
}
