package install_test

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/virt-operator/virt-operator/config/rbac"
	"github.com/virt-operator/virt-operator/internal/sandbox/sandboxtest"
)

// The operator's RBAC grants nothing the suite does not use: every test's API
// server writes an audit log, each test's operator requests are gathered from
// it, and once the whole package has passed every grant of config/rbac's
// virt-operator roles must match one of them. A grant no request here can show
// is exempt, with its reason.

// operatorUser is the operator's identity in the suite (its ServiceAccount token).
const operatorUser = "system:serviceaccount:" + namespace + ":virt-operator"

// upstreamOperatorUser is KubeVirt's own operator's, in the take-over test.
const upstreamOperatorUser = "system:serviceaccount:" + sandboxtest.UpstreamOperatorNamespace + ":" + sandboxtest.UpstreamOperatorAccount

// request is one API request of the operator, as the audit log records it.
type request struct {
	verb, group, resource, namespace, name string
	created                                bool // a patch answered 201: server-side apply created the object
}

var rbacUsage = struct {
	sync.Mutex
	requests map[request]bool
}{requests: map[request]bool{}}

// recordOperatorRequests adds the operator's requests in the audit log at path.
func recordOperatorRequests(t testing.TB, path string) {
	rbacUsage.Lock()
	defer rbacUsage.Unlock()
	readAudit(t, path, 0, func(ev auditEvent) {
		if ev.User.Username != operatorUser || ev.ObjectRef.Resource == "" {
			return
		}
		res := ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			res += "/" + ev.ObjectRef.Subresource
		}
		rbacUsage.requests[request{verb: ev.Verb, group: ev.ObjectRef.APIGroup, resource: res,
			namespace: ev.ObjectRef.Namespace, name: ev.ObjectRef.Name,
			created: ev.Verb == "patch" && ev.ResponseStatus.Code == 201}] = true
	})
}

// grant is one verb on one resource (and name), cluster-wide or in a namespace.
type grant struct {
	namespace, group, resource, verb, name string
}

func (g grant) String() string {
	where := "cluster-wide"
	if g.namespace != "" {
		where = "in " + g.namespace
	}
	s := fmt.Sprintf("%s %s.%s %s", g.verb, g.resource, g.group, where)
	if g.name != "" {
		s += " name " + g.name
	}
	return s
}

// exemptions: grants no request in this suite can show, and why they stay.
func exemption(g grant) string {
	switch {
	case g.verb == "escalate" || g.verb == "bind":
		return "an authorization check inside a role write, not a request; the names are the strategies' (hack/rbacgen)"
	case g.group == "security.openshift.io" || g.group == "route.openshift.io":
		return "OpenShift only: the sandbox serves no SCC or Route API"
	case g.resource == "kubevirts/finalizers":
		return "checked by the OwnerReferencesPermissionEnforcement admission plugin (OpenShift), not a request"
	case g.verb == "delete" && g.resource == "virtualmachineinstancemigrations":
		return "aborting a migration to a launcher the next upgrade superseded; no test upgrades in the middle of a drain"
	case g.verb == "get" && g.group == "export.kubevirt.io":
		return "a rollback's rewrite of stored objects reads one again only after a conflict with another writer; no test races one (storedversions' unit test does)"
	case g.verb == "patch" && g.group == "" && (g.resource == "secrets" || g.resource == "configmaps"):
		return "a strategy's Secret or ConfigMap that is no certificate is server-side applied (a delegated release may carry one); the releases tested carry only certificates, which the certificate controller creates and updates"
	case g.verb == "delete" && g.group == "instancetype.kubevirt.io":
		return "a cluster instancetype or preference a newer release drops is deleted as an orphan; the releases tested drop none"
	}
	return ""
}

// usedBy: r needs g. Server-side apply creating an object needs create; an
// informer's watch needs list too (the API server streams the initial list as
// part of the watch where it can, and the client lists where it cannot).
func (g grant) usedBy(r request) bool {
	verbOK := r.verb == g.verb || (g.verb == "create" && r.created) || (g.verb == "list" && r.verb == "watch")
	return verbOK && r.group == g.group && r.resource == g.resource &&
		(g.name == "" || r.name == g.name) && (g.namespace == "" || r.namespace == g.namespace)
}

// operatorGrants expands config/rbac's virt-operator ClusterRole and Roles.
func operatorGrants() ([]grant, error) {
	objs, err := rbac.Objects()
	if err != nil {
		return nil, err
	}
	var out []grant
	for _, o := range objs {
		if o.GetName() != "virt-operator" || (o.GetKind() != "ClusterRole" && o.GetKind() != "Role") {
			continue
		}
		var role rbacv1.ClusterRole // a Role's rules read the same
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err != nil {
			return nil, err
		}
		for _, rule := range role.Rules {
			names := rule.ResourceNames
			if len(names) == 0 {
				names = []string{""}
			}
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					for _, v := range rule.Verbs {
						for _, n := range names {
							out = append(out, grant{namespace: o.GetNamespace(), group: g, resource: res, verb: v, name: n})
						}
					}
				}
			}
		}
	}
	return out, nil
}

// checkRBACUsage returns the unused grants, and the exempt ones with reasons.
func checkRBACUsage() (unused []string, exempt map[string][]string, err error) {
	grants, err := operatorGrants()
	if err != nil {
		return nil, nil, err
	}
	exempt = map[string][]string{}
	rbacUsage.Lock()
	defer rbacUsage.Unlock()
	for _, g := range grants {
		if why := exemption(g); why != "" {
			exempt[why] = append(exempt[why], g.String())
			continue
		}
		used := false
		for r := range rbacUsage.requests {
			if used = g.usedBy(r); used {
				break
			}
		}
		if !used {
			unused = append(unused, g.String())
		}
	}
	sort.Strings(unused)
	return unused, exempt, nil
}

// wholeSuite: every test of the package ran (no -run or -skip filter).
func wholeSuite() bool {
	for _, name := range []string{"test.run", "test.skip"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return false
		}
	}
	return true
}

func TestMain(m *testing.M) {
	code := m.Run()
	if code != 0 || !wholeSuite() {
		os.Exit(code)
	}
	unused, exempt, err := checkRBACUsage()
	if err != nil {
		fmt.Fprintln(os.Stderr, "RBAC check:", err)
		os.Exit(1)
	}
	rbacUsage.Lock()
	fmt.Printf("RBAC check: %d distinct operator requests in the suite's audit logs\n", len(rbacUsage.requests))
	rbacUsage.Unlock()
	for why, gs := range exempt {
		fmt.Printf("RBAC check: %d grants exempt: %s\n", len(gs), why)
	}
	if len(unused) > 0 {
		fmt.Fprintf(os.Stderr, "RBAC check FAILED: config/rbac grants the operator what no request of the suite used; remove it, or exempt it with a reason in rbac_test.go:\n  %s\n", strings.Join(unused, "\n  "))
		os.Exit(1)
	}
	fmt.Println("RBAC check: every grant of the operator's roles was used")
}
