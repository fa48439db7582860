// Package ceiling bounds what any install strategy may grant, whoever wrote
// it. The operator applies a strategy with its own rights, which include
// creating ClusterRoles, binding them to every authenticated user and
// registering webhooks; provenance (package strategy/trust) decides who may
// have written a strategy, and the ceiling holds even when that fails: a
// strategy over it is refused whole, before anything of it is applied.
//
// The ceiling is what KubeVirt itself needs, as rules over shapes rather than
// a list of upstream's objects, so a release that adds a component or a kind
// passes it and a strategy that reaches outside KubeVirt does not:
//
//   - RBAC rules never name every API group, and name every resource or every
//     verb only within KubeVirt's own API groups (kubevirt.io and *.kubevirt.io);
//     no rule grants escalate, bind or impersonate (no release does), nor every
//     non-resource URL;
//   - a role bound to everyone (system:authenticated, system:unauthenticated,
//     system:serviceaccounts, system:anonymous) or aggregated into the
//     built-in admin, edit, view or cluster-reader roles grants nothing outside
//     KubeVirt's API groups; no strategy role aggregates others;
//   - a binding refers to a role of the strategy or to one of the two
//     built-in roles KubeVirt's API servers need (system:auth-delegator, and
//     extension-apiserver-authentication-reader in kube-system), and binds it
//     to the strategy's namespaces' ServiceAccounts or to everyone (then only a
//     KubeVirt role);
//   - namespaced objects live in the install namespace or a monitoring
//     namespace (and that one RoleBinding in kube-system);
//   - webhooks, conversion webhooks and APIServices call Services in the
//     install namespace, never a URL;
//   - OpenShift SecurityContextConstraints name only the install namespace's
//     ServiceAccounts, no group;
//   - objects of kinds the strategy has no list for are KubeVirt's own.
package ceiling

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/internal/strategy"
)

// Namespaces are where a strategy may put namespaced objects.
type Namespaces struct {
	// Install is the KubeVirt namespace.
	Install string
	// Monitoring are the namespaces monitoring may be in for the config (its
	// ServiceMonitor, and the monitoring account's Role and RoleBinding).
	Monitoring []string
}

// Violation is one way a strategy exceeds the ceiling.
type Violation struct {
	// Object names the object: "ClusterRole kubevirt.io:default".
	Object string
	// Why says which rule it breaks.
	Why string
}

func (v Violation) String() string { return v.Object + ": " + v.Why }

// Check returns every violation of the ceiling in s, in strategy order; none
// means s may be applied.
func Check(s *strategy.Strategy, ns Namespaces) []Violation {
	c := &checker{ns: ns, roles: map[string]roleInfo{}}
	c.collectRoles(s)
	for _, r := range s.ClusterRoles {
		c.rules(describe("ClusterRole", "", r.Name), r.Rules)
		if r.AggregationRule != nil {
			c.add(describe("ClusterRole", "", r.Name), "aggregates other roles into itself; no KubeVirt role does")
		}
		if aggregatedIntoBuiltins(r.Labels) {
			c.kubevirtOnly(describe("ClusterRole", "", r.Name), r.Rules, "aggregated into a built-in role")
		}
	}
	for _, r := range s.Roles {
		c.rules(describe("Role", r.Namespace, r.Name), r.Rules)
	}
	for _, b := range s.ClusterRoleBindings {
		c.binding(describe("ClusterRoleBinding", "", b.Name), "", b.RoleRef, b.Subjects)
	}
	for _, b := range s.RoleBindings {
		c.binding(describe("RoleBinding", b.Namespace, b.Name), b.Namespace, b.RoleRef, b.Subjects)
	}
	for _, w := range s.ValidatingWebhookConfigurations {
		for _, wh := range w.Webhooks {
			c.clientConfig(describe("ValidatingWebhookConfiguration", "", w.Name), wh.Name, wh.ClientConfig)
		}
	}
	for _, w := range s.MutatingWebhookConfigurations {
		for _, wh := range w.Webhooks {
			c.clientConfig(describe("MutatingWebhookConfiguration", "", w.Name), wh.Name, wh.ClientConfig)
		}
	}
	for _, crd := range s.CRDs {
		if conv := crd.Spec.Conversion; conv != nil && conv.Webhook != nil && conv.Webhook.ClientConfig != nil {
			cc := conv.Webhook.ClientConfig
			obj := describe("CustomResourceDefinition", "", crd.Name)
			switch {
			case cc.URL != nil:
				c.add(obj, "its conversion webhook calls a URL, not a Service of the install namespace")
			case cc.Service != nil && cc.Service.Namespace != ns.Install:
				c.add(obj, fmt.Sprintf("its conversion webhook calls a Service in namespace %q, not the install namespace", cc.Service.Namespace))
			}
		}
	}
	for _, a := range s.APIServices {
		if svc := a.Spec.Service; svc == nil || svc.Namespace != ns.Install {
			c.add(describe("APIService", "", a.Name), "is not served by a Service of the install namespace")
		}
	}
	for _, scc := range s.SecurityContextConstraints {
		c.scc(scc)
	}
	for _, o := range s.Others {
		if !isKubeVirtGroup(o.GroupVersionKind().Group) {
			c.add(describe(o.GetKind(), o.GetNamespace(), o.GetName()), fmt.Sprintf("is of API group %q: a strategy holds only kinds it knows and KubeVirt's own", o.GroupVersionKind().Group))
		}
	}
	for _, o := range s.Objects() {
		c.namespace(o)
	}
	return c.out
}

