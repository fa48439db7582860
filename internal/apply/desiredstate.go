package apply

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// The desired state of one deployment is built in two steps, apart from the
// certificates, which the certificate controller (package
// controller/certificates) keeps valid in a loop of its own:
//
//	prepared, err := apply.Prepare(strategy, cfg)        // customized, without what cfg switches off
//	apply.ScaleAPI(prepared, cfg, schedulable nodes)      // virt-api's replicas, from the cluster
//	desired, err  := apply.Complete(prepared, cfg, mapper)
//
// DesiredState runs them all for a reader (virt-operator plan does). The
// desired state keeps the certificate Secrets and CA ConfigMaps as shells, so
// that what the deployment holds is known (orphans), but they are never
// written from it, and its webhooks and APIServices carry no caBundle: the
// certificate controller owns those fields.

// Prepare is s customized for cfg (a *PatchError when a customization does not
// apply), with the operator's Adjustments, without the objects cfg switches
// off. s is not modified; the result's objects are copies, which Complete
// stamps in place.
func Prepare(s *strategy.Strategy, cfg *deployid.Config) (*strategy.Strategy, error) {
	customized, err := Customize(s, cfg)
	if err != nil {
		return nil, err
	}
	return Enabled(Adjust(customized, cfg), cfg), nil
}

// Complete turns a prepared strategy into the desired state: without the
// kinds the cluster does not serve, and stamped with cfg's metadata
// (Desired). It modifies prepared's objects.
func Complete(prepared *strategy.Strategy, cfg *deployid.Config, mapper meta.RESTMapper) (*strategy.Strategy, error) {
	withoutBundles := *prepared
	dropCABundles(&withoutBundles)
	served, err := ServedOnly(&withoutBundles, mapper)
	if err != nil {
		return nil, err
	}
	return Desired(served, cfg), nil
}

// dropCABundles empties the caBundle of every webhook and APIService: the
// certificate controller writes them.
func dropCABundles(s *strategy.Strategy) {
	for _, c := range s.ValidatingWebhookConfigurations {
		for i := range c.Webhooks {
			c.Webhooks[i].ClientConfig.CABundle = nil
		}
	}
	for _, c := range s.MutatingWebhookConfigurations {
		for i := range c.Webhooks {
			c.Webhooks[i].ClientConfig.CABundle = nil
		}
	}
	for _, a := range s.APIServices {
		a.Spec.CABundle = nil
	}
}

// DesiredState is s as the operator would write it for cfg: Prepare, ScaleAPI
// and Complete.
func DesiredState(ctx context.Context, r client.Reader, mapper meta.RESTMapper, s *strategy.Strategy, cfg *deployid.Config) (*strategy.Strategy, error) {
	prepared, err := Prepare(s, cfg)
	if err != nil {
		return nil, err
	}
	schedulable, err := SchedulableNodes(ctx, r)
	if err != nil {
		return nil, err
	}
	ScaleAPI(prepared, cfg, schedulable)
	return Complete(prepared, cfg, mapper)
}
