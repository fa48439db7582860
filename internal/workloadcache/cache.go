// Package workloadcache keeps the cluster's VMIs and migrations in memory in
// their compact forms (internal/workloadupdate.VMI and .Migration): what the
// workload updater and the virt-handler rollout read of them, about 300 bytes
// a VMI where a decoded object costs 2 to 3 KB. It is the operator's only
// copy of these kinds: the manager's cache does not hold them (package
// operator turns them off there, so no read can fill it by accident).
//
// Each kind has an informer of its own, listing and watching through the API
// server, that converts every object as it arrives (the watch's initial list
// too: a relist never holds the decoded objects at once). The informers
// start once their CRDs are served (the operator installs them), and index
// the migrations by the VMI they move and by whether they finished, so a
// plan reads the unfinished ones and a VMI's finished ones without a copy.
//
// Readers get the shared compact values: read-only.
package workloadcache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	core "github.com/virt-operator/virt-operator/internal/workloadupdate"
)

// servedPoll is how often a kind's informer looks for its CRD until it is
// served.
const servedPoll = 5 * time.Second

// Index names.
const (
	byVMI      = "vmi"        // a migration's namespace/spec.vmiName
	unfinished = "unfinished" // "true" for a migration not Succeeded or Failed
)

// Cache holds the VMIs and the migrations. Its zero value is not usable: New
// makes one, Start runs it (it is a manager.Runnable, on every replica, as
// the manager's cache).
type Cache struct {
	vmis, migrations *kind
}

// New returns a Cache reading through cfg; mapper says when a kind is served.
func New(cfg *rest.Config, scheme *runtime.Scheme, mapper meta.RESTMapper, log logr.Logger) (*Cache, error) {
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme, Mapper: mapper})
	if err != nil {
		return nil, fmt.Errorf("creating the workload cache's client: %w", err)
	}
	return newCache(c, mapper, log, servedPoll), nil
}

func newCache(c client.WithWatch, mapper meta.RESTMapper, log logr.Logger, poll time.Duration) *Cache {
	return &Cache{
		vmis: newKind(c, mapper, log, poll, &v1.VirtualMachineInstance{}, &v1.VirtualMachineInstanceList{},
			func(obj any) (any, error) { return compactVMI(obj) }, nil),
		migrations: newKind(c, mapper, log, poll, &v1.VirtualMachineInstanceMigration{}, &v1.VirtualMachineInstanceMigrationList{},
			func(obj any) (any, error) { return compactMigration(obj) }, toolscache.Indexers{byVMI: vmiIndex, unfinished: unfinishedIndex}),
	}
}

// Start runs both informers until ctx ends.
func (c *Cache) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, k := range []*kind{c.vmis, c.migrations} {
		wg.Go(func() { k.run(ctx) })
	}
	wg.Wait()
	return nil
}

// NeedLeaderElection: every replica keeps it, as the manager's cache (the
// canary's checks and the updater read it once leading).
func (c *Cache) NeedLeaderElection() bool { return false }

// Synced reports whether both kinds are served and listed: until then a
// reader must not conclude anything from what it reads.
func (c *Cache) Synced() bool { return c.vmis.synced() && c.migrations.synced() }

// VMIs are every VMI (each key once).
func (c *Cache) VMIs() []*core.VMI {
	items := c.vmis.items()
	out := make([]*core.VMI, 0, len(items))
	for _, it := range items {
		out = append(out, &it.(*vmiRecord).VMI)
	}
	return out
}

// VMI is one VMI; nil when the cache does not hold it.
func (c *Cache) VMI(k core.Key) *core.VMI {
	it := c.vmis.get(k.Namespace + "/" + k.Name)
	if it == nil {
		return nil
	}
	return &it.(*vmiRecord).VMI
}

// Migration is one migration by namespace and name; nil when the cache does
// not hold it.
func (c *Cache) Migration(namespace, name string) *core.Migration {
	it := c.migrations.get(namespace + "/" + name)
	if it == nil {
		return nil
	}
	return &it.(*migrationRecord).Migration
}

