package generate

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// Verb sets.
var (
	verbsRead  = []string{"get", "list", "watch"}
	verbsWrite = []string{"create", "delete", "deletecollection", "patch", "update"}
	verbsAll   = append(append([]string(nil), verbsRead...), verbsWrite...)
)

// rule grants verbs on resources of one API group.
func rule(group string, resources []string, verbs ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{
		APIGroups: []string{group},
		Resources: append([]string(nil), resources...),
		Verbs:     append([]string(nil), verbs...),
	}
}

func res(names ...string) []string { return names }

// Aggregation labels of the user-facing ClusterRoles.
const (
	aggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	aggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	aggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
	aggregatePrefix  = "rbac.authorization.k8s.io/aggregate-to-"
)

// component is one control-plane component's identity: its ServiceAccount and
// the ClusterRole, Role and bindings of the same name.
type component struct {
	sa           string
	clusterRules []rbacv1.PolicyRule
	nsRules      []rbacv1.PolicyRule
}

func (b *builder) rbac() {
	b.userRoles()
	for _, c := range b.components() {
		b.add(&corev1.ServiceAccount{ObjectMeta: meta(c.sa, b.ns, nil)})
		b.add(&rbacv1.ClusterRole{ObjectMeta: meta(c.sa, "", nil), Rules: c.clusterRules})
		b.add(&rbacv1.ClusterRoleBinding{
			ObjectMeta: meta(c.sa, "", nil),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: c.sa},
			Subjects:   []rbacv1.Subject{b.saSubject(c.sa)},
		})
		b.add(&rbacv1.Role{ObjectMeta: meta(c.sa, b.ns, nil), Rules: c.nsRules})
		b.add(&rbacv1.RoleBinding{
			ObjectMeta: meta(c.sa, b.ns, nil),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: c.sa},
			Subjects:   []rbacv1.Subject{b.saSubject(c.sa)},
		})
	}
	// virt-api is an aggregated API server: it delegates authn and authz.
	b.add(&rbacv1.ClusterRoleBinding{
		ObjectMeta: meta(saAPIServer+"-auth-delegator", "", nil),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:auth-delegator"},
		Subjects:   []rbacv1.Subject{b.saSubject(saAPIServer)},
	})
	if b.cfg.OptOutRoleAggregation() {
		for _, cr := range b.s.ClusterRoles {
			for k := range cr.Labels {
				if strings.HasPrefix(k, aggregatePrefix) {
					cr.Labels[k] = "false"
				}
			}
		}
	}
}

func (b *builder) saSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: b.ns}
}

func authenticatedSubject() []rbacv1.Subject {
	return []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:authenticated"}}
}

