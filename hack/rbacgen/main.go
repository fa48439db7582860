// Command rbacgen writes the operator's RBAC markers that depend on the install
// strategies: the names of the roles it may escalate (create or change roles
// granting more than it holds itself) and bind, and its writes in namespaces other
// than its own (virt-template's RoleBinding in kube-system). It renders every
// release the builtin generator knows, with every optional component on and
// monitoring found, so the names cover every strategy the operator can apply.
// controller-gen then turns the markers into config/rbac/role.yaml.
//
// Usage: go run ./hack/rbacgen > internal/operator/zz_generated.rbac.go
package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/release"
	"github.com/virt-operator/virt-operator/internal/strategy"
	"github.com/virt-operator/virt-operator/internal/strategy/generate"
)

// The namespaces the strategies are rendered with. installNamespace is the
// operator's (config/rbac's markers name it); monitorNamespace stands for any
// namespace monitoring is found in, so no marker may name it.
const (
	installNamespace = "kubevirt"
	monitorNamespace = "rbacgen-monitoring"
)

// optional are the deployment-config switches that add components (and roles).
var optional = []string{
	deployid.KeyPluginsEnabled, deployid.KeyVirtTemplateDeploymentEnabled, deployid.KeyPersistentReservationEnabled,
	deployid.KeyDecentralizedLiveMigrationEnabled, deployid.KeyContainerPathVolumesEnabled,
	deployid.KeyExternalNetResourceInjection, deployid.KeyVMStatsCollectorEnabled,
}

// names collects role names per namespace ("" for cluster-scoped roles).
type names map[string]map[string]bool

func (n names) add(namespace, name string) {
	if n[namespace] == nil {
		n[namespace] = map[string]bool{}
	}
	n[namespace][name] = true
}

func (n names) sorted(namespace string) []string {
	var out []string
	for name := range n[namespace] {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

func (n names) namespaces() []string {
	var out []string
	for ns := range n {
		if ns != "" {
			out = append(out, ns)
		}
	}
	sort.Strings(out)
	return out
}

// refs is what the strategies define and reference.
type refs struct {
	escalate, bind names
	// foreign are the namespaced kinds (plural resources) written outside the
	// install namespace, by namespace.
	foreign names
	// data are the CRDs' resources (plurals) by group: the uninstall guard lists
	// their objects (metadata only) to count the user data an uninstall deletes.
	data names
	// served are each release's CRDs' served versions, by CRD name; storage
	// the versions any release stores a CRD's objects in.
	served  map[string]map[string][]string
	storage names
}

func newRefs() *refs {
	return &refs{escalate: names{}, bind: names{}, foreign: names{}, data: names{}, served: map[string]map[string][]string{}, storage: names{}}
}

func main() {
	r, err := collect()
	if err == nil {
		err = write(os.Stdout, r)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "rbacgen:", err)
		os.Exit(1)
	}
}

func collect() (*refs, error) {
	r := newRefs()
	for _, rel := range release.Supported() {
		for _, all := range []bool{false, true} {
			s, err := render(rel.Version, all)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", rel.Version, err)
			}
			if err := r.add(rel.Version, s); err != nil {
				return nil, fmt.Errorf("%s: %w", rel.Version, err)
			}
		}
	}
	return r, nil
}

func render(version string, allOptional bool) (*strategy.Strategy, error) {
	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: installNamespace}, Spec: v1.KubeVirtSpec{ImageTag: version}}
	cfg, err := deployid.FromKubeVirt(kv, deployid.MapEnv{deployid.EnvVirtOperatorImage: "quay.io/kubevirt/virt-operator:" + version})
	if err != nil {
		return nil, err
	}
	if allOptional {
		cfg = cfg.DeepCopy()
		if cfg.AdditionalProperties == nil {
			cfg.AdditionalProperties = map[string]string{}
		}
		for _, k := range optional {
			cfg.AdditionalProperties[k] = "true"
		}
	}
	return generate.Generate(generate.Input{Config: cfg, MonitorNamespace: monitorNamespace})
}

func (r *refs) add(version string, s *strategy.Strategy) error {
	for _, o := range s.Objects() {
		ns, kind := o.GetNamespace(), apply.RefOf(o).Kind // by type: objects built in Go carry no TypeMeta
		if ns == monitorNamespace && kind != "ServiceMonitor" {
			return fmt.Errorf("%s %s is in the monitoring namespace, which no static Role can name", kind, o.GetName())
		}
		if ns != "" && ns != installNamespace && ns != monitorNamespace {
			r.foreign.add(ns, strings.ToLower(kind)+"s")
		}
	}
	if r.served[version] == nil {
		r.served[version] = map[string][]string{}
	}
	for _, crd := range s.CRDs {
		r.data.add(crd.Spec.Group, crd.Spec.Names.Plural)
		var served []string
		for _, v := range crd.Spec.Versions {
			if v.Served {
				served = append(served, v.Name)
			}
			if v.Storage {
				r.storage.add(crd.Name, v.Name)
			}
		}
		r.served[version][crd.Name] = served
	}
	for _, cr := range s.ClusterRoles {
		r.escalate.add("", cr.Name)
	}
	for _, role := range s.Roles {
		r.escalate.add(role.Namespace, role.Name)
	}
	for _, b := range s.ClusterRoleBindings {
		r.bind.add("", b.RoleRef.Name)
	}
	for _, b := range s.RoleBindings {
		r.addBinding(b)
	}
	return nil
}

