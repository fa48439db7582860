package generate

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/virt-operator/virt-operator/internal/metadata"
)

type op = admissionregistrationv1.OperationType

const (
	opCreate = admissionregistrationv1.Create
	opUpdate = admissionregistrationv1.Update
	opDelete = admissionregistrationv1.Delete
)

// hook is one admission webhook served by virt-api (or the operator).
type hook struct {
	name, path, group string
	resources         []string
	ops               []op
	// onlyNamed limits the webhook to objects whose name has this prefix (a CEL
	// match condition), so an unavailable virt-api blocks only KubeVirt's pods.
	onlyNamed string
	// podLabel limits the webhook to pods with kubevirt.io=<podLabel>.
	podLabel string
}

var createUpdate = []op{opCreate, opUpdate}

func virtAPIValidators() []hook {
	return []hook{
		{name: "virt-launcher-eviction-interceptor.kubevirt.io", path: "/launcher-eviction-validate", resources: res("pods/eviction"), ops: []op{opCreate}, onlyNamed: "virt-launcher-"},
		{name: "hotplug-pod-eviction-interceptor.kubevirt.io", path: "/hotplug-pod-eviction-validate", resources: res("pods/eviction"), ops: []op{opCreate}, onlyNamed: "hp-volume-"},
		{name: "virtualmachineinstances-create-validator.kubevirt.io", path: "/virtualmachineinstances-validate-create", group: groupKubeVirt, resources: res("virtualmachineinstances"), ops: []op{opCreate}},
		{name: "virtualmachineinstances-update-validator.kubevirt.io", path: "/virtualmachineinstances-validate-update", group: groupKubeVirt, resources: res("virtualmachineinstances"), ops: []op{opUpdate}},
		{name: "virtualmachine-validator.kubevirt.io", path: "/virtualmachines-validate", group: groupKubeVirt, resources: res("virtualmachines"), ops: createUpdate},
		{name: "virtualmachinereplicaset-validator.kubevirt.io", path: "/virtualmachinereplicaset-validate", group: groupKubeVirt, resources: res("virtualmachineinstancereplicasets"), ops: createUpdate},
		{name: "virtualmachinepool-validator.kubevirt.io", path: "/virtualmachinepool-validate", group: groupPool, resources: res("virtualmachinepools"), ops: createUpdate},
		{name: "virtualmachinepreset-validator.kubevirt.io", path: "/vmipreset-validate", group: groupKubeVirt, resources: res("virtualmachineinstancepresets"), ops: createUpdate},
		{name: "migration-create-validator.kubevirt.io", path: "/migration-validate-create", group: groupKubeVirt, resources: res("virtualmachineinstancemigrations"), ops: []op{opCreate}},
		{name: "migration-update-validator.kubevirt.io", path: "/migration-validate-update", group: groupKubeVirt, resources: res("virtualmachineinstancemigrations"), ops: []op{opUpdate}},
		{name: "virtualmachinesnapshot-validator.snapshot.kubevirt.io", path: "/virtualmachinesnapshots-validate", group: groupSnapshot, resources: res("virtualmachinesnapshots"), ops: createUpdate},
		{name: "virtualmachinerestore-validator.snapshot.kubevirt.io", path: "/virtualmachinerestores-validate", group: groupSnapshot, resources: res("virtualmachinerestores"), ops: createUpdate},
		{name: "virtualmachinebackup-validator.backup.kubevirt.io", path: "/virtualmachinebackups-validate", group: groupBackup, resources: res("virtualmachinebackups"), ops: createUpdate},
		{name: "virtualmachinebackuptracker-validator.backup.kubevirt.io", path: "/virtualmachinebackuptrackers-validate", group: groupBackup, resources: res("virtualmachinebackuptrackers"), ops: createUpdate},
		{name: "virtualmachineexport-validator.export.kubevirt.io", path: "/virtualmachineexports-validate", group: groupExport, resources: res("virtualmachineexports"), ops: createUpdate},
		{name: "virtualmachineinstancetype-validator.instancetype.kubevirt.io", path: "/virtualmachineinstancetypes-validate", group: groupInstancetype, resources: res("virtualmachineinstancetypes"), ops: createUpdate},
		{name: "virtualmachineclusterinstancetype-validator.instancetype.kubevirt.io", path: "/virtualmachineclusterinstancetypes-validate", group: groupInstancetype, resources: res("virtualmachineclusterinstancetypes"), ops: createUpdate},
		{name: "virtualmachinepreference-validator.instancetype.kubevirt.io", path: "/virtualmachinepreferences-validate", group: groupInstancetype, resources: res("virtualmachinepreferences"), ops: createUpdate},
		{name: "virtualmachineclusterpreference-validator.instancetype.kubevirt.io", path: "/virtualmachineclusterpreferences-validate", group: groupInstancetype, resources: res("virtualmachineclusterpreferences"), ops: createUpdate},
		{name: "kubevirt-crd-status-validator.kubevirt.io", path: "/status-validate", group: groupKubeVirt, ops: []op{opUpdate},
			resources: res("virtualmachines/status", "virtualmachineinstancereplicasets/status", "virtualmachineinstancemigrations/status")},
		{name: "migration-policy-validator.migrations.kubevirt.io", path: "/migration-policy-validate", group: groupMigrations, resources: res("migrationpolicies"), ops: createUpdate},
		{name: "vm-clone-validator.kubevirt.io", path: "/vm-clone-validate", group: groupClone, resources: res("virtualmachineclones"), ops: createUpdate},
		{name: "plugin-validator.plugin.kubevirt.io", path: "/plugin-validate", group: groupPlugin, resources: res("plugins"), ops: createUpdate},
	}
}

