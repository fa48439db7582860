package generate

import (
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

func TestEveryObjectHasTypeMetaAndOperatorMetadata(t *testing.T) {
	for _, v := range variants {
		t.Run(v.golden, func(t *testing.T) {
			in := v.in(t)
			for _, o := range mustGenerate(t, in).Objects() {
				gvk := o.GetObjectKind().GroupVersionKind()
				name := gvk.Kind + " " + o.GetName()
				if gvk.Kind == "" || gvk.Version == "" {
					t.Errorf("%s: no TypeMeta (%v)", o.GetName(), gvk)
				}
				a := o.GetAnnotations()
				if a[metadata.InstallStrategyIdentifierAnnotation] != in.Config.ID ||
					a[metadata.InstallStrategyVersionAnnotation] != in.Config.KubeVirtVersion ||
					a[metadata.InstallStrategyRegistryAnnotation] != in.Config.Registry {
					t.Errorf("%s: install-strategy annotations %v", name, a)
				}
				if o.GetLabels()[metadata.ManagedByLabel] != metadata.ManagedByValue {
					t.Errorf("%s: no managed-by label", name)
				}
				if _, ok := o.GetLabels()[metadata.AppLabel]; !ok {
					t.Errorf("%s: no kubevirt.io label", name)
				}
				if !o.GetCreationTimestamp().Time.IsZero() || o.GetResourceVersion() != "" || o.GetUID() != "" {
					t.Errorf("%s: carries server-set metadata", name)
				}
			}
		})
	}
}

// podTemplates returns every workload's pod template by name.
func podTemplates(s *strategy.Strategy) map[string]*corev1.PodTemplateSpec {
	out := map[string]*corev1.PodTemplateSpec{}
	for _, d := range s.Deployments {
		out[d.Name] = &d.Spec.Template
	}
	for _, d := range s.DaemonSets {
		out[d.Name] = &d.Spec.Template
	}
	return out
}

func TestPodTemplatesCarryTargetAndComponentLabels(t *testing.T) {
	cfg := config(t, nil)
	for name, tmpl := range podTemplates(mustGenerate(t, Input{Config: cfg})) {
		if tmpl.Annotations[metadata.InstallStrategyIdentifierAnnotation] != cfg.ID {
			t.Errorf("%s: pod template lacks the install-strategy identifier", name)
		}
		if _, ok := tmpl.Annotations[metadata.GenerationAnnotation]; ok {
			t.Errorf("%s: pod template carries the generation annotation", name)
		}
		if tmpl.Labels[metadata.AppLabel] != name || tmpl.Labels[metadata.PrometheusLabel] != "true" {
			t.Errorf("%s: labels %v", name, tmpl.Labels)
		}
		wantSCC := metadata.RequiredSCCRestricted
		if name == virtHandler {
			wantSCC = metadata.RequiredSCCHandler
		}
		if tmpl.Annotations[metadata.RequiredSCCAnnotation] != wantSCC {
			t.Errorf("%s: required SCC %q, want %q", name, tmpl.Annotations[metadata.RequiredSCCAnnotation], wantSCC)
		}
		spec := tmpl.Spec
		if spec.PriorityClassName != priorityClassKubeVirtCritical || len(spec.Tolerations) != 1 || spec.Tolerations[0].Key != "CriticalAddonsOnly" {
			t.Errorf("%s: priority %q tolerations %v", name, spec.PriorityClassName, spec.Tolerations)
		}
		c := spec.Containers[0]
		if c.Name != name || len(c.Ports) == 0 || c.Ports[0].Name != portNameMetrics || c.Ports[0].ContainerPort != portHTTPS {
			t.Errorf("%s: container %s ports %v", name, c.Name, c.Ports)
		}
		if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Scheme != corev1.URISchemeHTTPS || c.Resources.Requests.Memory().IsZero() {
			t.Errorf("%s: no HTTPS readiness probe or no memory request", name)
		}
		if name == virtHandler {
			if !spec.HostPID || c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged {
				t.Errorf("virt-handler is not privileged with hostPID")
			}
			continue
		}
		if spec.SecurityContext == nil || !*spec.SecurityContext.RunAsNonRoot || spec.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault ||
			*c.SecurityContext.AllowPrivilegeEscalation || c.SecurityContext.Capabilities.Drop[0] != "ALL" {
			t.Errorf("%s: not restricted: %+v %+v", name, spec.SecurityContext, c.SecurityContext)
		}
		if spec.Affinity == nil || spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.TopologyKey != corev1.LabelHostname {
			t.Errorf("%s: no preferred anti-affinity on hostname", name)
		}
	}
}

func TestWorkloadShapes(t *testing.T) {
	cfg := config(t, nil)
	s := mustGenerate(t, Input{Config: cfg})
	for _, d := range s.Deployments {
		if *d.Spec.Replicas != 2 || d.Spec.Selector.MatchLabels[metadata.AppLabel] != d.Name {
			t.Errorf("%s: replicas %d selector %v", d.Name, *d.Spec.Replicas, d.Spec.Selector)
		}
	}
	ds := s.DaemonSets[0]
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable.IntValue() != 1 {
		t.Errorf("virt-handler update strategy %+v", ds.Spec.UpdateStrategy)
	}
	handler := ds.Spec.Template.Spec.Containers[0]
	wantArgs := "--port 8443 --hostname-override $(NODE_NAME) --pod-ip-address $(MY_POD_IP) --max-metric-requests 3 " +
		"--console-server-port 8186 --graceful-shutdown-seconds 315 -v 2 --migration-cn-types migration"
	if got := strings.Join(handler.Args, " "); got != wantArgs {
		t.Errorf("virt-handler args %q\nwant %q", got, wantArgs)
	}
	if handler.Env[0].Name != "NODE_NAME" || handler.Env[0].ValueFrom.FieldRef.FieldPath != "spec.nodeName" ||
		handler.Env[1].Name != "MY_POD_IP" || handler.Env[1].ValueFrom.FieldRef.FieldPath != "status.podIP" {
		t.Errorf("virt-handler env %v", handler.Env)
	}
	api := deploymentNamed(t, s, virtAPI).Spec.Template.Spec.Containers[0]
	if got := strings.Join(api.Args, " "); got != "--port 8443 --console-server-port 8186 --subresources-only -v 2" {
		t.Errorf("virt-api args %q", got)
	}
	ctrl := deploymentNamed(t, s, virtController).Spec.Template.Spec.Containers[0]
	if !strings.Contains(strings.Join(ctrl.Args, " "), "--launcher-image "+cfg.Image(deployid.Launcher)+" --exporter-image "+cfg.Image(deployid.ExportServer)) {
		t.Errorf("virt-controller args %q", ctrl.Args)
	}
}

func deploymentNamed(t *testing.T, s *strategy.Strategy, name string) *appsv1.Deployment {
	t.Helper()
	for _, d := range s.Deployments {
		if d.Name == name {
			return d
		}
	}
	t.Fatalf("no Deployment %s", name)
	return nil
}

func TestImagesComeFromTheConfig(t *testing.T) {
	env := deployid.MapEnv{"VIRT_OPERATOR_IMAGE": "quay.io/kubevirt/virt-operator:v1.7.0"}
	before := mustGenerate(t, Input{Config: config(t, env)})
	env["VIRT_HANDLER_IMAGE"] = "mirror.example/handler@sha256:0123"
	cfg := config(t, env)
	after := mustGenerate(t, Input{Config: cfg})
	if got := after.DaemonSets[0].Spec.Template.Spec.Containers[0].Image; got != "mirror.example/handler@sha256:0123" {
		t.Errorf("virt-handler image %q after VIRT_HANDLER_IMAGE changed", got)
	}
	if before.DaemonSets[0].Spec.Template.Spec.Containers[0].Image != "quay.io/kubevirt/virt-handler:v1.7.0" {
		t.Errorf("default virt-handler image %q", before.DaemonSets[0].Spec.Template.Spec.Containers[0].Image)
	}
	want := map[string]deployid.Component{
		virtAPI: deployid.API, virtController: deployid.Controller, virtExportProxy: deployid.ExportProxy,
		virtSyncCtrl: deployid.SynchronizationController, virtHandler: deployid.Handler, virtLauncher: deployid.Launcher,
	}
	for name, tmpl := range podTemplates(after) {
		for _, c := range append(append([]corev1.Container(nil), tmpl.Spec.InitContainers...), tmpl.Spec.Containers...) {
			if c.Image != cfg.Image(want[c.Name]) || c.ImagePullPolicy != cfg.ImagePullPolicy() {
				t.Errorf("%s/%s: image %q policy %q, want %q", name, c.Name, c.Image, c.ImagePullPolicy, cfg.Image(want[c.Name]))
			}
		}
	}
}

func TestDeterministic(t *testing.T) {
	in := Input{Config: config(t, nil, gates(deployid.GatePersistentReservation)), MonitorNamespace: "monitoring", OpenShift: true}
	a, b := mustGenerate(t, in), mustGenerate(t, in)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two Generate calls differ")
	}
	ya, _ := RenderYAML(a)
	yb, _ := RenderYAML(b)
	if string(ya) != string(yb) {
		t.Fatal("two renderings differ")
	}
}

