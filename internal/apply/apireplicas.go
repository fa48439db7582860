package apply

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// APIReplicas is virt-api's replica count when the CR does not size it
// (§4.8): 1 on a single schedulable node, else max(2, nodes/10).
func APIReplicas(schedulableNodes int) int32 {
	if schedulableNodes == 1 {
		return 1
	}
	return int32(max(2, schedulableNodes/10))
}

// ScaleAPI sets virt-api's replicas from the schedulable nodes, as upstream's
// operator does each time it writes the Deployment, unless the CR sizes it:
// spec.infra.replicas (place applies it), or a customization that sets
// virt-api's /spec/replicas. Upstream yields only to a "replace" of it; an
// "add" is an explicit size too, and is kept here (docs/user/compatibility.md).
// It depends on the cluster, not on the strategy, so it is not part of the
// deployment ID: a node joining changes the replicas, never a pod template.
func ScaleAPI(s *strategy.Strategy, cfg *deployid.Config, schedulableNodes int) {
	if cfg.Infra != nil && cfg.Infra.Replicas != nil || replicasPatched(cfg.CustomizeComponents, VirtAPI) {
		return
	}
	for _, d := range s.Deployments {
		if d.Name == VirtAPI {
			n := APIReplicas(schedulableNodes)
			d.Spec.Replicas = &n
		}
	}
}

// replicasPatched: a customization of the Deployment name (or of every
// Deployment) sets its replicas, by a JSON patch's add or replace of
// /spec/replicas or a merge patch's spec.replicas.
func replicasPatched(cc *v1.CustomizeComponents, name string) bool {
	if cc == nil {
		return false
	}
	for _, p := range cc.Patches {
		if p.ResourceName != name && p.ResourceName != "*" || !strings.EqualFold(p.ResourceType, "Deployment") {
			continue
		}
		if p.Type == v1.JSONPatchType {
			var ops []struct{ Op, Path string }
			if json.Unmarshal([]byte(p.Patch), &ops) != nil {
				continue // refused earlier, by the customization itself
			}
			for _, op := range ops {
				if op.Path == "/spec/replicas" && (op.Op == "replace" || op.Op == "add") {
					return true
				}
			}
			continue
		}
		var merge struct {
			Spec struct {
				Replicas json.RawMessage `json:"replicas"`
			} `json:"spec"`
		}
		if json.Unmarshal([]byte(p.Patch), &merge) == nil && len(merge.Spec.Replicas) > 0 && string(merge.Spec.Replicas) != "null" {
			return true
		}
	}
	return false
}

// SchedulableNodes counts the nodes virt-handler marked schedulable.
func SchedulableNodes(ctx context.Context, r client.Reader) (int, error) {
	nodes := &corev1.NodeList{}
	if err := r.List(ctx, nodes, client.MatchingLabels{metadata.SchedulableLabel: "true"}); err != nil {
		return 0, fmt.Errorf("counting the schedulable nodes (virt-api's replicas): %w", err)
	}
	return len(nodes.Items), nil
}