// addBinding: binding a Role is checked in the binding's namespace; binding a
// ClusterRole in a RoleBinding is checked there too, which a ClusterRole rule
// (every namespace) covers.
func (r *refs) addBinding(b *rbacv1.RoleBinding) {
	if b.RoleRef.Kind == "ClusterRole" {
		r.bind.add("", b.RoleRef.Name)
		return
	}
	r.bind.add(b.Namespace, b.RoleRef.Name)
}

// rewritten are the CRDs' resources (plurals) by group whose objects a move
// between two supported releases may have to rewrite: one release's storage
// version (objects are stored in it) that another release does not serve.
// Package storedversions updates them unchanged, and reads one again after a
// conflict.
func (r *refs) rewritten() names {
	out := names{}
	for name, stored := range r.storage {
		for _, crds := range r.served {
			served, ok := crds[name]
			if !ok {
				continue
			}
			for v := range stored {
				if !slices.Contains(served, v) {
					group, plural := groupAndPlural(name)
					out.add(group, plural)
				}
			}
		}
	}
	return out
}

// groupAndPlural splits a CRD's name, plural.group.
func groupAndPlural(crd string) (group, plural string) {
	plural, group, _ = strings.Cut(crd, ".")
	return group, plural
}

func write(w io.Writer, r *refs) error {
	var b strings.Builder
	b.WriteString("// Code generated by hack/rbacgen; DO NOT EDIT.\n\npackage operator\n\n")
	b.WriteString("// The roles the install strategies define (escalate) and reference (bind), and\n")
	b.WriteString("// their writes outside the operator's namespace, of every release the builtin\n")
	b.WriteString("// generator knows; and the listing of their CRDs' objects, which the uninstall\n")
	b.WriteString("// guard counts (package workloads); and the rewriting of the objects whose\n")
	b.WriteString("// stored version a move between two of the releases retires (package\n")
	b.WriteString("// storedversions).\n//\n")
	marker(&b, "", "clusterroles", "escalate", r.escalate.sorted(""))
	marker(&b, "", "clusterroles", "bind", r.bind.sorted(""))
	for _, ns := range union(r.escalate.namespaces(), r.bind.namespaces()) {
		marker(&b, ns, "roles", "escalate", r.escalate.sorted(ns))
		marker(&b, ns, "roles", "bind", r.bind.sorted(ns))
	}
	for _, group := range r.data.namespaces() {
		fmt.Fprintf(&b, "// +kubebuilder:rbac:groups=%s,resources=%s,verbs=list\n", group, strings.Join(r.data.sorted(group), ";"))
	}
	rewritten := r.rewritten()
	for _, group := range rewritten.namespaces() {
		fmt.Fprintf(&b, "// +kubebuilder:rbac:groups=%s,resources=%s,verbs=get;update\n", group, strings.Join(rewritten.sorted(group), ";"))
	}
	for _, ns := range r.foreign.namespaces() {
		for _, res := range r.foreign.sorted(ns) {
			fmt.Fprintf(&b, "// +kubebuilder:rbac:groups=%s,namespace=%s,resources=%s,verbs=%s\n", groupOf(res), ns, res, foreignVerbs(res))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func marker(b *strings.Builder, namespace, resource, verb string, names []string) {
	if len(names) == 0 {
		return
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = fmt.Sprintf("%q", n)
	}
	ns := ""
	if namespace != "" {
		ns = ",namespace=" + namespace
	}
	fmt.Fprintf(b, "// +kubebuilder:rbac:groups=rbac.authorization.k8s.io%s,resources=%s,verbs=%s,resourceNames={%s}\n", ns, resource, verb, strings.Join(quoted, ","))
}

// groupOf is the API group of the namespaced kinds a strategy writes outside
// the install namespace.
func groupOf(resource string) string {
	switch resource {
	case "roles", "rolebindings":
		return "rbac.authorization.k8s.io"
	default:
		return `""`
	}
}

func union(a, b []string) []string {
	set := map[string]bool{}
	for _, s := range append(append([]string{}, a...), b...) {
		set[s] = true
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// foreignVerbs are the verbs on a strategy's objects outside the operator's
// namespace. Roles and RoleBindings are read from the cache in every
// namespace (internal/operator's list and watch), so they need no get.
func foreignVerbs(resource string) string {
	if groupOf(resource) == "rbac.authorization.k8s.io" {
		return "list;create;patch;delete"
	}
	return "get;list;create;patch;delete"
}
