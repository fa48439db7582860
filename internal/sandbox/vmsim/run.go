package vmsim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// Options configure Run.
type Options struct {
	// MigrationDuration is how long a migration runs, from when it appears to when
	// it finishes. Default DefaultMigrationDuration.
	MigrationDuration time.Duration
	// LauncherImage is the launcher image while no virt-controller Deployment names
	// one. Default DefaultLauncherImage.
	LauncherImage string
	// SkipTransitionalPhases writes no Starting or Stopping VM status, for
	// clusters where the API server is the bottleneck (the scale benchmark; a
	// podless VMI and its migrations have no transitional phases either). The
	// operator never reads a VM's status.
	SkipTransitionalPhases bool
	// Podless runs VMIs without launcher pods (see podless.go): for thousands of
	// VMs, whose pods would be most of the sandbox's work. No evictions then.
	Podless bool
	// UpdaterWindow gathers the events of virt-controller's workload updater
	// into one plan per window (0: a plan per event, back to back): each plan
	// lists every VMI and migration, and at thousands of them the simulator
	// would spend a core on plans whose outdated count changed by one.
	UpdaterWindow time.Duration
	// Workers is each controller's MaxConcurrentReconciles. Default DefaultReconcilers.
	Workers int
	// Log receives the simulator's messages; nil discards them.
	Log *slog.Logger
	// Ready, if set, is called once the simulator's caches are synced.
	Ready func()
}

// simulatedPods selects the pods the simulator caches: launcher pods and virt-handler's.
func simulatedPods() (labels.Selector, error) {
	r, err := labels.NewRequirement(AppLabel, selection.In, []string{LauncherApp, HandlerApp})
	if err != nil {
		return nil, fmt.Errorf("vmsim: the pod selector: %w", err)
	}
	return labels.NewSelector().Add(*r), nil
}

// DefaultReconcilers is each controller's default number of concurrent reconciles.
const DefaultReconcilers = 16

// userAgent tells the simulator's requests apart in the apiserver's audit log.
const userAgent = "virt-operator-sandbox-vmsim"

// Kinds the simulator needs served before it can start (the sandbox installs
// their CRDs concurrently with starting it).
var neededResources = []string{"virtualmachineinstances", "virtualmachineinstancemigrations", "virtualmachines"}

func (o Options) withDefaults() Options {
	if o.MigrationDuration <= 0 {
		o.MigrationDuration = DefaultMigrationDuration
	}
	if o.LauncherImage == "" {
		o.LauncherImage = DefaultLauncherImage
	}
	if o.Workers <= 0 {
		o.Workers = DefaultReconcilers
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return o
}

// Run simulates virt-controller and virt-handler against cfg's cluster until ctx
// ends: launcher pods for VMIs, VMI status, migrations, evictions and VM restarts
// (see the package comment). It waits for the kubevirt.io/v1 CRDs to be served.
func Run(ctx context.Context, cfg *rest.Config, o Options) error {
	o = o.withDefaults()
	cfg = fastConfig(cfg, userAgent)
	if err := waitForCRDs(ctx, cfg, o.Log); err != nil {
		return err
	}
	scheme, err := newScheme()
	if err != nil {
		return err
	}
	log := logr.FromSlogHandler(o.Log.Handler())
	pods, err := simulatedPods()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Logger:                 log,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			// Launcher pods, and virt-handler's: its image says whether a node refuses migrations (NoMigrateSuffix).
			&corev1.Pod{}:        {Label: pods},
			&appsv1.Deployment{}: {Label: labels.SelectorFromSet(labels.Set{AppLabel: ControllerApp})},
		}},
		// VMs are read unstructured (spec.running is not in the API type); cache them too.
		Client:     client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		Controller: config.Controller{SkipNameValidation: ptr.To(true), MaxConcurrentReconciles: o.Workers},
	})
	if err != nil {
		return fmt.Errorf("vmsim: creating manager: %w", err)
	}
	if err := setupIndexes(ctx, mgr); err != nil {
		return err
	}
	sim := &simulator{client: mgr.GetClient(), opts: o, log: o.Log}
	if err := sim.setup(mgr); err != nil {
		return err
	}
	// Start every informer before the manager does, so "synced" covers them all.
	watched := []client.Object{&corev1.Pod{}, &appsv1.Deployment{}, &v1.VirtualMachineInstance{}, &v1.VirtualMachineInstanceMigration{}, newUnstructuredVM()}
	if o.Podless { // podless VMIs are placed on nodes by name
		nodes := &metav1.PartialObjectMetadata{}
		nodes.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
		watched = append(watched, nodes)
	}
	for _, obj := range watched {
		if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
			return fmt.Errorf("vmsim: watching %T: %w", obj, err)
		}
	}
	go startUpstreamUpdater(ctx, cfg, mgr, sim)
	if o.Ready != nil {
		go func() {
			if mgr.GetCache().WaitForCacheSync(ctx) {
				o.Log.Info("caches synced", "migrationDuration", o.MigrationDuration, "fallbackLauncherImage", o.LauncherImage)
				o.Ready()
			}
		}()
	}
	return mgr.Start(ctx)
}

// waitForCRDs polls discovery until kubevirt.io/v1 serves every needed resource.
func waitForCRDs(ctx context.Context, cfg *rest.Config, log *slog.Logger) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	logged := false
	for {
		list, err := dc.ServerResourcesForGroupVersion(v1.GroupVersion.String())
		if err == nil && servesAll(list.APIResources) {
			return nil
		}
		if !logged {
			log.Info("waiting for the kubevirt.io/v1 CRDs", "resources", neededResources)
			logged = true
		}
		select {
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("vmsim: kubevirt.io/v1 CRDs not served (%v)", neededResources), err, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func servesAll(resources []metav1.APIResource) bool {
	for _, want := range neededResources {
		if !slices.ContainsFunc(resources, func(r metav1.APIResource) bool { return r.Name == want }) {
			return false
		}
	}
	return true
}

// vmGVK is the VirtualMachine kind, read unstructured.
var vmGVK = schema.GroupVersionKind{Group: v1.GroupVersion.Group, Version: v1.GroupVersion.Version, Kind: "VirtualMachine"}

func newUnstructuredVM() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(vmGVK)
	return u
}