// userRoles are the ClusterRoles for users: default (every authenticated user),
// admin, edit and view (aggregated into the built-in roles), instancetype view
// and migrate.
func (b *builder) userRoles() {
	vmiGet := res("virtualmachineinstances/console", "virtualmachineinstances/vnc", "virtualmachineinstances/vnc/screenshot",
		"virtualmachineinstances/portforward", "virtualmachineinstances/guestosinfo", "virtualmachineinstances/userlist",
		"virtualmachineinstances/filesystemlist", "virtualmachineinstances/usbredir",
		"virtualmachineinstances/sev/fetchcertchain", "virtualmachineinstances/sev/querylaunchmeasurement")
	vmiUpdate := res("virtualmachineinstances/pause", "virtualmachineinstances/unpause", "virtualmachineinstances/addvolume",
		"virtualmachineinstances/removevolume", "virtualmachineinstances/freeze", "virtualmachineinstances/unfreeze",
		"virtualmachineinstances/softreboot", "virtualmachineinstances/reset",
		"virtualmachineinstances/sev/setupsession", "virtualmachineinstances/sev/injectlaunchsecret")
	vmGet := res("virtualmachines/expand-spec", "virtualmachines/objectgraph")
	vmUpdate := res("virtualmachines/start", "virtualmachines/stop", "virtualmachines/restart", "virtualmachines/addvolume",
		"virtualmachines/removevolume", "virtualmachines/memorydump", "virtualmachines/removememorydump",
		"virtualmachines/evacuate/cancel")
	kubevirtRes := res("virtualmachines", "virtualmachineinstances", "virtualmachineinstancepresets", "virtualmachineinstancereplicasets")
	namespaced := []rbacv1.PolicyRule{
		rule(groupSnapshot, res("virtualmachinesnapshots", "virtualmachinesnapshotcontents", "virtualmachinerestores")),
		rule(groupExport, res("virtualmachineexports")),
		rule(groupClone, res("virtualmachineclones")),
		rule(groupBackup, res("virtualmachinebackups", "virtualmachinebackuptrackers")),
		rule(groupInstancetype, res("virtualmachineinstancetypes", "virtualmachinepreferences")),
		rule(groupPool, res("virtualmachinepools")),
	}
	withVerbs := func(rules []rbacv1.PolicyRule, verbs []string) []rbacv1.PolicyRule {
		out := make([]rbacv1.PolicyRule, len(rules))
		for i, r := range rules {
			out[i] = rule(r.APIGroups[0], r.Resources, verbs...)
		}
		return out
	}
	clusterRead := []rbacv1.PolicyRule{
		rule(groupInstancetype, res("virtualmachineclusterinstancetypes", "virtualmachineclusterpreferences"), verbsRead...),
		rule(groupMigrations, res("migrationpolicies"), verbsRead...),
	}
	editRules := append([]rbacv1.PolicyRule{
		rule(groupSubresources, vmiGet, "get"),
		rule(groupSubresources, vmiUpdate, "update"),
		rule(groupSubresources, vmGet, "get"),
		rule(groupSubresources, vmUpdate, "update"),
		rule(groupKubeVirt, kubevirtRes, verbsAll...),
		rule(groupKubeVirt, res("virtualmachineinstancemigrations"), verbsRead...),
	}, append(withVerbs(namespaced, verbsAll), clusterRead...)...)
	viewRules := append([]rbacv1.PolicyRule{
		rule(groupSubresources, res("virtualmachineinstances/guestosinfo", "virtualmachineinstances/userlist",
			"virtualmachineinstances/filesystemlist"), "get"),
		rule(groupSubresources, vmGet, "get"),
		rule(groupKubeVirt, append(kubevirtRes, "virtualmachineinstancemigrations"), verbsRead...),
	}, append(withVerbs(namespaced, verbsRead), clusterRead...)...)

	roles := []struct {
		name   string
		labels map[string]string
		rules  []rbacv1.PolicyRule
	}{
		{"kubevirt.io:default", nil, []rbacv1.PolicyRule{
			rule(groupSubresources, res("version", "guestfs"), "get", "list"),
			rule(groupSubresources, res("expand-vm-spec"), "update"),
		}},
		{"kubevirt.io:admin", map[string]string{aggregateToAdmin: "true"}, editRules},
		{"kubevirt.io:edit", map[string]string{aggregateToEdit: "true"}, editRules},
		{"kubevirt.io:view", map[string]string{aggregateToView: "true"}, viewRules},
		{"instancetype.kubevirt.io:view", nil, clusterRead[:1]},
		{"kubevirt.io:migrate", nil, []rbacv1.PolicyRule{
			rule(groupKubeVirt, res("virtualmachineinstancemigrations"), verbsAll...),
			rule(groupSubresources, res("virtualmachines/migrate"), "update"),
		}},
	}
	for _, r := range roles {
		b.add(&rbacv1.ClusterRole{ObjectMeta: meta(r.name, "", r.labels), Rules: copyRules(r.rules)})
	}
	for _, name := range []string{"kubevirt.io:default", "instancetype.kubevirt.io:view"} {
		b.add(&rbacv1.ClusterRoleBinding{
			ObjectMeta: meta(name, "", nil),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   authenticatedSubject(),
		})
	}
}

// copyRules gives every role its own rules, so no two objects share memory.
func copyRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, len(rules))
	for i := range rules {
		rules[i].DeepCopyInto(&out[i])
	}
	return out
}
