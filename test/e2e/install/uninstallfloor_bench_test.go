package install_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/metadata"
)

// The uninstall's floor deletes copies of KubeVirt's CRDs in this group,
// labelled so that they are found again.
const (
	uninstallFloorGroup = "floor.bench.virt-operator.io"
	uninstallFloorLabel = "bench.virt-operator.io/uninstall-floor"
)

// uninstallSnapshot is what the uninstall's floor copies, taken before the
// uninstall: every CRD the operator manages, and per CRD how many objects it
// holds and one of them.
type uninstallSnapshot struct {
	crds   []apiextensionsv1.CustomResourceDefinition
	count  map[string]int                        // by CRD name
	sample map[string]*unstructured.Unstructured // by CRD name, where count > 0
}

func (s uninstallSnapshot) String() string {
	var parts []string
	for _, crd := range s.crds {
		if n := s.count[crd.Name]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, crd.Spec.Names.Plural))
		}
	}
	return fmt.Sprintf("%d CRDs holding %s", len(s.crds), strings.Join(parts, ", "))
}

// snapshotForUninstall reads the managed CRDs and counts their objects.
func (e *env) snapshotForUninstall(b testing.TB) uninstallSnapshot {
	b.Helper()
	ctx := context.Background()
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := e.c.List(ctx, &crds, client.MatchingLabels{metadata.ManagedByLabel: metadata.ManagedByValue}); err != nil {
		b.Fatal(err)
	}
	s := uninstallSnapshot{crds: crds.Items, count: map[string]int{}, sample: map[string]*unstructured.Unstructured{}}
	for _, crd := range crds.Items {
		gv := schema.GroupVersion{Group: crd.Spec.Group, Version: storageVersion(&crd)}
		var all metav1.PartialObjectMetadataList // counted without decoding 10,000 VMIs
		all.SetGroupVersionKind(gv.WithKind(crd.Spec.Names.ListKind))
		if err := e.c.List(ctx, &all); err != nil {
			b.Fatalf("listing %s: %v", crd.Name, err)
		}
		s.count[crd.Name] = len(all.Items)
		if len(all.Items) == 0 {
			continue
		}
		first := &unstructured.Unstructured{}
		first.SetGroupVersionKind(gv.WithKind(crd.Spec.Names.Kind))
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(&all.Items[0]), first); err != nil {
			b.Fatalf("reading %s %s: %v", crd.Name, all.Items[0].Name, err)
		}
		s.sample[crd.Name] = first
	}
	return s
}

// managedCRDs names the CRDs the operator manages that are still there
// (terminating ones too).
func (e *env) managedCRDs(b testing.TB) []string {
	b.Helper()
	var crds metav1.PartialObjectMetadataList
	crds.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinitionList"))
	if err := e.c.List(context.Background(), &crds, client.MatchingLabels{metadata.ManagedByLabel: metadata.ManagedByValue}); err != nil {
		b.Fatal(err)
	}
	return crdNames(crds.Items)
}

func crdNames(items []metav1.PartialObjectMetadata) []string {
	names := make([]string, len(items))
	for i, o := range items {
		names[i] = o.Name
	}
	return names
}

// crdDeletions times each CRD of a deletion from start to the first look
// that no longer finds it.
type crdDeletions struct {
	start time.Time
	gone  map[string]time.Duration // by name; -1 while still there
}

func newCRDDeletions(start time.Time) *crdDeletions {
	return &crdDeletions{start: start, gone: map[string]time.Duration{}}
}

// observe records the CRDs still there at at; it reports whether none is.
func (d *crdDeletions) observe(there []string, at time.Time) bool {
	still := map[string]bool{}
	for _, name := range there {
		still[name] = true
		if _, known := d.gone[name]; !known {
			d.gone[name] = -1
		}
	}
	for name, took := range d.gone {
		if took < 0 && !still[name] {
			d.gone[name] = at.Sub(d.start)
		}
	}
	return len(there) == 0
}

// took is how long the last CRD took.
func (d *crdDeletions) took() time.Duration {
	var last time.Duration
	for _, took := range d.gone {
		last = max(last, took)
	}
	return last
}

// slowest names the n CRDs that took longest, with their times, by plural
// (the group differs between the uninstall and its floor).
func (d *crdDeletions) slowest(n int) string {
	names := slices.Collect(maps.Keys(d.gone))
	sort.Slice(names, func(i, j int) bool {
		if d.gone[names[i]] != d.gone[names[j]] {
			return d.gone[names[i]] > d.gone[names[j]]
		}
		return names[i] < names[j]
	})
	var parts []string
	for _, name := range names[:min(n, len(names))] {
		plural, _, _ := strings.Cut(name, ".")
		parts = append(parts, fmt.Sprintf("%s %s", plural, d.gone[name].Round(100*time.Millisecond)))
	}
	return strings.Join(parts, ", ")
}

