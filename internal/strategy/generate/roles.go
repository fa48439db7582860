package generate

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

// components lists each component's identity and permissions: cluster-wide rules
// in its ClusterRole, rules on the KubeVirt namespace in its Role.
func (b *builder) components() []component {
	readConfig := []rbacv1.PolicyRule{
		rule("", res("configmaps"), verbsRead...),
		rule("", res("secrets"), verbsRead...),
	}
	return []component{
		{sa: saAPIServer, clusterRules: b.apiServerRules(), nsRules: copyRules(readConfig)},
		{sa: saController, clusterRules: b.controllerRules(), nsRules: append(copyRules(readConfig),
			rule("", res("configmaps"), "create", "update", "patch", "delete"),
			leasesRule(),
			rule("route.openshift.io", res("routes"), verbsRead...),
		)},
		{sa: saHandler, clusterRules: []rbacv1.PolicyRule{
			rule("", res("nodes"), "get", "list", "watch", "update", "patch"),
			eventsRule(),
			rule("", res("pods"), verbsRead...),
			rule("", res("persistentvolumeclaims", "persistentvolumes"), "get"),
			rule(groupKubeVirt, res("virtualmachineinstances"), "get", "list", "watch", "update", "patch"),
			rule(groupKubeVirt, res("virtualmachineinstancemigrations"), "get", "list", "watch", "patch"),
			rule(groupKubeVirt, res("kubevirts"), verbsRead...),
			rule(groupMigrations, res("migrationpolicies"), verbsRead...),
			rule(groupCDI, res("datavolumes"), "get"),
		}, nsRules: copyRules(readConfig)},
		{sa: saExportProxy, clusterRules: []rbacv1.PolicyRule{
			rule(groupExport, res("virtualmachineexports"), verbsRead...),
		}, nsRules: copyRules(readConfig)},
		{sa: saSyncCtrl, clusterRules: []rbacv1.PolicyRule{
			rule(groupKubeVirt, res("virtualmachineinstances", "virtualmachineinstancemigrations"), "get", "list", "watch", "update", "patch"),
			rule(groupKubeVirt, res("virtualmachines"), verbsRead...),
			rule(groupKubeVirt, res("kubevirts"), verbsRead...),
			rule(groupMigrations, res("migrationpolicies"), verbsRead...),
			rule("", res("pods"), verbsRead...),
			eventsRule(),
		}, nsRules: append(copyRules(readConfig), leasesRule())},
	}
}

func (b *builder) apiServerRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		rule("", res("pods"), "get", "list", "watch", "patch", "delete"),
		rule("", res("configmaps"), verbsRead...), // extension-apiserver-authentication in kube-system
		rule("", res("persistentvolumeclaims", "namespaces", "limitranges", "nodes"), verbsRead...),
		rule("authorization.k8s.io", res("subjectaccessreviews"), "create"),
		rule("authentication.k8s.io", res("tokenreviews"), "create"),
		rule("apiextensions.k8s.io", res("customresourcedefinitions"), verbsRead...),
		rule(groupKubeVirt, res("virtualmachines", "virtualmachineinstances"), "get", "list", "watch", "patch", "update"),
		rule(groupKubeVirt, res("virtualmachines/status"), "patch"),
		rule(groupKubeVirt, res("virtualmachineinstancemigrations"), "create", "get", "list", "watch"),
		rule(groupKubeVirt, res("virtualmachineinstancepresets", "virtualmachineinstancereplicasets", "kubevirts"), verbsRead...),
		rule(groupSnapshot, res("virtualmachinesnapshots", "virtualmachinerestores", "virtualmachinesnapshotcontents"), verbsRead...),
		rule(groupExport, res("virtualmachineexports"), verbsRead...),
		rule(groupClone, res("virtualmachineclones"), verbsRead...),
		rule(groupBackup, res("virtualmachinebackups", "virtualmachinebackuptrackers"), verbsRead...),
		rule(groupPool, res("virtualmachinepools"), verbsRead...),
		rule(groupMigrations, res("migrationpolicies"), verbsRead...),
		rule(groupPlugin, res("plugins"), verbsRead...),
		rule(groupInstancetype, res("virtualmachineinstancetypes", "virtualmachineclusterinstancetypes",
			"virtualmachinepreferences", "virtualmachineclusterpreferences"), verbsRead...),
		rule(groupCDI, res("datasources", "datavolumes"), verbsRead...),
	}
}

func (b *builder) controllerRules() []rbacv1.PolicyRule {
	rules := []rbacv1.PolicyRule{
		rule("", res("pods", "persistentvolumeclaims", "services", "secrets", "configmaps"), verbsAll...),
		rule("", res("pods/finalizers", "persistentvolumeclaims/finalizers"), "update"),
		rule("", res("pods/eviction"), "create"),
		rule("", res("pods/status"), "patch"),
		rule("", res("nodes"), "get", "list", "watch", "update", "patch"),
		rule("", res("persistentvolumes", "namespaces", "resourcequotas", "serviceaccounts", "limitranges"), verbsRead...),
		eventsRule(),
		rule("apps", res("controllerrevisions"), verbsAll...),
		rule("apps", res("daemonsets"), verbsRead...),
		rule("policy", res("poddisruptionbudgets"), verbsAll...),
		rule("storage.k8s.io", res("storageclasses", "csidrivers"), verbsRead...),
		rule("snapshot.storage.k8s.io", res("volumesnapshots"), verbsAll...),
		rule("snapshot.storage.k8s.io", res("volumesnapshotclasses"), verbsRead...),
		rule("apiextensions.k8s.io", res("customresourcedefinitions"), verbsRead...),
		rule("authorization.k8s.io", res("subjectaccessreviews"), "create"),
		rule("networking.k8s.io", res("ingresses"), verbsRead...),
		rule("route.openshift.io", res("routes"), verbsRead...),
		rule(groupKubeVirt, res("*"), "*"),
		rule(groupSnapshot, res("*"), "*"),
		rule(groupExport, res("*"), "*"),
		rule(groupClone, res("*"), "*"),
		rule(groupBackup, res("*"), "*"),
		rule(groupPool, res("*"), "*"),
		rule(groupMigrations, res("migrationpolicies"), verbsRead...),
		rule(groupPlugin, res("plugins"), verbsRead...),
		rule(groupInstancetype, res("*"), verbsRead...),
		rule(groupSubresources, res("virtualmachines/addvolume", "virtualmachines/removevolume",
			"virtualmachineinstances/addvolume", "virtualmachineinstances/removevolume",
			"virtualmachineinstances/freeze", "virtualmachineinstances/unfreeze",
			"virtualmachineinstances/softreboot"), "update"),
		rule(groupCDI, res("datavolumes", "datasources", "dataimportcrons"), verbsAll...),
		rule(groupCDI, res("cdis", "cdiconfigs", "storageprofiles", "volumeclonesources"), verbsRead...),
	}
	// With ExternalNetResourceInjection the network plugin injects the resources,
	// so the controller does not read NetworkAttachmentDefinitions (§3.1).
	if !b.cfg.ExternalNetResourceInjection() {
		rules = append(rules, rule("k8s.cni.cncf.io", res("network-attachment-definitions"), "get"))
	}
	return rules
}

func eventsRule() rbacv1.PolicyRule { return rule("", res("events"), "create", "patch", "update") }

// leasesRule is for leader election.
func leasesRule() rbacv1.PolicyRule {
	return rule("coordination.k8s.io", res("leases"), "get", "list", "watch", "create", "update", "patch")
}
