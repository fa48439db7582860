package workloads

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// templateAPI is an API server for one CRD, template.kubevirt.io's
// VirtualMachineTemplates, holding one template: discovery, the CRD, and the
// templates' metadata in every version it serves.
type templateAPI struct {
	mu     sync.Mutex
	served []string
}

func (a *templateAPI) serve(versions ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.served = versions
}

func (a *templateAPI) crd() *apiextensionsv1.CustomResourceDefinition {
	a.mu.Lock()
	defer a.mu.Unlock()
	return crdOf(schema.GroupVersionKind{Group: "template.kubevirt.io", Kind: "VirtualMachineTemplate"}, apiextensionsv1.NamespaceScoped, true, a.served...)
}

func (a *templateAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	crd := a.crd()
	reply := func(obj any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(obj)
	}
	notFound := func() {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(&metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound, Message: "the server could not find the requested resource"})
	}
	served := func(version string) bool {
		return slices.ContainsFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == version })
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.URL.Path == "/api":
		reply(&metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}})
	case r.URL.Path == "/apis":
		group := metav1.APIGroup{Name: crd.Spec.Group}
		for _, v := range crd.Spec.Versions {
			group.Versions = append(group.Versions, metav1.GroupVersionForDiscovery{GroupVersion: crd.Spec.Group + "/" + v.Name, Version: v.Name})
		}
		group.PreferredVersion = group.Versions[0]
		crds := metav1.GroupVersionForDiscovery{GroupVersion: "apiextensions.k8s.io/v1", Version: "v1"}
		reply(&metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
			Groups: []metav1.APIGroup{{Name: "apiextensions.k8s.io", Versions: []metav1.GroupVersionForDiscovery{crds}, PreferredVersion: crds}, group}})
	case r.URL.Path == "/apis/apiextensions.k8s.io/v1":
		reply(&metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "apiextensions.k8s.io/v1",
			APIResources: []metav1.APIResource{{Name: "customresourcedefinitions", Kind: "CustomResourceDefinition", Verbs: []string{"get", "list"}}}})
	case r.URL.Path == "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+crd.Name:
		crd.APIVersion, crd.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
		reply(crd)
	case len(parts) == 3 && parts[1] == crd.Spec.Group && served(parts[2]):
		reply(&metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: crd.Spec.Group + "/" + parts[2],
			APIResources: []metav1.APIResource{{Name: crd.Spec.Names.Plural, Kind: crd.Spec.Names.Kind, Namespaced: true, Verbs: []string{"get", "list"}}}})
	case len(parts) == 4 && parts[1] == crd.Spec.Group && served(parts[2]) && parts[3] == crd.Spec.Names.Plural:
		item := metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: crd.Spec.Group + "/" + parts[2], Kind: crd.Spec.Names.Kind},
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "fedora"}}
		reply(&metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadataList", APIVersion: "meta.k8s.io/v1"},
			Items: []metav1.PartialObjectMetadata{item}})
	default:
		notFound()
	}
}

// The rollback v1.9.0 -> v1.8.4 drops template.kubevirt.io's v1beta1, the
// preferred version, with the operator running: controller-runtime's REST
// mapper (a real one here, warmed up as the manager's is) still prefers it,
// and a list in it answers 404. The template is counted all the same, through
// the version its CRD serves now.
func TestCountAfterARollbackThatDropsThePreferredVersion(t *testing.T) {
	api := &templateAPI{}
	api.serve("v1beta1", "v1alpha1")
	server := httptest.NewServer(api)
	defer server.Close()
	cfg := &rest.Config{Host: server.URL}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme, Mapper: mapper, HTTPClient: httpClient})
	if err != nil {
		t.Fatal(err)
	}
	// The managed CRDs come from the operator's cache: here, a fake holding the CRD's metadata.
	crds := newClient(t, interceptor.Funcs{}, api.crd())
	gvr := schema.GroupVersionResource{Group: "template.kubevirt.io", Resource: "virtualmachinetemplates"}
	if gvk, err := mapper.KindFor(gvr); err != nil || gvk.Version != "v1beta1" {
		t.Fatalf("the mapper's kind before the rollback: %v, %v; want v1beta1", gvk, err)
	}
	before, err := CountManaged(context.Background(), crds, c)
	if err != nil || before.String() != "1 VirtualMachineTemplates" {
		t.Fatalf("before the rollback: %q, %v", before, err)
	}

	api.serve("v1alpha1")
	if gvk, err := mapper.KindFor(gvr); err != nil || gvk.Version != "v1beta1" {
		t.Fatalf("the mapper's kind after the rollback: %v, %v; the test needs it stale (v1beta1)", gvk, err)
	}
	after, err := CountManaged(context.Background(), crds, c)
	if err != nil || after.String() != "1 VirtualMachineTemplates" || after.Total() != 1 {
		t.Fatalf("after the rollback: %q (total %d), %v; want the template counted in v1alpha1", after, after.Total(), err)
	}
}
