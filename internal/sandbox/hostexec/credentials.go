package hostexec

import (
	"context"
	"fmt"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

// podTokenSeconds is how long a pod's token is valid: longer than any run.
const podTokenSeconds = 4 * 3600

// podKubeconfig writes DIR/kubeconfig: the runner's kubeconfig's cluster with a
// token of the pod's ServiceAccount (default "default"), bound to the pod, as
// the kubelet would mount it.
func (r *Runner) podKubeconfig(ctx context.Context, pod *corev1.Pod, dir string) (string, error) {
	account := pod.Spec.ServiceAccountName
	if account == "" {
		account = "default"
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To[int64](podTokenSeconds),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	tok, err := r.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, account, req, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("a token of ServiceAccount %s/%s: %w", pod.Namespace, account, err)
	}
	base, err := clientcmd.LoadFromFile(r.o.Kubeconfig)
	if err != nil {
		return "", err
	}
	cur := base.Contexts[base.CurrentContext]
	if cur == nil || base.Clusters[cur.Cluster] == nil {
		return "", fmt.Errorf("%s: no current context with a cluster", r.o.Kubeconfig)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["sandbox"] = base.Clusters[cur.Cluster]
	cfg.AuthInfos[account] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts["pod"] = &clientcmdapi.Context{Cluster: "sandbox", AuthInfo: account, Namespace: pod.Namespace}
	cfg.CurrentContext = "pod"
	path := filepath.Join(dir, "kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}