// everyone are the subjects that stand for every user or every ServiceAccount.
var everyone = map[string]bool{
	"Group/system:authenticated":   true,
	"Group/system:unauthenticated": true,
	"Group/system:serviceaccounts": true,
	"User/system:anonymous":        true,
}

// builtinRoles are the roles outside a strategy that a strategy may bind: the
// delegation KubeVirt's aggregated API servers need.
var builtinRoles = map[string]bool{
	"ClusterRole/system:auth-delegator":                          true,
	"Role/kube-system/extension-apiserver-authentication-reader": true,
}

// privilegedVerbs let a subject grant or assume rights it does not hold.
var privilegedVerbs = []string{"escalate", "bind", "impersonate"}

type roleInfo struct {
	rules []rbacv1.PolicyRule
}

type checker struct {
	ns    Namespaces
	roles map[string]roleInfo // "ClusterRole/name" or "Role/ns/name"
	out   []Violation
}

func (c *checker) add(obj, why string) { c.out = append(c.out, Violation{Object: obj, Why: why}) }

func (c *checker) collectRoles(s *strategy.Strategy) {
	for _, r := range s.ClusterRoles {
		c.roles["ClusterRole/"+r.Name] = roleInfo{rules: r.Rules}
	}
	for _, r := range s.Roles {
		c.roles["Role/"+r.Namespace+"/"+r.Name] = roleInfo{rules: r.Rules}
	}
}

// rules checks one role's rules against the rules every role obeys.
func (c *checker) rules(obj string, rules []rbacv1.PolicyRule) {
	for i, r := range rules {
		where := fmt.Sprintf("rule %d", i)
		if slices.Contains(r.APIGroups, rbacv1.APIGroupAll) {
			c.add(obj, where+" names every API group")
		}
		if slices.Contains(r.NonResourceURLs, rbacv1.NonResourceAll) {
			c.add(obj, where+" names every non-resource URL")
		}
		for _, v := range privilegedVerbs {
			if slices.Contains(r.Verbs, v) {
				c.add(obj, fmt.Sprintf("%s grants %q", where, v))
			}
		}
		wild := slices.Contains(r.Resources, rbacv1.ResourceAll) || slices.Contains(r.Verbs, rbacv1.VerbAll)
		if wild && len(r.NonResourceURLs) == 0 {
			for _, g := range r.APIGroups {
				if g != rbacv1.APIGroupAll && !isKubeVirtGroup(g) {
					c.add(obj, fmt.Sprintf("%s grants every resource or every verb in API group %q, outside KubeVirt's", where, g))
				}
			}
		}
	}
}

// kubevirtOnly checks that rules grant nothing outside KubeVirt's API groups.
func (c *checker) kubevirtOnly(obj string, rules []rbacv1.PolicyRule, why string) {
	for i, r := range rules {
		if len(r.NonResourceURLs) > 0 {
			c.add(obj, fmt.Sprintf("is %s and rule %d grants non-resource URLs", why, i))
		}
		for _, g := range r.APIGroups {
			if !isKubeVirtGroup(g) {
				c.add(obj, fmt.Sprintf("is %s and rule %d grants in API group %q, outside KubeVirt's", why, i, g))
			}
		}
	}
}

