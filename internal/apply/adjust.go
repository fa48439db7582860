package apply

import (
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// Adjustment is one change the operator makes to every release's strategy
// (builtin or delegated to its own operator) before writing it, between the
// customization and leaving out what the config switches off (Prepare): what
// it changes, why, and whose it is. docs/user/compatibility.md lists them.
//
// Two kinds. Upstream's runtime behaviour (Upstream): what upstream's operator
// does to its strategy's objects as it writes them, so that what runs at rest
// is what upstream's leaves running, not its --dump-install-strategy (which
// the strategies, ours and delegated, stay equal to). And this operator's
// deliberate differences. An adjustment that differs by release line reads the
// line's data from internal/release (release.RulesFor(cfg.KubeVirtVersion)), as
// the export proxy's gate does in Enabled; those below do not: every supported
// line's operator does the same, triggered by the strategy's own objects.
type Adjustment struct {
	Name, Reason string
	// Upstream: upstream's operator does the same; otherwise a deliberate
	// difference of this one.
	Upstream bool
	Apply    func(s *strategy.Strategy, cfg *deployid.Config)
}

// Adjustments are the changes to every release's strategy, applied in order.
var Adjustments = []Adjustment{{
	Name:     "virt-handler checks migration peers by certificate common name, and mounts no client certificate",
	Upstream: true,
	Reason: "upstream's operator writes a DaemonSet labelled kubevirt.io/supports-migration-cn-types=true whose first container has no " +
		"--migration-cn-types argument with --migration-cn-types migration appended and without the kubevirt-virt-handler-certs volume " +
		"and mount (its apply.insertTLS and unattachCertificateSecret, on create; its canary ends an upgrade the same way), in v1.7, v1.8 and v1.9. " +
		"While a rollout replaces a template that has them, the rollout carries the running template's over (internal/rollout, TLS carry-over)",
	Apply: func(s *strategy.Strategy, _ *deployid.Config) {
		for _, ds := range s.DaemonSets {
			if ds.Labels[SupportsMigrationCNTypesLabel] == "true" && len(ds.Spec.Template.Spec.Containers) > 0 && !hasMigrationCNTypes(ds) {
				c := &ds.Spec.Template.Spec.Containers[0]
				c.Args = append(c.Args, MigrationCNTypesFlag, "migration")
				detachVolume(&ds.Spec.Template.Spec, HandlerCertSecret)
			}
		}
	},
}, {
	Name:     "virt-template-apiserver and -controller serve the KubeVirt CR's TLS configuration",
	Upstream: true,
	Reason: "upstream's operator appends --tls-cipher-suites (the CR's spec.configuration.tlsConfiguration.ciphers, comma-separated, when " +
		"there are any) and --tls-min-version (its minTLSVersion; VersionTLS12 without a tlsConfiguration) to these Deployments' " +
		"containers as it writes them (kvtls.InjectTLSConfigIntoDeployment), in v1.8 and v1.9",
	Apply: func(s *strategy.Strategy, cfg *deployid.Config) {
		tls := cfg.TLS()
		for _, d := range s.Deployments {
			if name, ok := virtTemplateTLSContainers[d.Name]; ok {
				injectTLSFlags(d, name, tls.Ciphers, string(tls.MinTLSVersion))
			}
		}
	},
}, {
	Name: "the KubeVirt CR's update webhook is called only when the spec changes",
	Reason: "an update that leaves the spec as it was decides nothing (the webhook allows it anyway), so it must not need the operator: " +
		"with the operator down, unready or its certificate expired, removing a finalizer or a label is still admitted",
	Apply: func(s *strategy.Strategy, _ *deployid.Config) {
		for _, c := range s.ValidatingWebhookConfigurations {
			for i := range c.Webhooks {
				if w := &c.Webhooks[i]; isKubeVirtUpdateWebhook(w) {
					w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: SpecChangedCondition, Expression: "object.spec != oldObject.spec"}}
				}
			}
		}
	},
}}

// SpecChangedCondition names the update webhook's match condition.
const SpecChangedCondition = "spec-changed"

// isKubeVirtUpdateWebhook: the operator's own webhook for updates of the KubeVirt CR.
func isKubeVirtUpdateWebhook(w *admissionregistrationv1.ValidatingWebhook) bool {
	svc := w.ClientConfig.Service
	if svc == nil || svc.Path == nil || *svc.Path != "/kubevirt-validate-update" {
		return false
	}
	for _, r := range w.Rules {
		for _, res := range r.Resources {
			if res == "kubevirts" {
				return true
			}
		}
	}
	return false
}

// Upstream's names for virt-handler's migration TLS.
const (
	// SupportsMigrationCNTypesLabel marks a DaemonSet whose virt-handler takes
	// MigrationCNTypesFlag.
	SupportsMigrationCNTypesLabel = "kubevirt.io/supports-migration-cn-types"
	// MigrationCNTypesFlag makes virt-handler check a migration peer's
	// certificate common name.
	MigrationCNTypesFlag = "--migration-cn-types"
	// HandlerCertSecret is virt-handler's client certificate Secret, and the
	// name of the volume that mounts it.
	HandlerCertSecret = "kubevirt-virt-handler-certs"
)

// hasMigrationCNTypes: an argument of the first container names the flag
// (upstream's hasTLS).
func hasMigrationCNTypes(ds *appsv1.DaemonSet) bool {
	for _, a := range ds.Spec.Template.Spec.Containers[0].Args {
		if strings.Contains(a, strings.TrimPrefix(MigrationCNTypesFlag, "--")) {
			return true
		}
	}
	return false
}

// detachVolume removes the volume named name and the first container's mounts
// of it (upstream's unattachCertificateSecret).
func detachVolume(spec *corev1.PodSpec, name string) {
	vols := spec.Volumes[:0:0]
	for _, v := range spec.Volumes {
		if v.Name != name {
			vols = append(vols, v)
		}
	}
	spec.Volumes = vols
	c := &spec.Containers[0]
	mounts := c.VolumeMounts[:0:0]
	for _, m := range c.VolumeMounts {
		if m.Name != name {
			mounts = append(mounts, m)
		}
	}
	c.VolumeMounts = mounts
}

// virtTemplateTLSContainers are the Deployments upstream's operator passes the
// TLS configuration to, and the container of each that takes it.
var virtTemplateTLSContainers = map[string]string{
	"virt-template-apiserver":  "apiserver",
	"virt-template-controller": "manager",
}

// injectTLSFlags appends the TLS flags to the container named container, as
// upstream's kvtls.InjectTLSConfigIntoDeployment: the cipher suites when there
// are any, the minimum version when set. A Deployment without the container
// (a customization renamed it) is left as it is; upstream's operator fails the
// install on it.
func injectTLSFlags(d *appsv1.Deployment, container string, ciphers []string, minVersion string) {
	for i := range d.Spec.Template.Spec.Containers {
		c := &d.Spec.Template.Spec.Containers[i]
		if c.Name != container {
			continue
		}
		if len(ciphers) > 0 {
			c.Args = append(c.Args, "--tls-cipher-suites", strings.Join(ciphers, ","))
		}
		if minVersion != "" {
			c.Args = append(c.Args, "--tls-min-version", minVersion)
		}
		return
	}
}

// Adjust applies every Adjustment to s for cfg, in place (call it on a copy:
// Prepare does).
func Adjust(s *strategy.Strategy, cfg *deployid.Config) *strategy.Strategy {
	for _, a := range Adjustments {
		a.Apply(s, cfg)
	}
	return s
}
