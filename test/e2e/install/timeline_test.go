package install_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/rollout"
)

// timeline records, by polling fast, when each visible step of an upgrade
// happened (handler phase, update strategy, Deployments rolling, observed
// version), so a slow upgrade says where its time went. It reads four objects
// per poll, never the pods, so it costs the API server little at 200 nodes.
type timeline struct {
	mu    sync.Mutex
	start time.Time
	last  map[string]string
	lines []string
}

func (e *env) recordTimeline(ctx context.Context) *timeline {
	tl := &timeline{start: time.Now(), last: map[string]string{}}
	go func() {
		_ = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			kv := &v1.KubeVirt{}
			if err := e.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "kubevirt"}, kv); err == nil {
				tl.note("target", kv.Status.TargetKubeVirtVersion)
				tl.note("observed", kv.Status.ObservedKubeVirtVersion)
				if h := kv.Status.HandlerRollout; h != nil {
					tl.note("handler phase", h.Phase)
				}
			}
			if ds, err := e.tryDaemonSet(ctx, "virt-handler"); err == nil {
				tl.note("handler strategy", rollout.StrategyString(ds.Spec.UpdateStrategy))
				tl.note("handler template", ds.Spec.Template.Spec.Containers[0].Image)
				st := ds.Status
				tl.note("handler updated/ready", fmt.Sprintf("%d/%d of %d", st.UpdatedNumberScheduled, st.NumberReady, st.DesiredNumberScheduled))
			}
			for _, name := range []string{"virt-controller", "virt-api"} {
				d := &appsv1.Deployment{}
				if err := e.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, d); err == nil {
					tl.note(name+" template", d.Spec.Template.Spec.Containers[0].Image)
					st := d.Status
					tl.note(name+" updated/ready", fmt.Sprintf("%d/%d of %d", st.UpdatedReplicas, st.ReadyReplicas, st.Replicas))
				}
			}
			return false, nil
		})
	}()
	return tl
}

// note records key's value when it changes.
func (tl *timeline) note(key, value string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if prev, ok := tl.last[key]; ok && prev == value {
		return
	}
	tl.last[key] = value
	tl.lines = append(tl.lines, fmt.Sprintf("%6.2fs %s: %s", time.Since(tl.start).Seconds(), key, value))
}

func (tl *timeline) String() string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return strings.Join(tl.lines, "\n")
}
