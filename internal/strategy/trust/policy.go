package trust

import (
	"fmt"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy/dumpjob"
)

// podNameExtra is the user info a pod-bound ServiceAccount token carries: the
// name of the pod it is bound to (Kubernetes 1.30 and later).
const podNameExtra = "authentication.kubernetes.io/pod-name"

// WriterPolicyName names the writer policy and its binding of the operator in
// namespace (they are cluster-scoped, one per operator namespace).
func WriterPolicyName(namespace string) string {
	return "virt-operator-install-strategy-writers." + namespace
}

// WriterPolicy is the ValidatingAdmissionPolicy, and its binding to namespace,
// that lets only the install-strategy Job write strategy ConfigMaps there:
// creating or changing a ConfigMap that carries (or carried) the
// install-strategy label is allowed only to dumperAccount, from a pod-bound
// token of a pod whose name is that of the Job for the ConfigMap's deployment
// ID (dumpjob.Name's prefix for the ID). So a namespace editor,
// virt-controller's ServiceAccount (which may write ConfigMaps cluster-wide)
// or the Job of one release cannot write the strategy of another ID; only
// who can start pods as the dumper ServiceAccount in the namespace can, and
// that is a namespace admin, who can run the operator's own account anyway.
// Deletion is not restricted: a deleted strategy is generated again.
func WriterPolicy(namespace, dumperAccount string) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	name := WriterPolicyName(namespace)
	labels := map[string]string{metadata.ManagedByLabel: metadata.ManagedByValue}
	user := "system:serviceaccount:" + namespace + ":" + dumperAccount
	hasLabel := func(obj string) string {
		return fmt.Sprintf("has(%[1]s.metadata.labels) && '%[2]s' in %[1]s.metadata.labels", obj, metadata.InstallStrategyLabel)
	}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				}}},
			},
			Variables: []admissionregistrationv1.Variable{
				{Name: "strategy", Expression: hasLabel("object") + " || (request.operation == 'UPDATE' && " + hasLabel("oldObject") + ")"},
				{Name: "id", Expression: fmt.Sprintf("has(object.metadata.annotations) && '%[1]s' in object.metadata.annotations ? object.metadata.annotations['%[1]s'] : ''",
					metadata.InstallStrategyIdentifierAnnotation)},
				{Name: "pods", Expression: fmt.Sprintf("'%[1]s' in request.userInfo.extra ? request.userInfo.extra['%[1]s'] : []", podNameExtra)},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: strings.Join([]string{
					"!variables.strategy",
					fmt.Sprintf("(request.userInfo.username == '%s' && size(variables.id) >= %d && variables.pods.exists(p, p.startsWith('%s' + variables.id.substring(0, %d) + '-')))",
						user, dumpjob.IDPrefixLength, dumpjob.NamePrefix, dumpjob.IDPrefixLength),
				}, " || "),
				MessageExpression: fmt.Sprintf("'install-strategy ConfigMaps in namespace %s are written only by the install-strategy Job of their deployment ID (ServiceAccount %s); ' + request.userInfo.username + ' may not'",
					namespace, dumperAccount),
				Reason: ptr.To(metav1.StatusReasonForbidden),
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": namespace}},
			},
		},
	}
	return policy, binding
}

// PolicyInForce is since when the live writer policy and binding have been as
// the operator writes them: the latest write to either (their creation, or a
// manager's last change of them), provided that every write was the
// operator's own (manager) and each carries the desired content's hash (hash:
// the hash annotation the operator stamps). Zero when either is missing, was
// changed by anyone else, or holds other content.
func PolicyInForce(policy *admissionregistrationv1.ValidatingAdmissionPolicy, binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding,
	wantPolicyHash, wantBindingHash, hashAnnotation, manager string) time.Time {
	if policy == nil || binding == nil || policy.DeletionTimestamp != nil || binding.DeletionTimestamp != nil ||
		policy.Annotations[hashAnnotation] != wantPolicyHash || binding.Annotations[hashAnnotation] != wantBindingHash {
		return time.Time{}
	}
	var since time.Time
	for _, m := range []metav1.Object{policy, binding} {
		since = latest(since, m.GetCreationTimestamp().Time)
		for _, f := range m.GetManagedFields() {
			if f.Subresource != "" {
				continue // status: the API server's type checking
			}
			if f.Manager != manager {
				return time.Time{}
			}
			if f.Time != nil {
				since = latest(since, f.Time.Time)
			}
		}
	}
	return since
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
