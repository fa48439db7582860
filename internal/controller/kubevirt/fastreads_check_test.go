package kubevirt

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// The fast reads answer what the fake answers, after every kind of write: a
// mirrored metadata read must never outlive the write that changed it.
func TestFastReadsReadWhatTheFakeReads(t *testing.T) {
	ctx := context.Background()
	seed := func() []client.Object {
		return []client.Object{
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "a", Labels: map[string]string{"app": "x"}}, Data: map[string]string{"k": "v"}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "b"}},
			&apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "vms.kubevirt.io", Labels: map[string]string{"app": "x"}}},
		}
	}
	scheme := testScheme(t)
	plain := fake.NewClientBuilder().WithScheme(scheme).WithObjects(seed()...).Build()
	fast := buildFastReads(fake.NewClientBuilder().WithScheme(scheme).WithObjects(seed()...), scheme, nil)

	crdMeta := func() client.ObjectList {
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinitionList"))
		return l
	}
	cmMeta := func() client.Object {
		o := &metav1.PartialObjectMetadata{}
		o.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
		return o
	}
	same := func(step string) {
		t.Helper()
		reads := []struct {
			name string
			read func(client.Client) (any, error)
		}{
			{"typed get", func(c client.Client) (any, error) {
				cm := &corev1.ConfigMap{}
				return cm, c.Get(ctx, client.ObjectKey{Namespace: "kubevirt", Name: "a"}, cm)
			}},
			{"metadata get", func(c client.Client) (any, error) {
				cm := cmMeta()
				return cm, c.Get(ctx, client.ObjectKey{Namespace: "kubevirt", Name: "a"}, cm)
			}},
			{"typed list in a namespace", func(c client.Client) (any, error) {
				l := &corev1.ConfigMapList{}
				return l.Items, c.List(ctx, l, client.InNamespace("kubevirt"))
			}},
			{"typed list by label", func(c client.Client) (any, error) {
				l := &corev1.ConfigMapList{}
				return l.Items, c.List(ctx, l, client.MatchingLabels{"app": "x"})
			}},
			{"metadata list by label", func(c client.Client) (any, error) {
				l := crdMeta()
				err := c.List(ctx, l, client.MatchingLabels{"app": "x"})
				return len(l.(*metav1.PartialObjectMetadataList).Items), err
			}},
			{"metadata list", func(c client.Client) (any, error) {
				l := crdMeta()
				err := c.List(ctx, l)
				var labels []map[string]string
				for _, item := range l.(*metav1.PartialObjectMetadataList).Items {
					labels = append(labels, item.Labels)
				}
				return labels, err
			}},
		}
		for _, r := range reads {
			want, wantErr := r.read(plain)
			got, gotErr := r.read(fast)
			if (wantErr == nil) != (gotErr == nil) {
				t.Fatalf("after %s, %s: error %v, the fake's %v", step, r.name, gotErr, wantErr)
			}
			if !equality.Semantic.DeepEqual(want, got) {
				t.Errorf("after %s, %s differs from the fake's:\nfake: %+v\nfast: %+v", step, r.name, want, got)
			}
		}
	}
	both := func(step string, write func(client.Client) error) {
		t.Helper()
		if err := write(plain); err != nil {
			t.Fatal(err)
		}
		if err := write(fast); err != nil {
			t.Fatal(err)
		}
		same(step)
	}
	same("nothing")
	both("a label patch", func(c client.Client) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "a"}}
		return c.Patch(ctx, cm, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"app":"y"}}}`)))
	})
	both("an update", func(c client.Client) error {
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "kubevirt", Name: "a"}, cm); err != nil {
			return err
		}
		cm.Labels["app"], cm.Data["k"] = "x", "w"
		return c.Update(ctx, cm)
	})
	both("a create", func(c client.Client) error {
		return c.Create(ctx, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "vmis.kubevirt.io", Labels: map[string]string{"app": "x"}}})
	})
	both("a delete", func(c client.Client) error {
		return c.Delete(ctx, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "vms.kubevirt.io"}})
	})
	both("a delete of the read one", func(c client.Client) error {
		return c.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "a"}})
	})
}
