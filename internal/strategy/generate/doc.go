// Package generate builds the install strategy of one deployment config from the
// data of its KubeVirt release (internal/release): a pure function from the config
// and the monitoring namespace that was found to every object that release's own
// operator would install for it, field for field.
//
// Generate picks the release by the config's KubeVirt version (its minor line) and
// renders the release's files with a small view of the config (view.go): the
// namespaces, every image, the version label, the pull policy and the switches of
// the gates that change objects. Two changes touch every pod template and are made
// on the typed objects instead (pods.go): the image pull secrets and the operator's
// pass-through environment (KV_IO_EXTRA_ENV_*), prepended to each component's own.
// The CRDs get the release's generated schemas (crds.go).
//
// What the files hold and when (view.go has the switches):
//
//	always             crds.yaml + schemas, core.yaml, instancetypes.yaml, preferences.yaml
//	monitoring found   monitoring.yaml (its PrometheusRule unless VMStatsCollector is on)
//	gate Plugins       plugins.yaml
//	gate Template      virt-template.yaml
//
// As upstream, the strategy always holds the OpenShift objects (SCCs, the exportproxy
// Route); the operator writes them only where their APIs are served. Nothing here
// depends on the live cluster beyond the monitoring namespace: the operator's labels
// and install-strategy annotations, certificates and CA bundles, customizeComponents,
// placement, PodDisruptionBudgets and virt-api's replica count are applied later
// (internal/apply, internal/certs), on every strategy alike, including one a
// release's own operator generated.
//
// The output is deterministic: the same input gives the same objects in the same
// order (the order of the release files).
package generate
