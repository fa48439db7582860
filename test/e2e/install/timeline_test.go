package install_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/rollout"
)

// timeline records, from watches, when each visible step of an upgrade
// happened (handler phase, update strategy, Deployments rolling, observed
// version), so a slow upgrade says where its time went. Watches, not polling:
// the API server pushes only changes, so recording costs the run next to
// nothing, and never the pods (200 at a time).
type timeline struct {
	mu    sync.Mutex
	start time.Time
	last  map[string]string
	lines []string
}

func (e *env) recordTimeline(ctx context.Context) *timeline {
	tl := &timeline{start: time.Now(), last: map[string]string{}}
	wc, err := client.NewWithWatch(e.sb.RESTConfig(), client.Options{Scheme: e.c.Scheme()})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, list := range []client.ObjectList{&v1.KubeVirtList{}, &appsv1.DaemonSetList{}, &appsv1.DeploymentList{}} {
		w, err := wc.Watch(ctx, list, client.InNamespace(namespace))
		if err != nil {
			e.t.Fatal(err)
		}
		go func() {
			defer w.Stop()
			for ev := range w.ResultChan() {
				tl.observe(ev.Object)
			}
		}()
	}
	return tl
}

// observe notes what an object of the upgrade shows.
func (tl *timeline) observe(obj runtime.Object) {
	switch o := obj.(type) {
	case *v1.KubeVirt:
		tl.note("target", o.Status.TargetKubeVirtVersion)
		tl.note("observed", o.Status.ObservedKubeVirtVersion)
		if h := o.Status.HandlerRollout; h != nil {
			tl.note("handler phase", h.Phase)
		}
	case *appsv1.DaemonSet:
		if o.Name != "virt-handler" {
			return
		}
		tl.note("handler strategy", rollout.StrategyString(o.Spec.UpdateStrategy))
		tl.note("handler template", o.Spec.Template.Spec.Containers[0].Image)
		st := o.Status
		tl.note("handler updated/ready", fmt.Sprintf("%d/%d of %d", st.UpdatedNumberScheduled, st.NumberReady, st.DesiredNumberScheduled))
	case *appsv1.Deployment:
		if o.Name != "virt-controller" && o.Name != "virt-api" {
			return
		}
		tl.note(o.Name+" template", o.Spec.Template.Spec.Containers[0].Image)
		st := o.Status
		tl.note(o.Name+" updated/ready", fmt.Sprintf("%d/%d of %d", st.UpdatedReplicas, st.ReadyReplicas, st.Replicas))
	}
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