// Migrations are the migrations as a plan reads them: the unfinished ones,
// and a VMI's finished ones on request, from the indexes.
func (c *Cache) Migrations() core.Migrations {
	var out core.Migrations
	for _, it := range c.migrations.byIndex(unfinished, "true") {
		out.Unfinished = append(out.Unfinished, &it.(*migrationRecord).Migration)
	}
	out.Finished = func(k core.Key) []*core.Migration {
		var finished []*core.Migration
		for _, it := range c.migrations.byIndex(byVMI, k.String()) {
			if m := &it.(*migrationRecord).Migration; m.Finished() {
				finished = append(finished, m)
			}
		}
		return finished
	}
	return out
}

// AllMigrations are every migration (the canary's data-plane checks read
// them all).
func (c *Cache) AllMigrations() []*core.Migration {
	items := c.migrations.items()
	out := make([]*core.Migration, 0, len(items))
	for _, it := range items {
		out = append(out, &it.(*migrationRecord).Migration)
	}
	return out
}

// Handler receives a kind's changes: old is nil for an object added, new
// for one deleted. Every call comes from the informer's one goroutine.
type Handler[T any] func(old, new *T)

// OnVMI calls h for every VMI change from now on (every VMI held is first
// announced as added).
func (c *Cache) OnVMI(h Handler[core.VMI]) {
	c.vmis.handle(func(old, new any) { h(asVMI(old), asVMI(new)) })
}

// OnMigration calls h for every migration change from now on.
func (c *Cache) OnMigration(h Handler[core.Migration]) {
	c.migrations.handle(func(old, new any) { h(asMigration(old), asMigration(new)) })
}

func asVMI(obj any) *core.VMI {
	if r, ok := obj.(*vmiRecord); ok {
		return &r.VMI
	}
	return nil
}

func asMigration(obj any) *core.Migration {
	if r, ok := obj.(*migrationRecord); ok {
		return &r.Migration
	}
	return nil
}

// The records the informers store: the compact forms, with the object key
// the informer's store asks every object for (GetObjectMeta: namespace and
// name, made on demand, not kept).
type vmiRecord struct{ core.VMI }

func (r *vmiRecord) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: r.Namespace, Name: r.Name}
}

type migrationRecord struct{ core.Migration }

func (r *migrationRecord) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: r.Namespace, Name: r.Name}
}

var errNotAnObject = errors.New("not an object of the kind")

// compactVMI is the VMI informer's transform; an object already compact (the
// informer transforms an object once, but a relist hands its store's own
// back) passes.
func compactVMI(obj any) (any, error) {
	switch o := obj.(type) {
	case *v1.VirtualMachineInstance:
		return &vmiRecord{*core.CompactVMI(o)}, nil
	case *vmiRecord:
		return o, nil
	case toolscache.DeletedFinalStateUnknown:
		return o, nil
	}
	return nil, fmt.Errorf("the VMI informer got %T: %w", obj, errNotAnObject)
}

func compactMigration(obj any) (any, error) {
	switch o := obj.(type) {
	case *v1.VirtualMachineInstanceMigration:
		return &migrationRecord{*core.CompactMigration(o)}, nil
	case *migrationRecord:
		return o, nil
	case toolscache.DeletedFinalStateUnknown:
		return o, nil
	}
	return nil, fmt.Errorf("the migration informer got %T: %w", obj, errNotAnObject)
}

func vmiIndex(obj any) ([]string, error) {
	if r, ok := obj.(*migrationRecord); ok {
		return []string{r.Key().String()}, nil
	}
	return nil, nil
}

func unfinishedIndex(obj any) ([]string, error) {
	if r, ok := obj.(*migrationRecord); ok && !r.Finished() {
		return []string{"true"}, nil
	}
	return nil, nil
}

