package hostexec

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// A pod's processes get the sandbox's server with a token of the pod's own
// ServiceAccount, bound to the pod; no admin credential is copied.
func TestPodKubeconfigCarriesThePodsServiceAccountToken(t *testing.T) {
	dir := t.TempDir()
	admin := clientcmdapi.NewConfig()
	admin.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443", CertificateAuthorityData: []byte("ca")}
	admin.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("cert"), ClientKeyData: []byte("key")}
	admin.Contexts["admin"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "admin"}
	admin.CurrentContext = "admin"
	adminPath := filepath.Join(dir, "admin")
	if err := clientcmd.WriteToFile(*admin, adminPath); err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset()
	var asked *authenticationv1.TokenRequest
	var account string
	client.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		create := a.(k8stesting.CreateAction)
		if a.GetSubresource() != "token" {
			return false, nil, nil
		}
		asked = create.GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		account = create.(k8stesting.CreateActionImpl).Name
		out := asked.DeepCopy()
		out.Status.Token = "pod-token"
		return true, out, nil
	})
	r := &Runner{client: client, o: Options{Kubeconfig: adminPath, PodCredentials: true}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "dump-1", UID: "uid-1"},
		Spec: corev1.PodSpec{ServiceAccountName: "virt-operator-strategy-dumper"}}
	path, err := r.podKubeconfig(context.Background(), pod, dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cur := got.Contexts[got.CurrentContext]
	auth := got.AuthInfos[cur.AuthInfo]
	if got.Clusters[cur.Cluster].Server != "https://127.0.0.1:6443" || auth.Token != "pod-token" || len(auth.ClientCertificateData) > 0 {
		t.Errorf("kubeconfig: server %s, auth %+v", got.Clusters[cur.Cluster].Server, auth)
	}
	if account != "virt-operator-strategy-dumper" || asked.Spec.BoundObjectRef == nil || asked.Spec.BoundObjectRef.UID != "uid-1" {
		t.Errorf("token asked for %q bound to %+v, want the pod's ServiceAccount bound to the pod", account, asked.Spec.BoundObjectRef)
	}
	if raw, _ := os.ReadFile(path); len(raw) == 0 {
		t.Error("empty kubeconfig")
	}
}
