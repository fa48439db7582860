// Package generate builds the install strategy of one deployment config: a pure
// function from the config and two facts about the cluster (the monitoring
// namespace that was found, and whether the OpenShift APIs are served) to every
// object the operator installs for that deployment ID.
//
// The output is deterministic — no timestamps, no randomness, every list sorted
// by namespace and name — so generating twice for the same input gives equal
// strategies and equal ConfigMap payloads. Every object carries its TypeMeta, the
// operator's labels and the three install-strategy annotations
// (metadata.Inject); pod templates carry them too (metadata.InjectPodTemplate).
//
// Names, labels and counts follow upstream KubeVirt so an admin finds the objects
// they know: 19 CRDs, 5 ServiceAccounts, 11 ClusterRoles, 8 ClusterRoleBindings,
// 5 Roles and RoleBindings (6 with monitoring), 4 Services, the Deployments
// virt-api, virt-controller, virt-exportproxy and (with DecentralizedLiveMigration)
// virt-synchronization-controller, the DaemonSet virt-handler, 2 validating and
// 2 mutating webhook configurations, 2 APIServices, 14 certificate Secrets, 4 CA
// ConfigMaps (each once; upstream lists them twice), the node-restriction
// ValidatingAdmissionPolicy and binding, the ServiceMonitor and PrometheusRule
// (with a monitoring namespace) and the SCCs and Route (on OpenShift).
//
// Beyond upstream's list, the strategy carries the PriorityClass
// kubevirt-cluster-critical that every component pod names (priorityclass.go).
//
// One file per concern: crds.go, rbac.go and roles.go, services.go, pods.go
// (what all component pods share), deployments.go, daemonset.go, webhooks.go,
// apiservices.go, certificates.go, monitoring.go, openshift.go and
// admissionpolicy.go. yaml.go renders a strategy as kubectl-ready YAML.
//
// # Decided later, not here
//
// The strategy is the payload of one deployment ID, so everything that is the
// same for every cluster running that ID is generated here, and what depends on
// the live cluster is applied later by the apply engine:
//
//   - placement and replicas from spec.infra and spec.workloads, and
//     spec.customizeComponents (patches and flags) — they are in the config and in
//     the ID, but they are applied on top of the strategy's objects;
//   - certificates and CA bundles: the Secrets are shells of type
//     kubernetes.io/tls with empty tls.crt and tls.key (the API server requires the
//     keys), the CA ConfigMaps have no data, and webhook configurations and
//     APIServices have no caBundle; the operator fills them at apply time;
//   - which conditional objects are synced: the virt-launcher-pod-mutator webhook
//     only with ContainerPathVolumes, the ServiceMonitor and PrometheusRule only
//     when their APIs are served, the admission policy only when its API is served,
//     and PodDisruptionBudgets are created for Deployments with 2 or more replicas;
//   - virt-api's replica count, computed from the number of nodes.
//
// # Left out for now
//
// The common instancetypes and preferences (upstream's 65 ClusterInstancetypes and
// 54 ClusterPreferences), the virt-template bundle (FG Template) and the four
// plugin admission policies (FG Plugins) are not generated yet; the README's
// compatibility table lists them.
package generate
