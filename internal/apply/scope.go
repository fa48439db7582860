package apply

import (
	"sort"

	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// ScopeOf is where a managed object may be: the operator's namespace own,
// and besides it every namespace the accepted strategies write to and every
// namespace monitoring may be in for the configs (monitoring that went away
// leaves its ServiceMonitor there). Only accepted strategies and the CR's
// configs steer it: a ConfigMap nobody vouched for never does. Others sorted.
func ScopeOf(own string, cfgs []*deployid.Config, strategies ...*strategy.Strategy) Scope {
	set := map[string]bool{}
	for _, s := range strategies {
		for _, o := range s.Objects() {
			set[o.GetNamespace()] = true
		}
	}
	for _, cfg := range cfgs {
		if cfg != nil {
			for _, ns := range cfg.MonitoringNamespaces() {
				set[ns] = true
			}
		}
	}
	delete(set, "")
	delete(set, own)
	scope := Scope{Namespace: own}
	for ns := range set {
		scope.Others = append(scope.Others, ns)
	}
	sort.Strings(scope.Others)
	return scope
}
