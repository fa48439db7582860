package kubevirt

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/managedfields"
	clientgoapply "k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// buildFastReads builds b with reads served from its tracker by a typed copy
// (metadata reads by a copy of the metadata). The fake client otherwise
// marshals every object it returns to JSON and back, whole CRDs even for a
// metadata read: with CRDs and strategy ConfigMaps read on every pass, that
// round trip was most of this package's test time. Writes, watches and reads
// the copy cannot serve (unstructured, field selectors) go to the fake, and
// funcs, if any, see every call as they would on the fake.
// TestFastReadsReadWhatTheFakeReads holds it to the fake's answers.
func buildFastReads(b *fake.ClientBuilder, scheme *runtime.Scheme, funcs *interceptor.Funcs) client.WithWatch {
	tracker := clienttesting.NewFieldManagedObjectTracker(scheme, serializer.NewCodecFactory(scheme).UniversalDecoder(),
		firstTypeConverter{clientgoapply.NewTypeConverter(clientgoscheme.Scheme), managedfields.NewDeducedTypeConverter()})
	mirror := &metaMirror{ObjectTracker: tracker, byResource: map[schema.GroupVersionResource]*mirrored{}}
	var c client.WithWatch = &fastReads{WithWatch: b.WithObjectTracker(mirror).Build(), tracker: tracker, mirror: mirror, scheme: scheme}
	if funcs != nil {
		c = interceptor.NewClient(c, *funcs)
	}
	return c
}

type fastReads struct {
	client.WithWatch
	tracker clienttesting.ObjectTracker
	mirror  *metaMirror
	scheme  *runtime.Scheme
}

func (c *fastReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if _, unstructured := obj.(runtime.Unstructured); err != nil || unstructured {
		return c.WithWatch.Get(ctx, key, obj, opts...)
	}
	gvr, _ := meta.UnsafeGuessKindToResource(gvk)
	if partial, ok := obj.(*metav1.PartialObjectMetadata); ok {
		objectMeta, err := c.mirror.get(gvr, key.Namespace, key.Name)
		if err != nil {
			return err
		}
		*partial = metav1.PartialObjectMetadata{ObjectMeta: *objectMeta}
		partial.SetGroupVersionKind(gvk)
		return nil
	}
	stored, err := c.tracker.Get(gvr, key.Namespace, key.Name)
	if err != nil {
		return err
	}
	if reflect.TypeOf(stored) != reflect.TypeOf(obj) {
		return c.WithWatch.Get(ctx, key, obj, opts...)
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(stored).Elem())
	clearReadOnlyFields(obj)
	return nil
}

func (c *fastReads) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	listOpts := (&client.ListOptions{}).ApplyOptions(opts)
	gvk, err := apiutil.GVKForObject(list, c.scheme)
	if _, unstructured := list.(runtime.Unstructured); err != nil || unstructured || listOpts.FieldSelector != nil {
		return c.WithWatch.List(ctx, list, opts...)
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	gvr, _ := meta.UnsafeGuessKindToResource(gvk)
	if partials, ok := list.(*metav1.PartialObjectMetadataList); ok {
		metas, err := c.mirror.list(gvr, gvk, listOpts.Namespace)
		if err != nil {
			return err
		}
		partials.Items = nil
		for _, objectMeta := range metas {
			if listOpts.LabelSelector == nil || listOpts.LabelSelector.Matches(labels.Set(objectMeta.Labels)) {
				item := metav1.PartialObjectMetadata{ObjectMeta: *objectMeta}
				item.SetGroupVersionKind(gvk)
				partials.Items = append(partials.Items, item)
			}
		}
		return nil
	}
	stored, err := c.tracker.List(gvr, gvk, listOpts.Namespace)
	if err != nil {
		return err
	}
	items, err := meta.ExtractList(stored)
	if err != nil {
		return err
	}
	kept := items[:0]
	for _, item := range items {
		o, ok := item.(client.Object)
		if !ok {
			return c.WithWatch.List(ctx, list, opts...)
		}
		if listOpts.LabelSelector == nil || listOpts.LabelSelector.Matches(labels.Set(o.GetLabels())) {
			clearReadOnlyFields(o)
			kept = append(kept, o)
		}
	}
	list.SetResourceVersion(stored.(metav1.ListInterface).GetResourceVersion())
	return meta.SetList(list, kept)
}

// metaMirror is the tracker with the metadata of what it stores kept aside,
// by resource, until a write to that resource: a metadata read copies the
// metadata, where the tracker copies the whole object (whole CRDs, for the
// reads that only want their labels).
type metaMirror struct {
	clienttesting.ObjectTracker
	mu         sync.Mutex
	byResource map[schema.GroupVersionResource]*mirrored
}

