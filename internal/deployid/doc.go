// Package deployid owns the deployment config — every input that shapes an object
// the operator creates or patches — and its deployment ID, the SHA-1 of that config.
//
// The ID decides whether anything rolls out: a new ID means a new install strategy,
// new install-strategy-identifier annotations on every pod template, and therefore a
// rollout of every component. Upstream built the ID by reflection and silently
// dropped whole kinds of fields (component images, customizeComponents, placement),
// so users changed their cluster and nothing happened. Here the ID is
// complete by construction:
//
//   - Config is plain typed data; the ID hashes its canonical JSON (encoding/json
//     writes every field, then the keys of every object are sorted), so no field
//     can be skipped by a hand-written walker.
//   - FromKubeVirt is the only place that decides which KubeVirt spec inputs go in.
//     Tests enumerate KubeVirtSpec by reflection and require every field to be
//     classified below, and walk Config to prove every leaf changes the ID.
//
// # What is in the ID
//
// Everything that changes an object the operator creates or patches, i.e. the
// generated install strategy and what is applied on top of it:
//
//	namespace, registry, image prefix, KubeVirt version   spec.imageRegistry, spec.imageTag, operator image
//	every component image                                 VIRT_*_IMAGE, GS_IMAGE, PR_HELPER_IMAGE, SIDECAR_SHIM_IMAGE
//	pass-through env vars                                 KV_IO_EXTRA_ENV_*
//	customizeComponents patches and flags                 spec.customizeComponents
//	infra and workloads placement and replicas            spec.infra, spec.workloads
//	product name, version, component (labels)             spec.product*
//	image pull policy and pull secrets                    spec.imagePullPolicy, spec.imagePullSecrets
//	monitoring settings                                   spec.monitorNamespace, serviceMonitorNamespace, monitorAccount
//	uninstall strategy                                    spec.uninstallStrategy
//	synchronization port                                  spec.synchronizationPort
//	feature gates that add or remove components           spec.configuration.developerConfiguration,
//	                                                      virtTemplateDeployment, roleAggregationStrategy: the
//	                                                      §2.5 keys plus DecentralizedLiveMigration (the
//	                                                      sync-controller), ContainerPathVolumes (a webhook)
//	                                                      and VMExport where the release's operator writes
//	                                                      the export proxy only with it (v1.8)
//	the migration network                                 spec.configuration.migrations.network
//	virt-template's TLS flags                             spec.configuration.tlsConfiguration
//
// # What is out of the ID
//
// Settings that components read live from the CR and that change no created object:
// spec.workloadUpdateStrategy, spec.certificateRotateStrategy and the rest of
// spec.configuration (e.g. migrations.parallelMigrationsPerCluster, feature gates
// that only change component behaviour). Editing them must never restart a pod.
//
// # Normalisation
//
// Map and key order never change the ID. An optional string that is "" serialises
// exactly as an absent one: typed fields are omitted when empty, and
// additionalProperties entries with an empty value are dropped before hashing. For
// that reason the feature-gate presence keys carry the value "true" (upstream writes
// "" and reads only presence, so both readers agree). Empty customizeComponents,
// infra and workloads blocks are dropped by FromKubeVirt, so `infra: {}` and no infra
// give the same ID; an empty tlsConfiguration is kept, as it means no TLS flags where
// none means upstream's default. Slice order is kept: the order of patches,
// tolerations, pull secrets and ciphers changes the created objects.
//
// # Upstream's ID
//
// UpstreamTargetOf computes, apart from all of the above, the target KubeVirt's
// own v1.8 or v1.9 operator computes for a CR: its version, registry and
// deployment ID, quirks included (every spec field name hashed, structured
// fields by type only). `virt-operator handback` stamps the certificates with
// it, so that upstream's operator, taking the install back, rewrites none.
package deployid
