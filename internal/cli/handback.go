package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
	"github.com/virt-operator/virt-operator/internal/strategy/trust"
)

// The handback command leaves a KubeVirt install to upstream's virt-operator:
// with this operator stopped, it removes what upstream's does not know and
// would keep as it is, stale (docs/user/coming-from-upstream.md), and stamps
// the certificate objects as upstream's will want them (handback_certs.go).
// KubeVirt's pods and the rest of its objects are left alone: the install
// runs on.

// ourConditions are the condition types upstream's operator does not know.
var ourConditions = map[v1.KubeVirtConditionType]bool{
	v1.KubeVirtConditionReady: true, v1.KubeVirtConditionReconciling: true, v1.KubeVirtConditionStalled: true,
	v1.KubeVirtConditionUpgradeable: true, v1.KubeVirtConditionDataRetained: true,
}

// ourAnnotationPrefix marks this operator's annotations (the KubeVirt CR's,
// the certificate objects').
const ourAnnotationPrefix = "kubevirt.io/virt-operator-"

// HandbackStatus is st without what only this operator writes: its
// conditions and its status fields (handlerRollout, workloadUpdates,
// rolloutHold, preflight, history, installStrategies, generations,
// certificates).
// Upstream's fields, the target and observed deployment among them, stay: its
// operator recomputes its own.
func HandbackStatus(st v1.KubeVirtStatus) v1.KubeVirtStatus {
	out := *st.DeepCopy()
	out.Conditions = out.Conditions[:0]
	for _, c := range st.Conditions {
		if !ourConditions[c.Type] {
			out.Conditions = append(out.Conditions, c)
		}
	}
	out.HandlerRollout, out.WorkloadUpdates, out.RolloutHold, out.Preflight = nil, nil, nil, nil
	out.History, out.InstallStrategies, out.Generations, out.Certificates = nil, nil, nil, nil
	return out
}

// HandbackAnnotations is the CR's annotations without this operator's, and
// with the API versions observed as upstream's operator records them (so its
// first pass does not rewrite the CR: see apiVersionObserved).
func HandbackAnnotations(in map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range in {
		if !strings.HasPrefix(k, ourAnnotationPrefix) {
			out[k] = v
		}
	}
	out[metadata.LatestObservedAPIVersionAnnotation] = apiVersionObserved
	out[metadata.StorageObservedAPIVersionAnnotation] = apiVersionObserved
	return out
}

type handbackOptions struct {
	kubeconfig, namespace string
	// env overrides the environment of upstream's operator (defaultUpstreamEnv).
	env []string
	// allowReissue hands back where the certificates cannot be stamped for
	// upstream's operator, which then reissues them all.
	allowReissue bool
}