type mirrored struct {
	objects map[types.NamespacedName]*metav1.ObjectMeta
	lists   map[string][]*metav1.ObjectMeta // by namespace, "" for all
}

// get is a copy of the stored object's metadata, without managed fields.
func (m *metaMirror) get(gvr schema.GroupVersionResource, ns, name string) (*metav1.ObjectMeta, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.resource(gvr)
	key := types.NamespacedName{Namespace: ns, Name: name}
	if objectMeta, ok := r.objects[key]; ok {
		return objectMeta.DeepCopy(), nil
	}
	stored, err := m.Get(gvr, ns, name)
	if err != nil {
		return nil, err
	}
	objectMeta, err := metaOf(stored)
	if err != nil {
		return nil, err
	}
	r.objects[key] = objectMeta
	return objectMeta.DeepCopy(), nil
}

// list is a copy of the metadata of what the tracker lists.
func (m *metaMirror) list(gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, ns string) ([]*metav1.ObjectMeta, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.resource(gvr)
	metas, ok := r.lists[ns]
	if !ok {
		stored, err := m.List(gvr, gvk, ns)
		if err != nil {
			return nil, err
		}
		items, err := meta.ExtractList(stored)
		if err != nil {
			return nil, err
		}
		for _, item := range items {
			objectMeta, err := metaOf(item)
			if err != nil {
				return nil, err
			}
			metas = append(metas, objectMeta)
		}
		r.lists[ns] = metas
	}
	copies := make([]*metav1.ObjectMeta, len(metas))
	for i, objectMeta := range metas {
		copies[i] = objectMeta.DeepCopy()
	}
	return copies, nil
}

func (m *metaMirror) resource(gvr schema.GroupVersionResource) *mirrored {
	r, ok := m.byResource[gvr]
	if !ok {
		r = &mirrored{objects: map[types.NamespacedName]*metav1.ObjectMeta{}, lists: map[string][]*metav1.ObjectMeta{}}
		m.byResource[gvr] = r
	}
	return r
}

func metaOf(o runtime.Object) (*metav1.ObjectMeta, error) {
	accessor, ok := o.(metav1.ObjectMetaAccessor)
	if !ok {
		return nil, fmt.Errorf("%T has no object metadata", o)
	}
	objectMeta := accessor.GetObjectMeta().(*metav1.ObjectMeta)
	objectMeta.ManagedFields = nil
	return objectMeta, nil
}

// forget drops what is mirrored of gvr (of everything, for an empty one),
// once a write to it has returned: a read racing the write (the applier writes
// concurrently) fetches and stores under m.mu, so whatever it stored, old or
// new, is dropped here.
func (m *metaMirror) forget(gvr schema.GroupVersionResource) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if gvr.Empty() {
		clear(m.byResource)
		return
	}
	delete(m.byResource, gvr)
}

func (m *metaMirror) Add(obj runtime.Object) error {
	defer m.forget(schema.GroupVersionResource{})
	return m.ObjectTracker.Add(obj)
}

func (m *metaMirror) Create(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.CreateOptions) error {
	defer m.forget(gvr)
	return m.ObjectTracker.Create(gvr, obj, ns, opts...)
}

func (m *metaMirror) Update(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.UpdateOptions) error {
	defer m.forget(gvr)
	return m.ObjectTracker.Update(gvr, obj, ns, opts...)
}

func (m *metaMirror) Patch(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	defer m.forget(gvr)
	return m.ObjectTracker.Patch(gvr, obj, ns, opts...)
}

func (m *metaMirror) Apply(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	defer m.forget(gvr)
	return m.ObjectTracker.Apply(gvr, obj, ns, opts...)
}

func (m *metaMirror) Delete(gvr schema.GroupVersionResource, ns, name string, opts ...metav1.DeleteOptions) error {
	defer m.forget(gvr)
	return m.ObjectTracker.Delete(gvr, ns, name, opts...)
}

// clearReadOnlyFields does what the fake does to what it returns: no kind
// on a typed object, no managed fields.
func clearReadOnlyFields(o client.Object) {
	o.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	o.SetManagedFields(nil)
}

// firstTypeConverter is the fake's own: the first converter that knows the type.
type firstTypeConverter []managedfields.TypeConverter

func (m firstTypeConverter) ObjectToTyped(o runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	var errs []error
	for _, c := range m {
		v, err := c.ObjectToTyped(o, opts...)
		if err == nil {
			return v, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("no type converter knows %T: %w", o, kerrors.NewAggregate(errs))
}

func (m firstTypeConverter) TypedToObject(v *typed.TypedValue) (runtime.Object, error) {
	var errs []error
	for _, c := range m {
		o, err := c.TypedToObject(v)
		if err == nil {
			return o, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errors.New("no type converter knows the value"), kerrors.NewAggregate(errs))
}
