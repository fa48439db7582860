package generate

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// Input is everything a strategy depends on.
type Input struct {
	// Config is the target deployment config (its ID names the strategy). The
	// operator's namespace is Config.Namespace: KubeVirt lives with its operator.
	Config *deployid.Config
	// MonitorNamespace is where Prometheus' ServiceAccount was found; "" means
	// no monitoring objects.
	MonitorNamespace string
	// OpenShift is true when the OpenShift APIs (SCCs, Routes) are served.
	OpenShift bool
}

// Generate returns the strategy for in, or an error naming what is wrong with the
// input. It never changes in.Config.
func Generate(in Input) (*strategy.Strategy, error) {
	if err := validate(in); err != nil {
		return nil, err
	}
	b := &builder{cfg: in.Config, in: in, ns: in.Config.Namespace, s: &strategy.Strategy{}}
	for _, step := range []func(){
		b.priorityClasses, b.crds, b.rbac, b.monitoring, b.services, b.deployments, b.daemonSet,
		b.webhooks, b.apiServices, b.certificates, b.openShift, b.admissionPolicies,
	} {
		step()
		if b.err != nil {
			return nil, b.err
		}
	}
	if err := b.finish(); err != nil {
		return nil, err
	}
	return b.s, nil
}

// validate rejects input that would produce invalid objects.
func validate(in Input) error {
	cfg := in.Config
	if cfg == nil {
		return errors.New("generate: no deployment config")
	}
	if cfg.Namespace == "" {
		return errors.New("generate: the deployment config has no namespace")
	}
	if errs := validation.IsDNS1123Label(cfg.Namespace); len(errs) > 0 {
		return fmt.Errorf("generate: namespace %q: %s", cfg.Namespace, strings.Join(errs, "; "))
	}
	if cfg.ID == "" {
		return errors.New("generate: the deployment config has no ID")
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	for _, ns := range []struct{ what, value string }{
		{"monitor namespace", in.MonitorNamespace},
		{"serviceMonitorNamespace", cfg.ServiceMonitorNamespace()},
	} {
		if ns.value == "" {
			continue
		}
		if errs := validation.IsDNS1123Label(ns.value); len(errs) > 0 {
			return fmt.Errorf("generate: %s %q: %s", ns.what, ns.value, strings.Join(errs, "; "))
		}
	}
	if in.MonitorNamespace != "" {
		if errs := validation.IsDNS1123Subdomain(cfg.MonitorAccount()); len(errs) > 0 {
			return fmt.Errorf("generate: monitorAccount %q: %s", cfg.MonitorAccount(), strings.Join(errs, "; "))
		}
	}
	for _, c := range requiredImages(cfg) {
		if strings.TrimSpace(cfg.Image(c)) == "" {
			return fmt.Errorf("generate: the deployment config has no image for %s", c)
		}
	}
	return nil
}

// requiredImages are the components whose images the strategy references.
func requiredImages(cfg *deployid.Config) []deployid.Component {
	out := []deployid.Component{deployid.API, deployid.Controller, deployid.Handler, deployid.Launcher,
		deployid.ExportProxy, deployid.ExportServer}
	if cfg.DecentralizedLiveMigrationEnabled() {
		out = append(out, deployid.SynchronizationController)
	}
	if cfg.PersistentReservationEnabled() {
		out = append(out, deployid.PrHelper)
	}
	return out
}

// builder accumulates the strategy; the first Add error is kept.
type builder struct {
	cfg *deployid.Config
	in  Input
	ns  string
	s   *strategy.Strategy
	err error
}

func (b *builder) add(objs ...client.Object) {
	for _, o := range objs {
		b.fail(b.s.Add(o))
	}
}

// fail records err (if it is the first).
func (b *builder) fail(err error) {
	if err != nil && b.err == nil {
		b.err = fmt.Errorf("generate: %w", err)
	}
}

// meta is the ObjectMeta of a generated object; a "" namespace means cluster-scoped.
func meta(name, namespace string, labels map[string]string) metav1.ObjectMeta {
	l := map[string]string{}
	for k, v := range labels {
		l[k] = v
	}
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: l}
}

// appLabel is the kubevirt.io label of an object of component name ("" for shared objects).
func appLabel(name string) map[string]string { return map[string]string{metadata.AppLabel: name} }

// scheme knows every typed kind a strategy holds, to set TypeMeta.
var scheme = sync.OnceValues(func() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	return s, strategy.AddToScheme(s)
})

// finish sorts every list and stamps TypeMeta and the operator metadata on every object.
func (b *builder) finish() error {
	sch, err := scheme()
	if err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	b.sortAll()
	for _, o := range b.s.Objects() {
		if _, ok := o.(*unstructured.Unstructured); !ok {
			gvk, err := apiutil.GVKForObject(o, sch)
			if err != nil {
				return fmt.Errorf("generate: %s: %w", o.GetName(), err)
			}
			o.GetObjectKind().SetGroupVersionKind(gvk)
		}
		labels := o.GetLabels()
		if _, ok := labels[metadata.AppLabel]; !ok {
			if labels == nil {
				labels = map[string]string{}
			}
			labels[metadata.AppLabel] = ""
			o.SetLabels(labels)
		}
		metadata.Inject(o, b.cfg)
	}
	return nil
}

func (b *builder) sortAll() {
	s := b.s
	sortByName(s.ServiceAccounts)
	sortByName(s.ClusterRoles)
	sortByName(s.ClusterRoleBindings)
	sortByName(s.Roles)
	sortByName(s.RoleBindings)
	sortByName(s.CRDs)
	sortByName(s.Services)
	sortByName(s.Secrets)
	sortByName(s.ValidatingWebhookConfigurations)
	sortByName(s.MutatingWebhookConfigurations)
	sortByName(s.ValidatingAdmissionPolicyBindings)
	sortByName(s.ValidatingAdmissionPolicies)
	sortByName(s.APIServices)
	sortByName(s.Deployments)
	sortByName(s.DaemonSets)
	sortByName(s.SecurityContextConstraints)
	sortByName(s.ServiceMonitors)
	sortByName(s.PrometheusRules)
	sortByName(s.ConfigMaps)
	sortByName(s.Routes)
}

func sortByName[T client.Object](objs []T) {
	sort.SliceStable(objs, func(i, j int) bool {
		if objs[i].GetNamespace() != objs[j].GetNamespace() {
			return objs[i].GetNamespace() < objs[j].GetNamespace()
		}
		return objs[i].GetName() < objs[j].GetName()
	})
}
