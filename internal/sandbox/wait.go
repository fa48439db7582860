package sandbox

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// waitFor polls check until it returns true. It fails as soon as any started process
// has exited, or after timeout, naming component and quoting the end of its log.
func (s *Sandbox) waitFor(ctx context.Context, component string, timeout time.Duration, check func(context.Context) (bool, error)) error {
	deadline := time.Now().Add(timeout)
	var lastErr error
	for {
		for _, p := range s.procs {
			if p.exited() {
				return p.deathError()
			}
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ok, err := check(cctx)
		cancel()
		if ok {
			return nil
		}
		if err != nil {
			lastErr = err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("waiting for %s: %w", component, ctx.Err())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s (last error: %v); last lines of %s:\n%s",
				component, timeout, lastErr, s.layout.logPath(component), tailFile(s.layout.logPath(component), 20))
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// converge runs, concurrently, what Up needs after every process started: nodes
// created and Ready (proves kwok), CRDs Established, the controller manager's
// service accounts and root CA config map, a probe pod scheduled and Ready, the
// hostexec runner watching pods and the VM simulator watching VMs (once the CRDs
// it waits for are there).
func (s *Sandbox) converge(ctx context.Context, o Options, hx hostExec, vs vmSim) error {
	g, ctx := errgroup.WithContext(ctx)
	if vs.binary != "" {
		g.Go(func() error {
			start := time.Now()
			if err := s.waitFor(ctx, vmSimName, stepTimeout, vs.ready); err != nil {
				return err
			}
			s.logf("VM simulator watching VMs in %s", since(start))
			return nil
		})
	}
	if hx.binary != "" {
		g.Go(func() error {
			start := time.Now()
			if err := s.waitFor(ctx, hostExecName, stepTimeout, hx.ready); err != nil {
				return err
			}
			s.logf("hostexec runner watching pods in %s", since(start))
			return nil
		})
	}
	g.Go(func() error {
		start := time.Now()
		if err := createNodes(ctx, s.client, 0, o.Nodes); err != nil {
			return err
		}
		if err := s.waitFor(ctx, "kwok", stepTimeout+time.Duration(o.Nodes)*50*time.Millisecond, s.nodesReady(o.Nodes)); err != nil {
			return err
		}
		s.logf("%d nodes Ready in %s", o.Nodes, since(start))
		return nil
	})
	if o.CRDDir != "" || len(vs.crds) > 0 {
		g.Go(func() error { return s.installCRDs(ctx, o.CRDDir, vs.crds) })
	}
	g.Go(func() error {
		start := time.Now()
		if err := s.waitFor(ctx, "kube-controller-manager", stepTimeout, s.controllerManagerWorking); err != nil {
			return err
		}
		s.logf("kube-controller-manager working in %s", since(start))
		if o.Nodes == 0 {
			return nil // nowhere to schedule a probe pod
		}
		start = time.Now()
		if err := s.probePod(ctx); err != nil {
			return err
		}
		s.logf("kube-scheduler and kwok ran a probe pod in %s", since(start))
		return nil
	})
	return g.Wait()
}

// installCRDs creates the CRDs of dir ("" for none) and extra, and waits until they
// are Established.
func (s *Sandbox) installCRDs(ctx context.Context, dir string, extra []*apiextensionsv1.CustomResourceDefinition) error {
	start := time.Now()
	var crds []*apiextensionsv1.CustomResourceDefinition
	if dir != "" {
		var err error
		if crds, err = readCRDs(dir); err != nil {
			return err
		}
	}
	crds = append(crds, extra...)
	c, err := s.apiextensionsClient()
	if err != nil {
		return err
	}
	if err := createCRDs(ctx, c, crds); err != nil {
		return err
	}
	established := func(ctx context.Context) (bool, error) { return crdsEstablished(ctx, c, crds) }
	if err := s.waitFor(ctx, "kube-apiserver", stepTimeout, established); err != nil {
		return fmt.Errorf("CRDs: %w", err)
	}
	s.logf("%d CRDs Established in %s", len(crds), since(start))
	return nil
}

func (s *Sandbox) etcdHealthy(ctx context.Context) (bool, error) {
	body, err := s.get(ctx, http.DefaultClient, s.layout.etcdURL()+"/health", "")
	return err == nil && strings.Contains(body, `"true"`), err
}

func (s *Sandbox) apiserverReady(ctx context.Context) (bool, error) {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.layout.Certs.CAPEM)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer client.CloseIdleConnections()
	_, err := s.get(ctx, client, s.layout.serverURL()+"/readyz", s.rest.BearerToken)
	return err == nil, err
}

// get returns the body of a 200 response.
func (s *Sandbox) get(ctx context.Context, client *http.Client, url, token string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %.200s", url, resp.Status, body)
	}
	return string(body), nil
}

// nodesReady is satisfied when at least want kwok nodes exist and all are Ready.
func (s *Sandbox) nodesReady(want int) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		ready, total, err := readyNodes(ctx, s.client)
		return err == nil && total >= want && ready == total, err
	}
}

// controllerManagerWorking checks the work of two kcm controllers: default service
// accounts and the kube-root-ca.crt config map (from --root-ca-file).
func (s *Sandbox) controllerManagerWorking(ctx context.Context) (bool, error) {
	// Pods are refused until their namespace's default service account exists.
	for _, ns := range []string{"kube-system", "default"} {
		if _, err := s.client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err != nil {
			return false, err
		}
	}
	if _, err := s.client.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{}); err != nil {
		return false, err
	}
	return true, nil
}

// probePod creates a pod, waits until kube-scheduler bound it and kwok made it Ready,
// and deletes it.
func (s *Sandbox) probePod(ctx context.Context) error {
	pods := s.client.CoreV1().Pods("kube-system")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sandbox-probe"},
		Spec: corev1.PodSpec{
			Containers:                   []corev1.Container{{Name: "probe", Image: "sandbox.local/probe:v1"}},
			Tolerations:                  []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			AutomountServiceAccountToken: new(false),
		},
	}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating probe pod: %w", err)
	}
	get := func(ctx context.Context) (*corev1.Pod, error) { return pods.Get(ctx, pod.Name, metav1.GetOptions{}) }
	bound := func(ctx context.Context) (bool, error) {
		p, err := get(ctx)
		return err == nil && p.Spec.NodeName != "", err
	}
	if err := s.waitFor(ctx, "kube-scheduler", stepTimeout, bound); err != nil {
		return fmt.Errorf("probe pod not scheduled: %w", err)
	}
	ready := func(ctx context.Context) (bool, error) {
		p, err := get(ctx)
		if err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	}
	if err := s.waitFor(ctx, "kwok", stepTimeout, ready); err != nil {
		return fmt.Errorf("probe pod not Ready: %w", err)
	}
	// kwok's pod-delete stage removes it once marked for deletion; no need to wait.
	return pods.Delete(ctx, pod.Name, metav1.DeleteOptions{})
}
