package apply

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func TestApplyByKindKeepsKindOrderAndWritesAll(t *testing.T) {
	var (
		mu    sync.Mutex
		kinds []string
	)
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithInterceptorFuncs(interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			mu.Lock()
			kinds = append(kinds, obj.(interface{ GetKind() string }).GetKind())
			mu.Unlock()
			return c.Apply(ctx, obj, opts...)
		},
	}).Build()
	desired := []client.Object{clusterRole("a"), clusterRole("b"), clusterRole("c"),
		clusterRoleBinding("a"), clusterRoleBinding("b"), serviceAccount("a"), serviceAccount("b")}
	ap := &Applier{Client: c}
	if _, err := ap.ApplyByKind(context.Background(), Plan(desired, nil, nil), 4); err != nil {
		t.Fatal(err)
	}
	want := "ClusterRole ClusterRole ClusterRole ClusterRoleBinding ClusterRoleBinding ServiceAccount ServiceAccount"
	if got := strings.Join(kinds, " "); got != want {
		t.Fatalf("writes by kind: %s, want %s", got, want)
	}
}

func TestApplyByKindStopsAfterAKindFails(t *testing.T) {
	var (
		mu      sync.Mutex
		written []string
	)
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithInterceptorFuncs(interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			u := obj.(interface {
				GetKind() string
				GetName() string
			})
			if u.GetName() == "bad" {
				return errors.New("refused")
			}
			mu.Lock()
			written = append(written, u.GetKind()+"/"+u.GetName())
			mu.Unlock()
			return c.Apply(ctx, obj, opts...)
		},
	}).Build()
	desired := []client.Object{clusterRole("a"), clusterRole("bad"), clusterRole("c"), serviceAccount("a")}
	_, err := (&Applier{Client: c}).ApplyByKind(context.Background(), Plan(desired, nil, nil), 2)
	if err == nil || !strings.Contains(err.Error(), "ClusterRole bad") {
		t.Fatalf("error %v does not name the object that failed", err)
	}
	if got := strings.Join(written, " "); strings.Contains(got, "ServiceAccount") || !strings.Contains(got, "ClusterRole/c") {
		t.Fatalf("written %s: want the rest of the failed kind, nothing of the next", got)
	}
}