// uninstallFloor is the uninstall's floor: the API server alone deleting
// what the uninstall has it delete, in the same cluster once the operator's
// uninstall is done. It creates a copy of every CRD of the snapshot in
// uninstallFloorGroup (same schemas, no status subresource, so an object is
// one create) holding as many objects as the original held, each a copy of
// its sample (named floor-<i>; an object the sample's kind is controlled by
// owns the copy of the same index, as a VM owns its VMI), then deletes every
// CRD at once, as the uninstall does, and times it until the last is gone.
// The copies carry no finalizers: no controller runs for them.
func (e *env) uninstallFloor(b testing.TB, s uninstallSnapshot) (deletions *crdDeletions, nudges int) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cfg := e.sb.RESTConfig()
	cfg.QPS, cfg.Burst = 1000, 1000 // the copies are created as fast as the API server takes them
	c, err := client.New(cfg, client.Options{Scheme: e.c.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	byKind := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for i := range s.crds {
		copied := floorCRD(&s.crds[i])
		if err := c.Create(ctx, copied); err != nil {
			b.Fatalf("the uninstall floor: %v", err)
		}
		byKind[copied.Spec.Names.Kind] = copied
	}
	e.eventually("the uninstall floor's CRDs established", 5*time.Minute, func() (bool, error) {
		for _, crd := range byKind {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(crd), got); err != nil {
				return false, err
			}
			if !established(got) {
				return false, nil
			}
		}
		return true, nil
	})
	// Owners first, so that their copies' UIDs are known to what they own.
	uids := map[string][]types.UID{} // by kind, by index
	for _, crd := range ownersFirst(s) {
		sample := s.sample[crd.Name]
		copied := byKind[crd.Spec.Names.Kind]
		created, err := createCopies(ctx, c, sample, copied, s.count[crd.Name], uids)
		if err != nil {
			b.Fatalf("the uninstall floor: %v", err)
		}
		uids[crd.Spec.Names.Kind] = created
	}

	start := time.Now()
	for _, crd := range byKind {
		if err := c.Delete(ctx, crd); err != nil {
			b.Fatalf("the uninstall floor: %v", err)
		}
	}
	nudged := nudgeWhileDeleting(ctx, b, c)
	deletions = newCRDDeletions(start)
	e.eventually("the uninstall floor's CRDs gone", 30*time.Minute, func() (bool, error) {
		var left metav1.PartialObjectMetadataList
		left.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinitionList"))
		if err := c.List(ctx, &left, client.HasLabels{uninstallFloorLabel}); err != nil {
			return false, err
		}
		return deletions.observe(crdNames(left.Items), time.Now()), nil
	})
	nudges = nudged()
	return deletions, nudges
}

// floorNudgeInterval is how often the floor looks for a CRD whose instance
// clean-up failed, as the operator's uninstall does (its crdNudgeInterval).
const floorNudgeInterval = 5 * time.Second

// nudgeWhileDeleting restarts the floor's failed CRD clean-ups every
// floorNudgeInterval until the returned function is called, which returns how
// many it restarted.
func nudgeWhileDeleting(ctx context.Context, b testing.TB, c client.Client) (stop func() int) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan int)
	go func() {
		total := 0
		defer func() { done <- total }()
		tick := time.NewTicker(floorNudgeInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				n, err := nudgeFailedCleanups(ctx, c)
				total += n
				if err != nil && ctx.Err() == nil {
					b.Errorf("the uninstall floor: %v", err)
					return
				}
			}
		}
	}()
	return func() int {
		cancel()
		return <-done
	}
}

// nudgeFailedCleanups writes an annotation on each of the floor's CRDs whose
// instance clean-up failed: the API server's CRD finalizer can give up on a
// CRD deleted soon after it was created ("storage is (re)initializing") and
// retries only on a change. The operator's uninstall does the same
// (kubevirt.nudgeStuckCRDs). Before the floor did, one trial's floor took
// 110 s and the next 8 s for the same objects (the cause not confirmed): the
// bench reports how many nudges were needed.
func nudgeFailedCleanups(ctx context.Context, c client.Client) (nudged int, err error) {
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := c.List(ctx, &crds, client.HasLabels{uninstallFloorLabel}); err != nil {
		return 0, err
	}
	for i := range crds.Items {
		crd := &crds.Items[i]
		if !cleanupFailed(crd) {
			continue
		}
		patch := client.MergeFrom(crd.DeepCopy())
		metav1.SetMetaDataAnnotation(&crd.ObjectMeta, uninstallFloorLabel+"-retry", time.Now().UTC().Format(time.RFC3339Nano))
		if err := c.Patch(ctx, crd, patch); client.IgnoreNotFound(err) != nil {
			return nudged, err
		}
		nudged++
	}
	return nudged, nil
}

