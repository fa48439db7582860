package upgradeplan

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/storedversions"
)

// Rollback is what a step back to an older release undoes, named before it
// runs: KubeVirt does not support downgrades itself, this operator runs them
// as it runs an upgrade (canary, bake, workload moves), so the admin sees the
// cost first.
type Rollback struct {
	// Components are the workloads whose pods go back to the older images.
	Components []string
	// CRDVersions: per CRD, the stored versions the older release no longer
	// serves, and what becomes of their objects ("virtualmachineexports.export.kubevirt.io
	// v1 (2 VirtualMachineExports, rewritten as v1beta1)"); CRDsRemoved the CRDs
	// the older release does not have (deleted, or kept for their data).
	CRDVersions, CRDsRemoved []string
	// RBAC counts the roles and bindings created, changed (more than the
	// operator's version stamps) and deleted.
	RBACCreated, RBACUpdated, RBACDeleted int
	// VMIs move back to the older launcher (by migration or eviction) or stay.
	Migrate, Evict, Leave int
}

// isRollback: to is an older release than from (both read as versions).
func isRollback(from, to string) bool {
	f, errF := version.ParseSemantic(strings.TrimPrefix(from, "v"))
	t, errT := version.ParseSemantic(strings.TrimPrefix(to, "v"))
	return errF == nil && errT == nil && t.LessThan(f)
}

// rollbackOf sums up p (made for a rollback) and the CRD changes in its input.
func rollbackOf(in Input, p Plan) *Rollback {
	rb := &Rollback{Migrate: len(p.VMIs.Migrate), Evict: len(p.VMIs.Evict), Leave: len(p.VMIs.Leave)}
	for _, r := range p.Restarts {
		rb.Components = append(rb.Components, r.Workloads...)
	}
	for _, d := range in.StoredVersions {
		if d.Action != storedversions.Keep {
			rb.CRDVersions = append(rb.CRDVersions, d.String())
		}
	}
	for _, c := range p.Changes {
		switch {
		case c.Ref.Kind == "CustomResourceDefinition" && (c.Op == apply.OpDelete || c.Op == OpKeep):
			rb.CRDsRemoved = append(rb.CRDsRemoved, fmt.Sprintf("%s (%s)", c.Ref.Name, strings.ToLower(string(c.Op))))
		case isRBAC(c.Ref.Kind):
			switch c.Op {
			case apply.OpCreate:
				rb.RBACCreated++
			case apply.OpDelete:
				rb.RBACDeleted++
			default:
				if len(c.Fields) > 0 { // not the version stamps alone
					rb.RBACUpdated++
				}
			}
		}
	}
	return rb
}

func isRBAC(kind string) bool {
	return slices.Contains([]string{"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}, kind)
}

// text renders the rollback section.
func (rb *Rollback) text(from, to string) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("Rollback: %s -> %s undoes", from, to)
	list := func(items []string) string {
		if len(items) == 0 {
			return "none"
		}
		return strings.Join(items, ", ")
	}
	w("  Components     %d back to %s's images: %s", len(rb.Components), to, list(rb.Components))
	w("  CRD versions   stored, no longer served: %s", list(rb.CRDVersions))
	if len(rb.CRDsRemoved) > 0 {
		w("  CRDs           not in %s: %s", to, list(rb.CRDsRemoved))
	}
	w("  RBAC           %d roles and bindings created, %d changed, %d deleted", rb.RBACCreated, rb.RBACUpdated, rb.RBACDeleted)
	w("  VMs            %d move back to %s's launcher (%d migrate, %d evicted), %d stay on %s's", rb.Migrate+rb.Evict, to, rb.Migrate, rb.Evict, rb.Leave, from)
	return b.String()
}
