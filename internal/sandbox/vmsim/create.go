package vmsim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// Defaults of CreateOptions.
const (
	DefaultNamespace  = "default"
	DefaultNamePrefix = "vm"
	DefaultWorkers    = 32
)

// CreateOptions say which VMs CreateVMs creates.
type CreateOptions struct {
	Namespace string // default DefaultNamespace (must exist)
	// NamePrefix names the VMs PREFIX-0000, PREFIX-0001, ... (at least four digits,
	// more when Count needs them). Default DefaultNamePrefix.
	NamePrefix string
	Count      int // VMs to create, ≥ 1
	// NonMigratable is how many of them, the last ones, carry
	// NonMigratableLabel=true (on the template, hence on the VMI).
	NonMigratable int
	// Labels and Annotations go on the template, hence on every VMI (e.g.
	// FailMigrationsAnnotation).
	Labels, Annotations map[string]string
	// Nodes, when set, places VM i on Nodes[i mod len(Nodes)] (NodeAnnotation on
	// its template): an even spread, as kube-scheduler would make.
	Nodes   []string
	Workers int // concurrent creates; default DefaultWorkers
}

// NewClient is a controller-runtime client for the simulator's types (core, apps,
// policy and kubevirt.io/v1) with rate limits high enough for creating or watching
// a thousand VMs; the sandbox's RESTConfig keeps client-go's 5 QPS.
func NewClient(cfg *rest.Config) (client.Client, error) {
	scheme, err := newScheme()
	if err != nil {
		return nil, err
	}
	return client.New(fastConfig(cfg, "virt-operator-sandbox-vms"), client.Options{Scheme: scheme})
}

func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return scheme, nil
}

// fastConfig is cfg with high rate limits and a user agent of its own.
func fastConfig(cfg *rest.Config, userAgent string) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 500, 1000
	cfg.UserAgent = userAgent
	return cfg
}

// VMNames are the names CreateVMs gives o.Count VMs.
func VMNames(o CreateOptions) []string {
	o = o.withDefaults()
	width := max(4, len(strconv.Itoa(o.Count-1)))
	names := make([]string, o.Count)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%0*d", o.NamePrefix, width, i)
	}
	return names
}

func (o CreateOptions) withDefaults() CreateOptions {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.NamePrefix == "" {
		o.NamePrefix = DefaultNamePrefix
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	return o
}

// Validate reports bad options, naming the field.
func (o CreateOptions) Validate() error {
	switch {
	case o.Count < 1:
		return fmt.Errorf("count must be at least 1, got %d", o.Count)
	case o.NonMigratable < 0:
		return fmt.Errorf("non-migratable must not be negative, got %d", o.NonMigratable)
	case o.NonMigratable > o.Count:
		return fmt.Errorf("non-migratable (%d) must not exceed count (%d)", o.NonMigratable, o.Count)
	}
	return nil
}

// CreateVMs creates o.Count VMs (runStrategy Always, a small template) and their
// VMIs (named like the VM, controlled by it, with the template's labels), so the
// VMs need not wait for the simulator to start them; it returns the names, in
// order. Creates run o.Workers at a time: give c high rate limits (NewClient).
// The simulator then gives each VMI a launcher pod and makes it Running; see
// WaitRunning.
func CreateVMs(ctx context.Context, c client.Client, o CreateOptions) ([]string, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	names := VMNames(o)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan int)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for range min(o.Workers, o.Count) {
		wg.Go(func() {
			for i := range work {
				if err := createVM(ctx, c, o, i, names[i]); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
						cancel()
					}
					mu.Unlock()
				}
			}
		})
	}
feed:
	for i := range names {
		select {
		case work <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return names, nil
}

// createVM creates one VM, then its VMI.
func createVM(ctx context.Context, c client.Client, o CreateOptions, i int, name string) error {
	vm, err := newVM(o, i, name)
	if err != nil {
		return err
	}
	if err := c.Create(ctx, vm); err != nil {
		return fmt.Errorf("creating VM %s/%s: %w", o.Namespace, name, err)
	}
	vmi, err := vmiFromTemplate(vm)
	if err != nil {
		return err
	}
	err = c.Create(ctx, vmi)
	if apierrors.IsAlreadyExists(err) {
		// The simulator's VM controller may have been first: fine if it is this VM's.
		existing := &v1.VirtualMachineInstance{}
		if gerr := c.Get(ctx, client.ObjectKeyFromObject(vmi), existing); gerr == nil && metav1.IsControlledBy(existing, vm) {
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("creating VMI %s/%s: %w", o.Namespace, name, err)
	}
	return nil
}

// newVM is VM i, with a small template: one CPU, 64Mi, a container disk.
func newVM(o CreateOptions, i int, name string) (*v1.VirtualMachine, error) {
	labels := maps.Clone(o.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[VMNameLabel] = name
	if i >= o.Count-o.NonMigratable {
		labels[NonMigratableLabel] = "true"
	}
	annotations := o.Annotations
	if len(o.Nodes) > 0 {
		annotations = maps.Clone(o.Annotations)
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[NodeAnnotation] = o.Nodes[i%len(o.Nodes)]
	}
	template := map[string]any{
		"metadata": map[string]any{"labels": labels, "annotations": annotations},
		"spec": map[string]any{
			"domain": map[string]any{
				"cpu":     map[string]any{"cores": 1},
				"memory":  map[string]any{"guest": "64Mi"},
				"devices": map[string]any{"disks": []any{map[string]any{"name": "containerdisk", "disk": map[string]any{"bus": "virtio"}}}},
			},
			"volumes": []any{map[string]any{"name": "containerdisk", "containerDisk": map[string]any{"image": "quay.io/kubevirt/cirros-container-disk-demo"}}},
		},
	}
	raw, err := json.Marshal(template)
	if err != nil {
		return nil, err
	}
	return &v1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: o.Namespace},
		Spec: v1.VirtualMachineSpec{
			RunStrategy: ptr.To(v1.RunStrategyAlways),
			Template:    &runtime.RawExtension{Raw: raw},
		},
	}, nil
}

// WaitRunning polls (every 250ms) until every named VMI of namespace is Running
// with a launcher image (with image, when image is not ""); when ctx ends first it
// fails saying how many were.
func WaitRunning(ctx context.Context, c client.Client, namespace string, names []string, image string) error {
	for {
		var list v1.VirtualMachineInstanceList
		err := c.List(ctx, &list, client.InNamespace(namespace))
		running := RunningOn(list.Items, names, image)
		if err == nil && running == len(names) {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("%d of %d VMIs Running in %s", running, len(names), namespace), ctx.Err(), err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// RunningOn counts the named VMIs of vmis that are Running with a launcher
// image (image, when image is not "").
func RunningOn(vmis []v1.VirtualMachineInstance, names []string, image string) int {
	want := make(map[string]bool, len(names))
	for _, name := range names {
		want[name] = true
	}
	n := 0
	for i := range vmis {
		vmi := &vmis[i]
		if want[vmi.Name] && vmi.Status.Phase == v1.VMIRunning && vmi.Status.LauncherContainerImageVersion != "" &&
			(image == "" || vmi.Status.LauncherContainerImageVersion == image) {
			n++
		}
	}
	return n
}
