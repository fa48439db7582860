package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virt-operator/virt-operator/internal/operator"
	"github.com/virt-operator/virt-operator/internal/release"
	"github.com/virt-operator/virt-operator/internal/sandbox"
	"github.com/virt-operator/virt-operator/internal/sandbox/sandboxtest"
	"github.com/virt-operator/virt-operator/internal/strategy/generate"
)

// waitTimeout is every wait's deadline: a minute, which only catches what
// never happens; the machine's speed decides how soon a wait ends, never
// whether it passes.
const waitTimeout = time.Minute

// env is the API server every test in this package shares.
var (
	restConfig *rest.Config
	k8s        client.Client
)

func TestMain(m *testing.M) {
	os.Exit(runWithAPIServer(m))
}

func runWithAPIServer(m *testing.M) int {
	root := sandboxtest.RepoRoot()
	bins, err := sandbox.DefaultBinDir()
	if err == nil {
		err = sandbox.CheckBinaries(bins)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The operator's own KubeVirt CRD, and the CRDs KubeVirt's install strategy
	// holds (the VM kinds among them), as the default release has them.
	crds, err := generate.ReleaseCRDs(release.Default())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: bins,
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		CRDs:                  crds,
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting envtest:", err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	scheme, err := operator.NewScheme()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	restConfig = cfg
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// createNamespace makes a fresh namespace for one test.
func createNamespace(t *testing.T, ctx context.Context, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := k8s.Create(ctx, ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	return ns.Name
}
