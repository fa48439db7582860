package workloads

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Unlistable are the CRDs among crds whose objects the operator may not list,
// so whose kinds would count as unknown: a delegated release's new kinds, which
// the RBAC generated for the builtin releases does not grant. Each CRD is one
// SelfSubjectAccessReview (Kubernetes lets every authenticated user make them),
// so a permission added by hand is seen.
func Unlistable(ctx context.Context, c client.Client, crds []*apiextensionsv1.CustomResourceDefinition) ([]string, error) {
	var out []string
	for _, crd := range crds {
		if _, skip := notUserData[crd.Name]; skip {
			continue
		}
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural}}}
		if err := c.Create(ctx, review); err != nil {
			return nil, fmt.Errorf("asking whether the operator may list the objects of CRD %s: %w", crd.Name, err)
		}
		if !review.Status.Allowed {
			out = append(out, crd.Name)
		}
	}
	return out, nil
}