// binding checks a (Cluster)RoleBinding: the role it binds, and to whom.
func (c *checker) binding(obj, namespace string, ref rbacv1.RoleRef, subjects []rbacv1.Subject) {
	key := "ClusterRole/" + ref.Name
	if ref.Kind == "Role" {
		key = "Role/" + namespace + "/" + ref.Name
	}
	role, inStrategy := c.roles[key]
	if !inStrategy && !builtinRoles[key] {
		c.add(obj, fmt.Sprintf("binds %s %s, which is neither in the strategy nor a built-in role KubeVirt needs", ref.Kind, ref.Name))
	}
	for _, sub := range subjects {
		switch {
		case everyone[sub.Kind+"/"+sub.Name]:
			if !inStrategy {
				c.add(obj, fmt.Sprintf("binds %s %s to everyone (%s %s)", ref.Kind, ref.Name, sub.Kind, sub.Name))
				continue
			}
			c.kubevirtOnly(obj, role.rules, fmt.Sprintf("binding %s %s to everyone (%s %s)", ref.Kind, ref.Name, sub.Kind, sub.Name))
		case sub.Kind == rbacv1.ServiceAccountKind:
			if sub.Namespace != c.ns.Install && !slices.Contains(c.ns.Monitoring, sub.Namespace) {
				c.add(obj, fmt.Sprintf("binds ServiceAccount %s/%s, outside the install and monitoring namespaces", sub.Namespace, sub.Name))
			}
		default:
			c.add(obj, fmt.Sprintf("binds %s %s: a strategy binds ServiceAccounts, or KubeVirt's roles to everyone", sub.Kind, sub.Name))
		}
	}
}

// clientConfig checks that a webhook calls a Service of the install namespace.
func (c *checker) clientConfig(obj, webhook string, cc admissionregistrationv1.WebhookClientConfig) {
	switch {
	case cc.URL != nil:
		c.add(obj, fmt.Sprintf("webhook %s calls a URL, not a Service of the install namespace", webhook))
	case cc.Service == nil:
		c.add(obj, fmt.Sprintf("webhook %s names no Service", webhook))
	case cc.Service.Namespace != c.ns.Install:
		c.add(obj, fmt.Sprintf("webhook %s calls a Service in namespace %q, not the install namespace", webhook, cc.Service.Namespace))
	}
}

// scc checks an OpenShift SecurityContextConstraints: only the install
// namespace's ServiceAccounts may use it.
func (c *checker) scc(scc *unstructured.Unstructured) {
	obj := describe(strategy.KindSecurityContextConstraints, "", scc.GetName())
	if groups, _, _ := unstructured.NestedStringSlice(scc.Object, "groups"); len(groups) > 0 {
		c.add(obj, fmt.Sprintf("grants groups %v: KubeVirt grants its constraints to its own ServiceAccounts only", groups))
	}
	users, _, _ := unstructured.NestedStringSlice(scc.Object, "users")
	prefix := "system:serviceaccount:" + c.ns.Install + ":"
	for _, u := range users {
		if !strings.HasPrefix(u, prefix) {
			c.add(obj, fmt.Sprintf("grants user %q, not a ServiceAccount of the install namespace", u))
		}
	}
}

// namespace checks where a namespaced object lives.
func (c *checker) namespace(o client.Object) {
	ns := o.GetNamespace()
	if ns == "" || ns == c.ns.Install || slices.Contains(c.ns.Monitoring, ns) {
		return
	}
	if b, ok := o.(*rbacv1.RoleBinding); ok && builtinRoles["Role/"+ns+"/"+b.RoleRef.Name] && b.RoleRef.Kind == "Role" {
		return
	}
	kind := o.GetObjectKind().GroupVersionKind().Kind
	if kind == "" {
		kind = fmt.Sprintf("%T", o)
	}
	c.add(describe(kind, ns, o.GetName()), fmt.Sprintf("is in namespace %q, neither the install namespace nor a monitoring one", ns))
}

// isKubeVirtGroup: KubeVirt's own API groups, kubevirt.io and its subdomains.
func isKubeVirtGroup(group string) bool {
	return group == "kubevirt.io" || strings.HasSuffix(group, ".kubevirt.io")
}

// aggregatedIntoBuiltins: the labels aggregate a ClusterRole into a built-in
// user-facing role.
func aggregatedIntoBuiltins(labels map[string]string) bool {
	for k, v := range labels {
		if strings.HasPrefix(k, "rbac.authorization.k8s.io/aggregate-to-") && v == "true" {
			return true
		}
	}
	return false
}

func describe(kind, namespace, name string) string {
	if namespace != "" {
		return kind + " " + namespace + "/" + name
	}
	return kind + " " + name
}
