package strategy

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func ns(name string) client.Object {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func sa(namespace, name string) client.Object {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
}

func TestDetectMonitorNamespace(t *testing.T) {
	defaults := []string{"openshift-monitoring", "monitoring"}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts"}, "prometheus-k8s", errors.New("no"))
	cases := []struct {
		name       string
		objects    []client.Object
		candidates []string
		account    string
		getErr     error // returned for every ServiceAccount GET
		want       string
		wantErr    bool
	}{
		{"first namespace and its account", []client.Object{ns("openshift-monitoring"), sa("openshift-monitoring", "prometheus-k8s")}, defaults, "prometheus-k8s", nil, "openshift-monitoring", false},
		{"account only in the second", []client.Object{ns("openshift-monitoring"), ns("monitoring"), sa("monitoring", "prometheus-k8s")}, defaults, "prometheus-k8s", nil, "monitoring", false},
		{"account in both: the first wins", []client.Object{ns("openshift-monitoring"), sa("openshift-monitoring", "prometheus-k8s"), ns("monitoring"), sa("monitoring", "prometheus-k8s")}, defaults, "prometheus-k8s", nil, "openshift-monitoring", false},
		{"account in neither", []client.Object{ns("openshift-monitoring"), ns("monitoring")}, defaults, "prometheus-k8s", nil, "", false},
		{"no candidate namespace exists", nil, defaults, "prometheus-k8s", nil, "", false},
		{"another account name", []client.Object{ns("monitoring"), sa("monitoring", "prometheus-k8s"), sa("monitoring", "prom")}, defaults, "prom", nil, "monitoring", false},
		{"a namespace without the account is not enough", []client.Object{ns("monitoring"), sa("monitoring", "other")}, defaults, "prometheus-k8s", nil, "", false},
		{"only spec.monitorNamespace is tried", []client.Object{ns("monitoring"), sa("monitoring", "prometheus-k8s"), ns("custom")}, []string{"custom"}, "prometheus-k8s", nil, "", false},
		{"empty candidates are skipped", []client.Object{ns("monitoring"), sa("monitoring", "prometheus-k8s")}, []string{"", "monitoring"}, "prometheus-k8s", nil, "monitoring", false},
		{"no candidates", nil, nil, "prometheus-k8s", nil, "", false},
		{"another error aborts", []client.Object{ns("monitoring")}, defaults, "prometheus-k8s", forbidden, "", true},
		{"no account name", nil, defaults, "", nil, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithObjects(tc.objects...).WithInterceptorFuncs(interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if _, isSA := obj.(*corev1.ServiceAccount); isSA && tc.getErr != nil {
						return tc.getErr
					}
					return c.Get(ctx, key, obj, opts...)
				},
			}).Build()
			got, err := DetectMonitorNamespace(context.Background(), c, tc.candidates, tc.account)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if tc.wantErr && tc.getErr != nil && !errors.Is(err, tc.getErr) {
				t.Errorf("error %v does not wrap the API error", err)
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// A GET that fails with something other than NotFound aborts before any later
// candidate is tried; no Namespace is read.
func TestDetectMonitorNamespaceAbortsOnError(t *testing.T) {
	var gets []string
	c := fake.NewClientBuilder().WithObjects(ns("monitoring"), sa("monitoring", "prometheus-k8s")).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			gets = append(gets, key.String())
			if _, isNamespace := obj.(*corev1.Namespace); isNamespace {
				t.Errorf("read Namespace %s", key.Name)
			}
			if key.Namespace == "openshift-monitoring" {
				return apierrors.NewServiceUnavailable("etcd is down")
			}
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()
	got, err := DetectMonitorNamespace(context.Background(), c, []string{"openshift-monitoring", "monitoring"}, "prometheus-k8s")
	if err == nil || !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("got %q, %v; want the ServiceUnavailable error", got, err)
	}
	if len(gets) != 1 {
		t.Errorf("GETs after the error: %v", gets)
	}
}