// kind is one kind's informer, made once its CRD is served.
type kind struct {
	client    client.WithWatch
	mapper    meta.RESTMapper
	log       logr.Logger
	poll      time.Duration // how often run looks for the kind until it is served
	object    client.Object
	newList   func() client.ObjectList
	transform toolscache.TransformFunc
	indexers  toolscache.Indexers

	mu       sync.Mutex
	informer toolscache.SharedIndexInformer // nil until the kind is served
	handlers []func(old, new any)           // registered before the informer existed
}

func newKind(c client.WithWatch, mapper meta.RESTMapper, log logr.Logger, poll time.Duration, obj client.Object, list client.ObjectList,
	transform toolscache.TransformFunc, indexers toolscache.Indexers) *kind {
	return &kind{client: c, mapper: mapper, log: log, poll: poll, object: obj, transform: transform, indexers: indexers,
		newList: func() client.ObjectList { return list.DeepCopyObject().(client.ObjectList) }}
}

// run waits until the kind is served, then runs its informer until ctx ends.
func (k *kind) run(ctx context.Context) {
	gvk := v1.GroupVersion.WithKind(kindName(k.object))
	for !k.served(gvk) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(k.poll):
		}
	}
	informer := toolscache.NewSharedIndexInformerWithOptions(k.listWatch(), k.object.DeepCopyObject(),
		toolscache.SharedIndexInformerOptions{Indexers: k.indexers, ObjectDescription: gvk.Kind + " (compact)"})
	if err := informer.SetTransform(k.transform); err != nil {
		k.log.Error(err, "the workload cache cannot convert", "kind", gvk.Kind)
		return
	}
	k.mu.Lock()
	k.informer = informer
	for _, h := range k.handlers {
		k.register(h)
	}
	k.handlers = nil
	k.mu.Unlock()
	informer.RunWithContext(ctx)
}

func kindName(obj client.Object) string {
	switch obj.(type) {
	case *v1.VirtualMachineInstance:
		return "VirtualMachineInstance"
	case *v1.VirtualMachineInstanceMigration:
		return "VirtualMachineInstanceMigration"
	}
	return fmt.Sprintf("%T", obj)
}

// served: the API server serves the kind (its CRD is established). The
// mapper rereads discovery on a miss.
func (k *kind) served(gvk schema.GroupVersionKind) bool {
	_, err := k.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	return err == nil
}

// listWatch lists and watches through the client (streaming the initial list
// as a watch where the client can: the reflector's watch-list).
func (k *kind) listWatch() toolscache.ListerWatcher {
	return toolscache.ToListWatcherWithWatchListSemantics(&toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list := k.newList()
			return list, k.client.List(ctx, list, &client.ListOptions{Raw: &opts})
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return k.client.Watch(ctx, k.newList(), &client.ListOptions{Raw: &opts})
		},
	}, k.client)
}

func (k *kind) current() toolscache.SharedIndexInformer {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.informer
}

func (k *kind) synced() bool {
	i := k.current()
	return i != nil && i.HasSynced()
}

func (k *kind) items() []any {
	i := k.current()
	if i == nil {
		return nil
	}
	return i.GetIndexer().List()
}

func (k *kind) get(key string) any {
	i := k.current()
	if i == nil {
		return nil
	}
	it, ok, err := i.GetIndexer().GetByKey(key)
	if err != nil || !ok {
		return nil
	}
	return it
}

func (k *kind) byIndex(name, value string) []any {
	i := k.current()
	if i == nil {
		return nil
	}
	items, err := i.GetIndexer().ByIndex(name, value)
	if err != nil {
		return nil
	}
	return items
}

// handle registers h now, or once the informer exists.
func (k *kind) handle(h func(old, new any)) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.informer == nil {
		k.handlers = append(k.handlers, h)
		return
	}
	k.register(h)
}

func (k *kind) register(h func(old, new any)) {
	_, err := k.informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { h(nil, obj) },
		UpdateFunc: func(old, new any) { h(old, new) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			h(obj, nil)
		},
	})
	if err != nil {
		k.log.Error(err, "the workload cache cannot announce changes")
	}
}
