package strategysource

import (
	"context"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/controller/kubevirt/report"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/strategy/trust"
)

// The operator writes the writer policy and its binding.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,verbs=list;watch;create;patch;delete

// writerPolicy keeps the writer policy in force while a deployment involved
// is of a release only its own operator image renders (whose strategy can be
// vouched for by its Job alone), and says since when it has been in force as
// the operator wrote it; zero while it is not (just written, changed by
// someone else, or not writable, which is reported).
func (s *Source) writerPolicy(ctx context.Context, res *Result, now time.Time, configs ...*deployid.Config) time.Time {
	delegated := ""
	for _, cfg := range configs {
		if cfg != nil && !builtin(cfg) {
			delegated = cfg.KubeVirtVersion
		}
	}
	if delegated == "" {
		return time.Time{}
	}
	policy, binding, err := DesiredWriterPolicy(s.Namespace, s.ServiceAccount)
	if err != nil {
		return s.policyProblem(res, delegated, err)
	}
	policyHash, bindingHash := policy.Annotations[apply.DesiredHashAnnotation], binding.Annotations[apply.DesiredHashAnnotation]
	livePolicy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	liveBinding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	if err := getOrNil(ctx, s.Client, policy.Name, &livePolicy); err != nil {
		return s.policyProblem(res, delegated, err)
	}
	if err := getOrNil(ctx, s.Client, binding.Name, &liveBinding); err != nil {
		return s.policyProblem(res, delegated, err)
	}
	if since := trust.PolicyInForce(livePolicy, liveBinding, policyHash, bindingHash, apply.DesiredHashAnnotation, apply.FieldManager); !since.IsZero() {
		return since
	}
	applier := &apply.Applier{Client: s.Client}
	for _, obj := range []client.Object{policy, binding} {
		if _, err := applier.ServerSideApply(ctx, obj); err != nil {
			return s.policyProblem(res, delegated, fmt.Errorf("writing %T %s: %w", obj, obj.GetName(), err))
		}
	}
	log.FromContext(ctx).Info("install-strategy writer policy written", "policy", policy.Name)
	// The cache shows the write soon; the settle time is counted from it.
	res.RequeueAfter(time.Second)
	return time.Time{}
}

func (s *Source) policyProblem(res *Result, version string, err error) time.Time {
	res.Fail(report.Problem{Reason: ReasonWriterPolicy, Warning: ReasonWriterPolicy, Message: fmt.Sprintf(
		"KubeVirt %s's install strategy comes from its own operator image, and is trusted only while the writer policy %s is in force, which cannot be written: %v",
		version, trust.WriterPolicyName(s.Namespace), err)})
	return time.Time{}
}

// DesiredWriterPolicy is the writer policy and its binding as the operator
// writes them: trust.WriterPolicy's, stamped with their content's hash.
func DesiredWriterPolicy(namespace, account string) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding, error) {
	policy, binding := trust.WriterPolicy(namespace, account)
	for _, o := range []client.Object{policy, binding} {
		if _, err := stampHash(o); err != nil {
			return nil, nil, err
		}
	}
	return policy, binding, nil
}

// stampHash puts obj's content hash in its DesiredHashAnnotation and returns it.
func stampHash(obj client.Object) (string, error) {
	hash, err := apply.Hash(obj)
	if err != nil {
		return "", err
	}
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[apply.DesiredHashAnnotation] = hash
	obj.SetAnnotations(annotations)
	return hash, nil
}

// getOrNil reads a cluster-scoped object into *obj, or sets *obj to nil when
// it does not exist.
func getOrNil[T client.Object](ctx context.Context, c client.Reader, name string, obj *T) error {
	err := c.Get(ctx, client.ObjectKey{Name: name}, *obj)
	if client.IgnoreNotFound(err) != nil {
		return err
	}
	if err != nil {
		var zero T
		*obj = zero
	}
	return nil
}
