package sandbox

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// layout holds every path and port of one sandbox; the flag builders below are pure
// functions of it so they can be unit-tested.
type layout struct {
	Dir                               string
	EtcdPort, EtcdPeerPort, APIPort   int
	Certs                             certFiles
	TokenFile, Kubeconfig, StagesFile string
	AuditPolicy, AuditLog             string // AuditLog empty: no auditing
	AuditUsers                        []string
	// Webhooks: the API server calls admission webhooks (see Options.Webhooks).
	Webhooks bool
	// Uncompressed: the API server never gzips a response (see
	// Options.UncompressedResponses).
	Uncompressed bool
}

func newLayout(dir string, ports []int, auditLog string) layout {
	l := layout{
		Dir:          dir,
		EtcdPort:     ports[0],
		EtcdPeerPort: ports[1],
		APIPort:      ports[2],
		Certs:        newCertFiles(dir),
		TokenFile:    filepath.Join(dir, "certs", "tokens.csv"),
		Kubeconfig:   filepath.Join(dir, "kubeconfig"),
		StagesFile:   filepath.Join(dir, "kwok-stages.yaml"),
		AuditLog:     auditLog,
	}
	if auditLog != "" {
		l.AuditPolicy = filepath.Join(dir, "audit-policy.yaml")
	}
	return l
}

func (l layout) etcdURL() string   { return fmt.Sprintf("http://127.0.0.1:%d", l.EtcdPort) }
func (l layout) serverURL() string { return fmt.Sprintf("https://127.0.0.1:%d", l.APIPort) }
func (l layout) logPath(name string) string {
	return filepath.Join(l.Dir, "logs", name+".log")
}

func etcdArgs(l layout) []string {
	return []string{
		"--name=sandbox",
		"--data-dir=" + filepath.Join(l.Dir, "etcd"),
		"--listen-client-urls=" + l.etcdURL(),
		"--advertise-client-urls=" + l.etcdURL(),
		fmt.Sprintf("--listen-peer-urls=http://127.0.0.1:%d", l.EtcdPeerPort),
		fmt.Sprintf("--initial-advertise-peer-urls=http://127.0.0.1:%d", l.EtcdPeerPort),
		fmt.Sprintf("--initial-cluster=sandbox=http://127.0.0.1:%d", l.EtcdPeerPort),
		"--unsafe-no-fsync", // throw-away data; fsync on a shared disk slows every write
		"--log-level=warn",
	}
}

func apiserverArgs(l layout) []string {
	args := []string{
		"--etcd-servers=" + l.etcdURL(),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", l.APIPort),
		"--cert-dir=" + filepath.Join(l.Dir, "certs"),
		"--tls-cert-file=" + l.Certs.ServingCert,
		"--tls-private-key-file=" + l.Certs.ServingKey,
		"--client-ca-file=" + l.Certs.CACert,
		"--token-auth-file=" + l.TokenFile,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + l.Certs.SAPub,
		"--service-account-signing-key-file=" + l.Certs.SAKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true",
		// See doc.go: no not-ready taint on new nodes, and no calls to webhooks
		// whose backends (virt-api) never run on kwok nodes, unless asked.
		"--disable-admission-plugins=" + disabledAdmission(l.Webhooks),
		// The apiserver's own Endpoints for the kubernetes Service would point at
		// 127.0.0.1, which EndpointSlice validation refuses; nothing here needs them.
		"--endpoint-reconciler-type=none",
		// An aggregated API server (KubeVirt's virt-api) refuses to start without a
		// requestheader CA in kube-system/extension-apiserver-authentication.
		"--requestheader-client-ca-file=" + l.Certs.CACert,
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		// Deleting a CRD or a namespace deletes its objects one by one, by
		// default one at a time: an uninstall with thousands of VMs waits on it.
		"--delete-collection-workers=8",
	}
	if l.Uncompressed {
		args = append(args, "--feature-gates=APIResponseCompression=false")
	}
	if l.AuditLog != "" {
		args = append(args,
			"--audit-policy-file="+l.AuditPolicy,
			"--audit-log-path="+l.AuditLog,
			"--audit-log-maxbackup=0", // keep one file for the reader to parse
		)
	}
	return args
}

// disabledAdmission are the admission plugins the API server runs without.
func disabledAdmission(webhooks bool) string {
	if webhooks {
		return "TaintNodesByCondition"
	}
	return "TaintNodesByCondition,ValidatingAdmissionWebhook,MutatingAdmissionWebhook"
}

func controllerManagerArgs(l layout) []string {
	return []string{
		"--kubeconfig=" + l.Kubeconfig,
		"--service-account-private-key-file=" + l.Certs.SAKey,
		"--root-ca-file=" + l.Certs.CACert, // kube-root-ca.crt configmaps
		"--leader-elect=false",
		"--secure-port=0",
		"--controllers=*,-nodeipam,-nodelifecycle",
		"--use-service-account-credentials=false",
		// Default 20 QPS throttles DaemonSets of hundreds of pods.
		"--kube-api-qps=200",
		"--kube-api-burst=400",
	}
}

func schedulerArgs(l layout) []string {
	return []string{
		"--kubeconfig=" + l.Kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
		"--kube-api-qps=200",
		"--kube-api-burst=400",
	}
}

func kwokArgs(l layout) []string {
	return []string{
		"--kubeconfig=" + l.Kubeconfig,
		// The sandbox's own nodes only: a node created without the label is one
		// no kubelet serves (tests use it as a NotReady node).
		"--manage-nodes-with-label-selector=" + nodeLabel + "=" + nodeLabelValue,
		"--config=" + l.StagesFile,
		"--node-ip=10.255.0.1",
		"--cidr=10.128.0.0/9", // pods of nodes without a podCIDR; clear of the service range
	}
}

// auditPolicy logs every request (of users, when given) once, at
// ResponseComplete, with metadata only.
func auditPolicy(users []string) string {
	policy := "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [\"RequestReceived\"]\nrules:\n"
	if len(users) == 0 {
		return policy + "- level: Metadata\n"
	}
	quoted := make([]string, len(users))
	for i, u := range users {
		quoted[i] = strconv.Quote(u)
	}
	return policy + "- level: Metadata\n  users: [" + strings.Join(quoted, ", ") + "]\n- level: None\n"
}

// joinArgs renders args for a log line.
func joinArgs(bin string, args []string) string {
	return bin + " " + strings.Join(args, " ")
}