func virtAPIMutators() []hook {
	return []hook{
		{name: "virtualmachines-mutator.kubevirt.io", path: "/virtualmachines-mutate", group: groupKubeVirt, resources: res("virtualmachines"), ops: createUpdate},
		{name: "virtualmachineinstances-mutator.kubevirt.io", path: "/virtualmachineinstances-mutate", group: groupKubeVirt, resources: res("virtualmachineinstances"), ops: createUpdate},
		{name: "migrations-mutator.kubevirt.io", path: "/migration-mutate-create", group: groupKubeVirt, resources: res("virtualmachineinstancemigrations"), ops: []op{opCreate}},
		{name: "virtualmachineclones-mutator.kubevirt.io", path: "/vm-clone-mutate-create", group: groupClone, resources: res("virtualmachineclones"), ops: []op{opCreate}},
	}
}

func operatorValidators() []hook {
	kv := func(name, path string, o op) hook {
		return hook{name: name, path: path, group: groupKubeVirt, resources: res("kubevirts"), ops: []op{o}}
	}
	return []hook{
		kv("kubevirt-validator.kubevirt.io", "/kubevirt-validate-delete", opDelete),
		kv("kubevirt-update-validator.kubevirt.io", "/kubevirt-validate-update", opUpdate),
		kv("kubevirt-create-validator.kubevirt.io", "/kubevirt-validate-create", opCreate),
	}
}

// webhooks: virt-operator's and virt-api's. caBundle is filled at apply time.
func (b *builder) webhooks() {
	b.add(b.validating("virt-operator-validator", svcOperatorWebhook, secretOperatorCerts, operatorValidators()))
	b.add(b.validating("virt-api-validator", svcAPI, secretAPICerts, virtAPIValidators()))
	b.add(b.mutating("virt-api-mutator", virtAPIMutators()))
	// Synced only with FG ContainerPathVolumes; the apply engine decides.
	b.add(b.mutating("virt-launcher-pod-mutator", []hook{{
		name: "virt-launcher-pod-mutator.kubevirt.io", path: "/virt-launcher-pod-mutate",
		resources: res("pods"), ops: []op{opCreate}, podLabel: virtLauncher,
	}}))
}

func (b *builder) validating(name, service, secret string, hooks []hook) *admissionregistrationv1.ValidatingWebhookConfiguration {
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: webhookMeta(name, secret)}
	for _, h := range hooks {
		c := b.common(h, service)
		cfg.Webhooks = append(cfg.Webhooks, admissionregistrationv1.ValidatingWebhook{
			Name: c.name, ClientConfig: c.client, Rules: c.rules, FailurePolicy: c.failure, SideEffects: c.sideEffects,
			TimeoutSeconds: c.timeout, AdmissionReviewVersions: c.versions, ObjectSelector: c.objects, MatchConditions: c.conditions,
		})
	}
	return cfg
}

func (b *builder) mutating(name string, hooks []hook) *admissionregistrationv1.MutatingWebhookConfiguration {
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: webhookMeta(name, secretAPICerts)}
	for _, h := range hooks {
		c := b.common(h, svcAPI)
		cfg.Webhooks = append(cfg.Webhooks, admissionregistrationv1.MutatingWebhook{
			Name: c.name, ClientConfig: c.client, Rules: c.rules, FailurePolicy: c.failure, SideEffects: c.sideEffects,
			TimeoutSeconds: c.timeout, AdmissionReviewVersions: c.versions, ObjectSelector: c.objects, MatchConditions: c.conditions,
		})
	}
	return cfg
}

func webhookMeta(name, secret string) metav1.ObjectMeta {
	m := meta(name, "", nil)
	m.Annotations = map[string]string{metadata.WebhookCertificateSecretAnnotation: secret}
	return m
}

// webhookCommon is what validating and mutating webhooks share.
type webhookCommon struct {
	name        string
	client      admissionregistrationv1.WebhookClientConfig
	rules       []admissionregistrationv1.RuleWithOperations
	failure     *admissionregistrationv1.FailurePolicyType
	sideEffects *admissionregistrationv1.SideEffectClass
	timeout     *int32
	versions    []string
	objects     *metav1.LabelSelector
	conditions  []admissionregistrationv1.MatchCondition
}

func (b *builder) common(h hook, service string) webhookCommon {
	version := "*"
	if h.group == "" {
		version = "v1"
	}
	c := webhookCommon{
		name: h.name,
		client: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
			Namespace: b.ns, Name: service, Path: ptr.To(h.path), Port: ptr.To(int32(portService)),
		}},
		rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: append([]op(nil), h.ops...),
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{h.group}, APIVersions: []string{version}, Resources: append([]string(nil), h.resources...),
			},
		}},
		failure:     ptr.To(admissionregistrationv1.Fail),
		sideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
		timeout:     ptr.To(int32(10)),
		versions:    []string{"v1"},
	}
	if h.onlyNamed != "" {
		c.conditions = []admissionregistrationv1.MatchCondition{{
			Name: "kubevirt-pods-only", Expression: `request.name.startsWith("` + h.onlyNamed + `")`,
		}}
	}
	if h.podLabel != "" {
		c.objects = &metav1.LabelSelector{MatchLabels: map[string]string{metadata.AppLabel: h.podLabel}}
	}
	return c
}
