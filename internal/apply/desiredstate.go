package apply

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/internal/certs"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// The desired state of one deployment is built in two steps, so that the
// certificates can be kept valid from the first step alone (a rollout that
// waits, or a cluster that does not serve a kind yet, never holds them back):
//
//	prepared, err := apply.Prepare(strategy, cfg)        // customized, without what cfg switches off
//	filled, err   := certs.Fill(prepared, live certificates, policy, now)
//	apply.ScaleAPI(prepared, cfg, schedulable nodes)      // virt-api's replicas, from the cluster
//	desired, err  := apply.Complete(prepared, filled, cfg, mapper)
//
// DesiredState runs them all for a reader (virt-operator plan does); the
// controller runs them itself, the certificates in a phase of their own.

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

// Complete turns a prepared strategy into the desired state: its certificate
// Secrets and CA ConfigMaps replaced by filled's, the CA bundle in every webhook
// and APIService, without the kinds the cluster does not serve, and stamped
// with cfg's metadata (Desired). It modifies prepared's objects.
func Complete(prepared *strategy.Strategy, filled *certs.Result, cfg *deployid.Config, mapper meta.RESTMapper) (*strategy.Strategy, error) {
	withCerts := *prepared
	withCerts.Secrets = replaceByName(prepared.Secrets, filled.Secrets)
	withCerts.ConfigMaps = replaceByName(prepared.ConfigMaps, filled.ConfigMaps)
	certs.InjectCABundle(&withCerts, filled.CABundle)
	served, err := ServedOnly(&withCerts, mapper)
	if err != nil {
		return nil, err
	}
	return Desired(served, cfg), nil
}

// LiveCertificates reads the live copies of the strategy's certificate Secrets
// and ConfigMaps, as certs.Fill takes them (absent: not in the map).
func LiveCertificates(ctx context.Context, r client.Reader, s *strategy.Strategy) (map[types.NamespacedName]*corev1.Secret, map[types.NamespacedName]*corev1.ConfigMap, error) {
	secrets, err := liveByKey(ctx, r, s.Secrets, func() *corev1.Secret { return &corev1.Secret{} })
	if err != nil {
		return nil, nil, err
	}
	configMaps, err := liveByKey(ctx, r, s.ConfigMaps, func() *corev1.ConfigMap { return &corev1.ConfigMap{} })
	if err != nil {
		return nil, nil, err
	}
	return secrets, configMaps, nil
}

func liveByKey[T client.Object](ctx context.Context, r client.Reader, want []T, newT func() T) (map[types.NamespacedName]T, error) {
	out := make(map[types.NamespacedName]T, len(want))
	for _, w := range want {
		key := client.ObjectKeyFromObject(w)
		live := newT()
		switch err := r.Get(ctx, key, live); {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, err
		default:
			out[key] = live
		}
	}
	return out, nil
}

// DesiredState is s as the operator would write it for cfg, its certificates
// filled from the live ones under policy at now: Prepare, certs.Fill, Complete.
func DesiredState(ctx context.Context, r client.Reader, mapper meta.RESTMapper, s *strategy.Strategy, cfg *deployid.Config,
	policy certs.Policy, now time.Time) (*strategy.Strategy, error) {
	prepared, err := Prepare(s, cfg)
	if err != nil {
		return nil, err
	}
	secrets, configMaps, err := LiveCertificates(ctx, r, prepared)
	if err != nil {
		return nil, err
	}
	filled, err := certs.Fill(prepared, certs.Inputs{Secrets: secrets, ConfigMaps: configMaps, Policy: policy, Now: now, Issuer: certs.Issuer{}})
	if err != nil {
		return nil, err
	}
	schedulable, err := SchedulableNodes(ctx, r)
	if err != nil {
		return nil, err
	}
	ScaleAPI(prepared, cfg, schedulable)
	return Complete(prepared, filled, cfg, mapper)
}

// replaceByName is all with each object that replacements has under the same
// namespace and name replaced by a copy of it (Desired stamps the copy: the
// certificates are shared by every deployment's desired state).
func replaceByName[T client.Object](all, replacements []T) []T {
	byKey := map[types.NamespacedName]T{}
	for _, o := range replacements {
		byKey[client.ObjectKeyFromObject(o)] = o
	}
	out := make([]T, 0, len(all))
	for _, o := range all {
		if rep, ok := byKey[client.ObjectKeyFromObject(o)]; ok {
			o = rep.DeepCopyObject().(T)
		}
		out = append(out, o)
	}
	return out
}
