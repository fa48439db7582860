package generate

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/utils/ptr"
)

const (
	nodeRestrictionPolicy  = "kubevirt-node-restriction-policy"
	nodeRestrictionBinding = "kubevirt-node-restriction-binding"
)

// kubeVirtKey is true for the label and annotation keys virt-handler owns on
// nodes: those under kubevirt.io or one of its subdomains (kubevirt.io/schedulable,
// cpu-model.node.kubevirt.io/..., ...) and the cpumanager label.
const kubeVirtKey = `(k.matches('^([a-z0-9-]+\\.)*kubevirt\\.io/') || k == 'kubevirt.io' || k == 'cpumanager')`

// admissionPolicies restrict what virt-handler may change on nodes: it runs
// privileged on every node, so a compromised handler must not be able to
// relabel, taint or otherwise repurpose nodes. Node status goes through
// nodes/status and is not matched. Synced only when the API is served.
func (b *builder) admissionPolicies() {
	handler := fmt.Sprintf("system:serviceaccount:%s:%s", b.ns, saHandler)
	keep := func(field string) []admissionregistrationv1.Validation {
		o, n := "variables.old"+field, "variables.new"+field
		return []admissionregistrationv1.Validation{
			{
				Expression: fmt.Sprintf("%s.all(k, %s || (k in %s && %s[k] == %s[k]))", n, kubeVirtKey, o, o, n),
				Message:    fmt.Sprintf("kubevirt-handler may only add or change kubevirt.io %s of a node", strings.ToLower(field)),
			},
			{
				Expression: fmt.Sprintf("%s.all(k, %s || k in %s)", o, kubeVirtKey, n),
				Message:    fmt.Sprintf("kubevirt-handler may only remove kubevirt.io %s of a node", strings.ToLower(field)),
			},
		}
	}
	validations := []admissionregistrationv1.Validation{{
		Expression: "object.spec == oldObject.spec",
		Message:    "kubevirt-handler may not change the spec of a node",
	}}
	validations = append(validations, keep("Labels")...)
	validations = append(validations, keep("Annotations")...)

	b.add(&admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: meta(nodeRestrictionPolicy, "", nil),
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []op{opUpdate},
						Rule: admissionregistrationv1.Rule{
							APIGroups: []string{""}, APIVersions: []string{"*"}, Resources: []string{"nodes"},
						},
					},
				}},
			},
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name: "kubevirt-handler-only", Expression: fmt.Sprintf("request.userInfo.username == %q", handler),
			}},
			Variables: []admissionregistrationv1.Variable{
				{Name: "oldLabels", Expression: "has(oldObject.metadata.labels) ? oldObject.metadata.labels : {}"},
				{Name: "newLabels", Expression: "has(object.metadata.labels) ? object.metadata.labels : {}"},
				{Name: "oldAnnotations", Expression: "has(oldObject.metadata.annotations) ? oldObject.metadata.annotations : {}"},
				{Name: "newAnnotations", Expression: "has(object.metadata.annotations) ? object.metadata.annotations : {}"},
			},
			Validations: validations,
		},
	})
	b.add(&admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: meta(nodeRestrictionBinding, "", nil),
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        nodeRestrictionPolicy,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	})
}