// NewHandbackCommand returns `handback`.
func NewHandbackCommand() *cobra.Command {
	var o handbackOptions
	cmd := &cobra.Command{
		Use:   "handback [--kubeconfig F] [--namespace NS] [--env NAME=VALUE]... [--allow-reissue]",
		Short: "Leave the KubeVirt install to upstream's virt-operator: run with this operator stopped, before starting upstream's",
		Long: `Removes what upstream's virt-operator does not know and would keep, stale: this operator's
conditions, status fields and annotations on the KubeVirt CR, its install-strategy ConfigMaps
(upstream generates its own) and its install-strategy writer policy. Stamps every certificate
Secret and CA ConfigMap as upstream's operator will (its deployment ID, version, registry, the
CR's generation), so that it reissues no certificate. Nothing of KubeVirt itself changes and no
pod restarts. Refused while this operator's Deployment has replicas.

Upstream's deployment ID depends on its operator's environment: by default the one its release
manifest sets (VIRT_OPERATOR_IMAGE=<registry>/virt-operator:<the release that runs>); --env sets
each variable its Deployment sets otherwise. Where the certificates cannot be stamped (a release
whose operator is not known here, a customizeComponents patch of a certificate Secret), it says
why and changes nothing, unless --allow-reissue.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, _, err := newClient(o.kubeconfig)
			if err != nil {
				return err
			}
			if o.namespace == "" {
				o.namespace = DefaultNamespace()
			}
			return handback(cmd.Context(), c, o, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, then the in-cluster config)")
	cmd.Flags().StringVar(&o.namespace, "namespace", "", "the operator's namespace (default: $POD_NAMESPACE, else kubevirt)")
	cmd.Flags().StringArrayVar(&o.env, "env", nil, "NAME=VALUE of upstream's operator's environment, as its Deployment sets it (repeatable; default: VIRT_OPERATOR_IMAGE as its release manifest sets it)")
	cmd.Flags().BoolVar(&o.allowReissue, "allow-reissue", false, "hand back even where the certificates cannot be stamped for upstream's operator, which then reissues every one")
	return cmd
}

func handback(ctx context.Context, c client.Client, o handbackOptions, out io.Writer) error {
	namespace := o.namespace
	op := &appsv1.Deployment{}
	switch err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "virt-operator"}, op); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return err
	case op.Spec.Replicas == nil || *op.Spec.Replicas > 0 || op.Status.Replicas > 0:
		return fmt.Errorf("deployment %s/virt-operator still runs: scale it to 0 first, or it writes its status back", namespace)
	}
	list := &v1.KubeVirtList{}
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return err
	}
	// Decided before anything is written: a refusal changes nothing.
	stamps, err := planCertificateStamps(ctx, c, o, list.Items, out)
	if err != nil {
		return err
	}
	ours := map[string]bool{}
	for i := range list.Items {
		kv := &list.Items[i]
		ours[kv.Status.TargetDeploymentID], ours[kv.Status.ObservedDeploymentID] = true, true
		for _, ref := range kv.Status.InstallStrategies {
			ours[ref.DeploymentID] = true
		}
		base := kv.DeepCopy()
		kv.Status = HandbackStatus(kv.Status)
		if err := c.Status().Patch(ctx, kv, client.MergeFrom(base)); err != nil {
			return fmt.Errorf("KubeVirt %s status: %w", kv.Name, err)
		}
		base = kv.DeepCopy()
		kv.Annotations = HandbackAnnotations(kv.Annotations)
		if err := c.Patch(ctx, kv, client.MergeFrom(base)); err != nil {
			return fmt.Errorf("KubeVirt %s annotations: %w", kv.Name, err)
		}
		_, _ = fmt.Fprintf(out, "KubeVirt %s/%s: this operator's conditions, status fields and annotations removed\n", kv.Namespace, kv.Name)
	}
	if stamps != nil {
		if err := stampCertificates(ctx, c, namespace, *stamps, out); err != nil {
			return err
		}
	}
	cms := &corev1.ConfigMapList{}
	if err := c.List(ctx, cms, client.InNamespace(namespace), client.HasLabels{metadata.InstallStrategyLabel}); err != nil {
		return err
	}
	// This operator's strategies are those of its deployment IDs (a release's
	// own operator dumps delegated ones under this operator's ID) and those
	// its own dumper marks with the monitoring namespace.
	delete(ours, "")
	for i := range cms.Items {
		cm := &cms.Items[i]
		_, marked := cm.Annotations[strategy.MonitorNamespaceAnnotation]
		if !marked && !ours[cm.Annotations[metadata.InstallStrategyIdentifierAnnotation]] {
			continue // upstream's own
		}
		if err := client.IgnoreNotFound(c.Delete(ctx, cm)); err != nil {
			return err
		}
		_, _ = fmt.Fprintf(out, "ConfigMap %s/%s: this operator's install strategy deleted\n", cm.Namespace, cm.Name)
	}
	// The writer policy would refuse the strategy upstream's operator writes.
	policy, binding := trust.WriterPolicy(namespace, "")
	for _, o := range []client.Object{binding, policy} {
		switch err := c.Delete(ctx, o); {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("deleting the install-strategy writer policy %s: %w", o.GetName(), err)
		default:
			_, _ = fmt.Fprintf(out, "%s %s: this operator's install-strategy writer policy deleted\n", o.GetObjectKind().GroupVersionKind().Kind, o.GetName())
		}
	}
	_, _ = fmt.Fprintln(out, "Done: start upstream's virt-operator.")
	return nil
}
