package cli

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/operator"
)

func statusClient(t *testing.T, kv *v1.KubeVirt) client.Client {
	t.Helper()
	scheme, err := operator.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(kv).WithStatusSubresource(kv).Build()
}

func deployedKV() *v1.KubeVirt {
	return &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: "kubevirt"},
		Status: v1.KubeVirtStatus{Phase: v1.KubeVirtPhaseDeployed, ObservedKubeVirtVersion: "v1.9.0", TargetKubeVirtVersion: "v1.9.0",
			ObservedDeploymentID: "a", TargetDeploymentID: "a"}}
}

func TestStatusCommand(t *testing.T) {
	opts := statusOptions{namespace: "kubevirt", name: "kubevirt", interval: 10 * time.Millisecond}
	t.Run("a deployed CR: one screen, exit 0", func(t *testing.T) {
		var out bytes.Buffer
		if err := runStatus(context.Background(), statusClient(t, deployedKV()), &out, opts, false); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "Version   v1.9.0") || strings.Contains(out.String(), "\033[") {
			t.Fatalf("plain screen expected:\n%s", out.String())
		}
	})
	t.Run("a Degraded CR: exit 1", func(t *testing.T) {
		kv := deployedKV()
		kv.Status.Conditions = []v1.KubeVirtCondition{{Type: v1.KubeVirtConditionStalled, Status: "True", Reason: "X", Message: "y"}}
		err := runStatus(context.Background(), statusClient(t, kv), &bytes.Buffer{}, opts, false)
		if ExitCode(err) != ExitFailure {
			t.Fatalf("exit %d (%v), want 1", ExitCode(err), err)
		}
	})
	t.Run("no CR: an error naming it", func(t *testing.T) {
		o := opts
		o.name = "other"
		err := runStatus(context.Background(), statusClient(t, deployedKV()), &bytes.Buffer{}, o, false)
		if err == nil || !strings.Contains(err.Error(), "no KubeVirt kubevirt/other") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("--watch follows an upgrade to its end, redrawing in a terminal", func(t *testing.T) {
		kv := deployedKV()
		kv.Status.TargetDeploymentID, kv.Status.TargetKubeVirtVersion = "b", "v1.9.1"
		c := statusClient(t, kv)
		// The upgrade ends once the first screen has been drawn (not after a
		// fixed sleep, which a busy machine can outlast before the first draw).
		var out bytes.Buffer
		drawn := &firstWrite{w: &out, done: make(chan struct{})}
		updated := make(chan error, 1)
		go func() {
			<-drawn.done
			got := &v1.KubeVirt{}
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(kv), got); err != nil {
				updated <- err
				return
			}
			got.Status.ObservedDeploymentID, got.Status.ObservedKubeVirtVersion = "b", "v1.9.1"
			updated <- c.Status().Update(context.Background(), got)
		}()
		o := opts
		o.watch = true
		// Generous: it only ends a watch that never sees the upgrade end.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := runStatus(ctx, c, drawn, o, true); err != nil || ctx.Err() != nil {
			t.Fatalf("err %v, ctx %v", err, ctx.Err())
		}
		if err := <-updated; err != nil {
			t.Fatal(err)
		}
		screens := strings.Split(out.String(), "\033[H\033[2J")
		if len(screens) < 3 || !strings.Contains(screens[1], "v1.9.0 -> v1.9.1") || !strings.Contains(screens[len(screens)-1], "Version   v1.9.1") {
			t.Fatalf("watch output, want the upgrade redrawn until done:\n%q", out.String())
		}
	})
	t.Run("bad flags", func(t *testing.T) {
		out, err := runCommand(t, NewStatusCommand(), "--interval", "0s")
		assertUsageError(t, out, err, "--interval")
	})
}

// firstWrite passes writes to w and closes done after the first.
type firstWrite struct {
	w    io.Writer
	done chan struct{}
	once sync.Once
}

func (f *firstWrite) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	f.once.Do(func() { close(f.done) })
	return n, err
}