// vmiCreations counts the VMIs created from now until the returned function
// is called: during an uninstall, those a VM controller (the simulator playing
// virt-controller) starts again for VMs the API server has not deleted yet,
// which the CRD's clean-up then waits for.
func (e *env) vmiCreations(b testing.TB) (stop func() int) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	wc, err := client.NewWithWatch(e.sb.RESTConfig(), client.Options{Scheme: e.c.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	var now metav1.PartialObjectMetadataList // its resourceVersion: where the watch starts
	now.SetGroupVersionKind(v1.GroupVersion.WithKind("VirtualMachineInstanceList"))
	if err := e.c.List(ctx, &now, client.Limit(1)); err != nil {
		b.Fatal(err)
	}
	w, err := wc.Watch(ctx, &v1.VirtualMachineInstanceList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: now.ResourceVersion}})
	if err != nil {
		b.Fatal(err)
	}
	var created atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if ev.Type == watch.Added {
				created.Add(1)
			}
		}
	}()
	return func() int {
		cancel()
		w.Stop()
		<-done
		return int(created.Load())
	}
}

// cleanupFailed: the CRD's Terminating condition says its instances could
// not all be deleted.
func cleanupFailed(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Terminating && c.Status == apiextensionsv1.ConditionTrue && c.Reason == "InstanceDeletionFailed" {
			return true
		}
	}
	return false
}

// floorCRD is crd moved to uninstallFloorGroup: its versions and schemas, no
// subresources, short names or categories (nothing serves them twice).
func floorCRD(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	spec := *crd.Spec.DeepCopy()
	spec.Group = uninstallFloorGroup
	spec.Names.ShortNames, spec.Names.Categories = nil, nil
	spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	for i := range spec.Versions {
		spec.Versions[i].Subresources = nil
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: spec.Names.Plural + "." + uninstallFloorGroup, Labels: map[string]string{uninstallFloorLabel: "true"}},
		Spec:       spec,
	}
}

// ownersFirst are the snapshot's CRDs with objects, those whose sample is
// controlled by another kind after the rest.
func ownersFirst(s uninstallSnapshot) []*apiextensionsv1.CustomResourceDefinition {
	var out []*apiextensionsv1.CustomResourceDefinition
	for i := range s.crds {
		if s.count[s.crds[i].Name] > 0 {
			out = append(out, &s.crds[i])
		}
	}
	owned := func(crd *apiextensionsv1.CustomResourceDefinition) bool {
		return metav1.GetControllerOf(s.sample[crd.Name]) != nil
	}
	sort.SliceStable(out, func(i, j int) bool { return !owned(out[i]) && owned(out[j]) })
	return out
}

// createCopies creates n copies of sample as objects of crd, 32 at a time, and
// returns their UIDs by index. A copy keeps the sample's labels, annotations,
// spec and status; its controller, if the sample has one of a kind already
// copied, is that kind's copy of the same index.
func createCopies(ctx context.Context, c client.Client, sample *unstructured.Unstructured, crd *apiextensionsv1.CustomResourceDefinition, n int, uids map[string][]types.UID) ([]types.UID, error) {
	owner := metav1.GetControllerOf(sample)
	created := make([]types.UID, n)
	work := make(chan int)
	errs := make(chan error, 32)
	var wg sync.WaitGroup
	for range min(32, n) {
		wg.Go(func() {
			for i := range work {
				obj := floorObject(sample, crd, i)
				if owner != nil && i < len(uids[owner.Kind]) {
					ref := *owner
					_, version, _ := strings.Cut(owner.APIVersion, "/")
					ref.APIVersion = uninstallFloorGroup + "/" + version
					ref.Name, ref.UID = obj.GetName(), uids[owner.Kind][i]
					obj.SetOwnerReferences([]metav1.OwnerReference{ref})
				}
				if err := c.Create(ctx, obj); err != nil {
					errs <- fmt.Errorf("creating %s %s: %w", crd.Name, obj.GetName(), err)
					return
				}
				created[i] = obj.GetUID()
			}
		})
	}
feed:
	for i := range n {
		select {
		case work <- i:
		case err := <-errs:
			close(work)
			wg.Wait()
			return nil, err
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return nil, err
	default:
	}
	return created, ctx.Err()
}

// floorObject is copy i of sample in crd's group: the same namespace, labels,
// annotations and content, none of the sample's server-set metadata.
func floorObject(sample *unstructured.Unstructured, crd *apiextensionsv1.CustomResourceDefinition, i int) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{}}
	for k, v := range sample.Object {
		if k != "metadata" {
			obj.Object[k] = v // shared, read only: the create encodes it
		}
	}
	obj.SetAPIVersion(uninstallFloorGroup + "/" + storageVersion(crd))
	obj.SetKind(crd.Spec.Names.Kind)
	obj.SetNamespace(sample.GetNamespace())
	obj.SetName(fmt.Sprintf("floor-%05d", i))
	obj.SetLabels(sample.GetLabels())
	obj.SetAnnotations(sample.GetAnnotations())
	return obj
}

func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return crd.Spec.Versions[0].Name
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}
