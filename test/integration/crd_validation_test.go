package integration

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// The KubeVirt CRD must refuse bad input itself, naming the field, so a typo
// never reaches the operator.
func TestKubeVirtCRDRejectsBadInput(t *testing.T) {
	ctx := context.Background()
	ns := createNamespace(t, ctx, "crd-validation")
	cases := []struct {
		name      string
		spec      string
		wantField string
	}{
		{"batchEvictionSize below 1", `workloadUpdateStrategy: {batchEvictionSize: 0}`, "spec.workloadUpdateStrategy.batchEvictionSize"},
		{"unknown workload update method", `workloadUpdateStrategy: {workloadUpdateMethods: [Reboot]}`, "spec.workloadUpdateStrategy.workloadUpdateMethods[0]"},
		{"batchEvictionInterval not a duration", `workloadUpdateStrategy: {batchEvictionInterval: "one minute"}`, "spec.workloadUpdateStrategy.batchEvictionInterval"},
		{"unknown imagePullPolicy", `imagePullPolicy: Sometimes`, "spec.imagePullPolicy"},
		{"unknown uninstallStrategy", `uninstallStrategy: DeleteEverything`, "spec.uninstallStrategy"},
		{"unknown customizeComponents patch type", `customizeComponents: {patches: [{resourceName: virt-api, resourceType: Deployment, patch: "{}", type: xml}]}`, "spec.customizeComponents.patches[0].type"},
		{"zero infra replicas", `infra: {replicas: 0}`, "spec.infra.replicas"},
		{"a minimum TLS version that is none", `configuration: {tlsConfiguration: {minTLSVersion: TLS1.2}}`, "spec.configuration.tlsConfiguration.minTLSVersion"},
		{"zero canary size", `handlerRollout: {canarySize: 0}`, "spec.handlerRollout.canarySize"},
		{"fast step not a count or percentage", `handlerRollout: {fastStep: "ten"}`, "spec.handlerRollout.fastStep"},
		{"bake time not a duration", `handlerRollout: {bakeTime: "a while"}`, "spec.handlerRollout.bakeTime"},
		{"maxCrashing above 100%", `handlerRollout: {maxCrashing: "150%"}`, "spec.handlerRollout.maxCrashing"},
		{"a migration probe without a selector", `handlerRollout: {dataPlaneChecks: {migrationProbe: {timeout: 5m}}}`, "spec.handlerRollout.dataPlaneChecks.migrationProbe.vmiSelector"},
		{"a migration probe selecting everything", `handlerRollout: {dataPlaneChecks: {migrationProbe: {vmiSelector: {}}}}`, "spec.handlerRollout.dataPlaneChecks.migrationProbe.vmiSelector: Invalid value: must select something"},
		{"a migration probe timeout not a duration", `handlerRollout: {dataPlaneChecks: {migrationProbe: {vmiSelector: {matchLabels: {a: b}}, timeout: 5min}}}`, "spec.handlerRollout.dataPlaneChecks.migrationProbe.timeout"},
		{"whenNoneEligible neither Hold nor Pass", `handlerRollout: {dataPlaneChecks: {migrationProbe: {vmiSelector: {matchLabels: {a: b}}, whenNoneEligible: Skip}}}`, "spec.handlerRollout.dataPlaneChecks.migrationProbe.whenNoneEligible"},
		{"both updaters", `{workloadUpdateStrategy: {workloadUpdateMethods: [Evict]}, workloadUpdates: {methods: [LiveMigrate]}}`, "spec.workloadUpdates configures virt-operator's workload updater and cannot be set while spec.workloadUpdateStrategy.workloadUpdateMethods lists a method"},
		{"unknown method of ours", `workloadUpdates: {methods: [Reboot]}`, "spec.workloadUpdates.methods[0]"},
		{"zero per-node cap", `workloadUpdates: {maxMigrationsPerNode: 0}`, "spec.workloadUpdates.maxMigrationsPerNode"},
		{"maxFailures beyond what KubeVirt keeps", `workloadUpdates: {maxFailures: 6}`, "spec.workloadUpdates.maxFailures"},
		{"retryBackoff not a duration", `workloadUpdates: {retryBackoff: soon}`, "spec.workloadUpdates.retryBackoff"},
		{"window start not HH:MM", `workloadUpdates: {windows: [{start: "25:00", duration: 1h}]}`, "spec.workloadUpdates.windows[0].start"},
		{"window without a duration", `workloadUpdates: {windows: [{start: "01:00"}]}`, "spec.workloadUpdates.windows[0].duration"},
		{"window on a day that is none", `workloadUpdates: {windows: [{start: "01:00", duration: 1h, days: [Caturday]}]}`, "spec.workloadUpdates.windows[0].days[0]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			kv := kubeVirtFromYAML(t, ns, c.spec)
			err := k8s.Create(ctx, kv)
			if err == nil {
				t.Fatalf("the API server accepted spec %q", c.spec)
			}
			if !strings.Contains(err.Error(), c.wantField) {
				t.Fatalf("error does not name %s: %v", c.wantField, err)
			}
		})
	}
}

func TestKubeVirtCRDAcceptsValidInput(t *testing.T) {
	ctx := context.Background()
	ns := createNamespace(t, ctx, "crd-valid")
	kv := kubeVirtFromYAML(t, ns, `
workloadUpdateStrategy: {workloadUpdateMethods: [LiveMigrate, Evict], batchEvictionSize: 1, batchEvictionInterval: 1m30s}
imagePullPolicy: Always
uninstallStrategy: RemoveWorkloads
handlerRollout: {canarySize: 2, fastStep: 25%, bakeTime: 30s, progressDeadline: 15m}
configuration: {someFutureSetting: {kept: true}, tlsConfiguration: {minTLSVersion: VersionTLS13, ciphers: [TLS_AES_128_GCM_SHA256]}}`)
	if err := k8s.Create(ctx, kv); err != nil {
		t.Fatalf("valid KubeVirt refused: %v", err)
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(kv.GroupVersionKind())
	if err := k8s.Get(ctx, clientKey(kv), got); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedMap(got.Object, "spec", "configuration", "someFutureSetting"); !found {
		t.Fatalf("unknown configuration field was pruned: %v", got.Object["spec"])
	}
	ours := kubeVirtFromYAML(t, ns, `
workloadUpdates:
  methods: [LiveMigrate, Evict]
  maxMigrationsPerNode: 2
  maxMigrationsPerCluster: 10
  retryBackoff: 30s
  maxRetryBackoff: 10m
  maxFailures: 5
  evictAfterMaxFailures: true
  paused: true
  windows: [{days: [Saturday, Sunday], start: "02:00", duration: 4h, timeZone: Europe/Berlin}]`)
	if err := k8s.Create(ctx, ours); err != nil {
		t.Fatalf("valid spec.workloadUpdates refused: %v", err)
	}
}

func kubeVirtFromYAML(t *testing.T, namespace, spec string) *unstructured.Unstructured {
	t.Helper()
	specMap := map[string]any{}
	if err := yaml.Unmarshal([]byte(spec), &specMap); err != nil {
		t.Fatalf("test spec: %v", err)
	}
	kv := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubevirt.io/v1",
		"kind":       "KubeVirt",
		"metadata":   map[string]any{"generateName": "kv-", "namespace": namespace},
		"spec":       specMap,
	}}
	return kv
}

func clientKey(o *unstructured.Unstructured) client.ObjectKey {
	return client.ObjectKey{Namespace: o.GetNamespace(), Name: o.GetName()}
}