func TestGenerateDoesNotChangeTheConfig(t *testing.T) {
	cfg := config(t, nil)
	before := cfg.JSON()
	mustGenerate(t, Input{Config: cfg, MonitorNamespace: "monitoring", OpenShift: true})
	if cfg.JSON() != before {
		t.Error("Generate changed its input")
	}
}

func TestConditionalObjects(t *testing.T) {
	plain := mustGenerate(t, Input{Config: config(t, nil)})
	if len(plain.SecurityContextConstraints)+len(plain.Routes) != 0 {
		t.Error("OpenShift objects without OpenShift")
	}
	if len(plain.ServiceMonitors)+len(plain.PrometheusRules) != 0 {
		t.Error("monitoring objects without a monitor namespace")
	}
	for _, r := range plain.Roles {
		if r.Name == monitoringName {
			t.Error("monitoring Role without a monitor namespace")
		}
	}

	cfg := config(t, nil, func(s *v1.KubeVirtSpec) { s.ServiceMonitorNamespace = "sm"; s.MonitorAccount = "prom" })
	mon := mustGenerate(t, Input{Config: cfg, MonitorNamespace: "mon"})
	if sm := mon.ServiceMonitors[0]; sm.Namespace != "sm" || sm.Spec.NamespaceSelector.MatchNames[0] != "kubevirt" {
		t.Errorf("ServiceMonitor in %q selecting %v", sm.Namespace, sm.Spec.NamespaceSelector)
	}
	for _, rb := range mon.RoleBindings {
		if rb.Name == monitoringName && (rb.Subjects[0].Name != "prom" || rb.Subjects[0].Namespace != "mon") {
			t.Errorf("monitoring RoleBinding subject %+v", rb.Subjects[0])
		}
	}
	if len(mon.PrometheusRules) != 1 || len(mon.PrometheusRules[0].Spec.Groups) == 0 {
		t.Fatal("no PrometheusRule")
	}
	alerts := map[string]bool{}
	for _, g := range mon.PrometheusRules[0].Spec.Groups {
		for _, r := range g.Rules {
			alerts[r.Alert] = true
		}
	}
	for _, a := range []string{"VirtAPIDown", "VirtControllerDown", "VirtHandlerDaemonSetRolloutFailing", "OutdatedVirtualMachineInstanceWorkloads"} {
		if !alerts[a] {
			t.Errorf("no alert %s", a)
		}
	}

	stats := mustGenerate(t, Input{Config: config(t, nil, gates(deployid.GateVMStatsCollector)), MonitorNamespace: "mon"})
	if len(stats.ServiceMonitors) != 1 || len(stats.PrometheusRules) != 0 {
		t.Error("with VMStatsCollector: want the ServiceMonitor and no PrometheusRule")
	}

	noSync := mustGenerate(t, Input{Config: config(t, nil, disabledGates(deployid.GateDecentralizedLiveMigration))})
	if len(noSync.Deployments) != 3 {
		t.Errorf("without DecentralizedLiveMigration: %d Deployments, want 3", len(noSync.Deployments))
	}
}

func TestWebhookCounts(t *testing.T) {
	s := mustGenerate(t, Input{Config: config(t, nil)})
	want := map[string]int{"virt-operator-validator": 3, "virt-api-validator": 23, "virt-api-mutator": 4, "virt-launcher-pod-mutator": 1}
	got := map[string]int{}
	names := map[string]bool{}
	for _, v := range s.ValidatingWebhookConfigurations {
		got[v.Name] = len(v.Webhooks)
		for _, w := range v.Webhooks {
			names[v.Name+"/"+w.Name] = true
			if w.ClientConfig.Service == nil || w.ClientConfig.Service.Namespace != "kubevirt" || w.ClientConfig.CABundle != nil {
				t.Errorf("%s/%s: client config %+v", v.Name, w.Name, w.ClientConfig)
			}
		}
	}
	for _, m := range s.MutatingWebhookConfigurations {
		got[m.Name] = len(m.Webhooks)
		for _, w := range m.Webhooks {
			names[m.Name+"/"+w.Name] = true
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("webhooks per configuration %v, want %v", got, want)
	}
	if len(names) != 31 {
		t.Errorf("%d distinct webhook names, want 31", len(names))
	}
}
