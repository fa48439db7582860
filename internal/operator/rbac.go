package operator

// The operator's permissions, generated into config/rbac/role.yaml by
// `make generate`: a ClusterRole for cluster-scoped kinds and reads across
// namespaces, a Role in the operator's namespace for every namespaced write. Each
// grant is one the code makes (the install e2e suite checks them against the API
// calls in its audit logs). The roles it may escalate and bind are named in
// zz_generated.rbac.go, from the install strategies.
//
// Writes go by server-side apply (patch, which creates a missing object), so
// update is granted only where an object is replaced whole (virt-api's
// Deployment, whose repeated container port apply cannot express); reads go
// through the cache (list and watch), so get only where the code reads live.
//
// Cluster-scoped kinds of the install strategy:
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles;clusterrolebindings,verbs=list;watch;create;patch;delete
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations;mutatingwebhookconfigurations;validatingadmissionpolicies;validatingadmissionpolicybindings,verbs=list;watch;create;patch;delete
// +kubebuilder:rbac:groups=apiregistration.k8s.io,resources=apiservices,verbs=list;watch;create;patch;delete
// +kubebuilder:rbac:groups=security.openshift.io,resources=securitycontextconstraints,verbs=get;list;watch;create;patch;delete
// Cluster instancetypes and preferences are read with one uncached list per kind.
// +kubebuilder:rbac:groups=instancetype.kubevirt.io,resources=virtualmachineclusterinstancetypes;virtualmachineclusterpreferences,verbs=list;create;patch;delete
//
// The ServiceMonitor goes to the namespace monitoring is found in, which no
// static Role can name; stale monitoring objects and RBAC are looked for there.
// +kubebuilder:rbac:groups=monitoring.coreos.com,resources=servicemonitors,verbs=get;list;create;patch;delete
// +kubebuilder:rbac:groups=monitoring.coreos.com,resources=prometheusrules,verbs=list
// Roles and RoleBindings outside the operator's namespace (kube-system's,
// the monitoring namespace's) are cached where they carry the managed label.
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=list;watch
// The monitoring ServiceAccount is watched in every namespace (field-selected by
// its name), the operator's own namespace's accounts as managed objects.
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=list;watch
//
// Namespaced writes, in the operator's namespace only:
// +kubebuilder:rbac:groups="",namespace=kubevirt,resources=serviceaccounts;services;secrets;configmaps,verbs=list;watch;create;patch;delete
// +kubebuilder:rbac:groups=apps,namespace=kubevirt,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// virt-handler's DaemonSet is read uncached once as a rollout starts (its running template's TLS flags).
// +kubebuilder:rbac:groups=apps,namespace=kubevirt,resources=daemonsets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=policy,namespace=kubevirt,resources=poddisruptionbudgets,verbs=list;watch;create;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,namespace=kubevirt,resources=roles;rolebindings,verbs=list;watch;create;patch;delete
// +kubebuilder:rbac:groups=monitoring.coreos.com,namespace=kubevirt,resources=prometheusrules,verbs=create;patch;delete
// +kubebuilder:rbac:groups=route.openshift.io,namespace=kubevirt,resources=routes;routes/custom-host,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=batch,namespace=kubevirt,resources=jobs,verbs=list;watch;create;delete
// The pods of the operator's namespace are cached (virt-handler's, the pre-pull's).
// +kubebuilder:rbac:groups="",namespace=kubevirt,resources=pods,verbs=list;watch
//
// Nodes: the canary's and the pre-pull's choice of nodes.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=list;watch
// The leader election records its transitions as core Events, in its namespace.
// +kubebuilder:rbac:groups="",namespace=kubevirt,resources=events,verbs=create
