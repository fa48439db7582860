package sandbox

import (
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const (
	adminUser   = "sandbox-admin"
	contextName = "sandbox"
)

// writeTokenFile writes kube-apiserver's static token file: one admin token whose
// user is in system:masters, which RBAC authorizes for everything.
func writeTokenFile(path, token string) error {
	line := fmt.Sprintf("%s,%s,%s,\"system:masters\"\n", token, adminUser, adminUser)
	return os.WriteFile(path, []byte(line), 0o600)
}

// writeKubeconfig writes the admin kubeconfig used by users and every component.
func writeKubeconfig(path, server string, caPEM []byte, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[contextName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[adminUser] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: adminUser}
	cfg.CurrentContext = contextName
	return clientcmd.WriteToFile(*cfg, path)
}

// restConfig is the admin client configuration with client-go's default rate limits.
func restConfig(server string, caPEM []byte, token string) *rest.Config {
	return &rest.Config{
		Host:            server,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: caPEM},
	}
}

// fastConfig is a copy of cfg for the sandbox's own bulk calls (node creation,
// CRDs): the local apiserver can take far more than client-go's default 5 QPS.
func fastConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = 500, 1000
	return c
}
