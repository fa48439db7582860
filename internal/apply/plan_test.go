package apply

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// cluster is a toy API server: it stores what Plan's actions write, applies some
// of the real server's defaulting, and bumps generations like it.
type cluster struct {
	live map[ObjectRef]client.Object
	gens []v1.GenerationStatus
}

func newCluster() *cluster { return &cluster{live: map[ObjectRef]client.Object{}} }

func (c *cluster) apply(t *testing.T, actions []Action) (writes int) {
	t.Helper()
	for _, a := range actions {
		ref := RefOf(a.Object)
		switch a.Op {
		case OpNone:
			continue
		case OpDelete:
			delete(c.live, ref)
		case OpCreate, OpUpdate, OpRecreate:
			obj := a.Object.DeepCopyObject().(client.Object)
			defaults(obj)
			gen := int64(1)
			if old, ok := c.live[ref]; ok && a.Op == OpUpdate {
				gen = old.GetGeneration() + 1
			}
			obj.SetGeneration(gen)
			c.live[ref] = obj
			if g, ok := generationOf(a.Object, gen, a.Object.GetAnnotations()[DesiredHashAnnotation]); ok {
				c.gens = MergeGenerations(c.gens, []v1.GenerationStatus{g})
			}
		}
		writes++
	}
	return writes
}

// defaults mimics the API server's defaulting of fields Plan compares.
func defaults(obj client.Object) {
	switch o := obj.(type) {
	case *corev1.Service:
		o.Spec.Type = corev1.ServiceTypeClusterIP
		o.Spec.ClusterIP = "10.0.0.7"
		o.Spec.SessionAffinity = corev1.ServiceAffinityNone
		for i := range o.Spec.Ports {
			o.Spec.Ports[i].Protocol = corev1.ProtocolTCP
		}
	case *rbacv1.ClusterRoleBinding:
		o.RoleRef.APIGroup = rbacv1.GroupName
		for i := range o.Subjects {
			if o.Subjects[i].Kind == rbacv1.UserKind {
				o.Subjects[i].APIGroup = rbacv1.GroupName
			}
		}
	case *appsv1.Deployment:
		o.Annotations["deployment.kubernetes.io/revision"] = "1"
	}
}

func ops(actions []Action) map[string]Op {
	out := map[string]Op{}
	for _, a := range actions {
		out[RefOf(a.Object).String()] = a.Op
	}
	return out
}

func desiredObjects(t *testing.T) []client.Object {
	t.Helper()
	d := Desired(testStrategy(t), testConfig(t, nil))
	return d.Objects()
}

func TestPlanCreatesThenRests(t *testing.T) {
	desired := desiredObjects(t)
	c := newCluster()
	first := Plan(desired, c.live, c.gens)
	for _, a := range first {
		if a.Op != OpCreate || a.Reason != "absent" {
			t.Errorf("%s: %s (%s), want Create", RefOf(a.Object), a.Op, a.Reason)
		}
	}
	if n := c.apply(t, first); n != len(desired) {
		t.Fatalf("%d writes, want %d", n, len(desired))
	}
	// Replan twice: the result of applying the first plan is at rest.
	for i := 0; i < 2; i++ {
		if w := Writes(Plan(desired, c.live, c.gens)); len(w) != 0 {
			t.Fatalf("at rest, plan %d wants writes: %v %s", i, w[0].Op, w[0].Reason)
		}
	}
}

func TestPlanDetectsChanges(t *testing.T) {
	tests := []struct {
		name      string
		edit      func(c *cluster, desired []client.Object)
		ref, want string
	}{
		{"Deployment edited out of band: generation bump", func(c *cluster, _ []client.Object) {
			d := c.live[ObjectRef{Kind: "Deployment", Namespace: ns, Name: VirtAPI}].(*appsv1.Deployment)
			d.Spec.Template.Spec.Containers[0].Image = "evil"
			d.Generation++
		}, "Deployment kubevirt/virt-api", "Update"},
		{"desired image changed: hash", func(_ *cluster, desired []client.Object) {
			for _, o := range desired {
				if d, ok := o.(*appsv1.Deployment); ok && d.Name == VirtController {
					d.Spec.Template.Spec.Containers[0].Image = "new"
				}
			}
		}, "Deployment kubevirt/virt-controller", "Update"},
		{"ClusterRole rule edited", func(c *cluster, _ []client.Object) {
			r := c.live[ObjectRef{Kind: "ClusterRole", Name: "kubevirt-apiserver"}].(*rbacv1.ClusterRole)
			r.Rules[0].Verbs = append(r.Rules[0].Verbs, "delete")
		}, "ClusterRole kubevirt-apiserver", "Update"},
		{"ClusterRoleBinding subject removed", func(c *cluster, _ []client.Object) {
			b := c.live[ObjectRef{Kind: "ClusterRoleBinding", Name: "kubevirt-apiserver"}].(*rbacv1.ClusterRoleBinding)
			b.Subjects = b.Subjects[:1]
		}, "ClusterRoleBinding kubevirt-apiserver", "Update"},
		{"Service port edited", func(c *cluster, _ []client.Object) {
			c.live[ObjectRef{Kind: "Service", Namespace: ns, Name: "virt-api"}].(*corev1.Service).Spec.Ports[0].TargetPort = intstr.FromInt32(9999)
		}, "Service kubevirt/virt-api", "Update"},
		{"Service type changed: recreate", func(c *cluster, _ []client.Object) {
			c.live[ObjectRef{Kind: "Service", Namespace: ns, Name: "virt-api"}].(*corev1.Service).Spec.Type = corev1.ServiceTypeNodePort
		}, "Service kubevirt/virt-api", "Recreate"},
		{"ConfigMap data edited", func(c *cluster, _ []client.Object) {
			c.live[ObjectRef{Kind: "ConfigMap", Namespace: ns, Name: "kubevirt-ca"}].(*corev1.ConfigMap).Data["ca-bundle"] = "x"
		}, "ConfigMap kubevirt/kubevirt-ca", "Update"},
		{"our label removed", func(c *cluster, _ []client.Object) {
			delete(c.live[ObjectRef{Kind: "ServiceAccount", Namespace: ns, Name: "kubevirt-apiserver"}].GetLabels(), "app.kubernetes.io/managed-by")
		}, "ServiceAccount kubevirt/kubevirt-apiserver", "Update"},
		{"foreign label added: fine", func(c *cluster, _ []client.Object) {
			c.live[ObjectRef{Kind: "ServiceAccount", Namespace: ns, Name: "kubevirt-apiserver"}].GetLabels()["mine"] = "x"
		}, "ServiceAccount kubevirt/kubevirt-apiserver", "None"},
		{"generation record lost (status reset)", func(c *cluster, _ []client.Object) { c.gens = nil },
			"DaemonSet kubevirt/virt-handler", "Update"},
		{"hash annotation removed", func(c *cluster, _ []client.Object) {
			delete(c.live[ObjectRef{Kind: "Service", Namespace: ns, Name: "virt-api"}].GetAnnotations(), DesiredHashAnnotation)
		}, "Service kubevirt/virt-api", "Update"},
		{"object deleted", func(c *cluster, _ []client.Object) {
			delete(c.live, ObjectRef{Kind: "DaemonSet", Namespace: ns, Name: VirtHandler})
		}, "DaemonSet kubevirt/virt-handler", "Create"},
		{"object being deleted: wait", func(c *cluster, _ []client.Object) {
			c.live[ObjectRef{Kind: "DaemonSet", Namespace: ns, Name: VirtHandler}].SetDeletionTimestamp(&metav1.Time{})
		}, "DaemonSet kubevirt/virt-handler", "None"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			desired := desiredObjects(t)
			c := newCluster()
			c.apply(t, Plan(desired, c.live, c.gens))
			tt.edit(c, desired)
			plan := Plan(desired, c.live, c.gens)
			got := ops(plan)
			if string(got[tt.ref]) != tt.want {
				t.Fatalf("%s: %s, want %s", tt.ref, got[tt.ref], tt.want)
			}
			for ref, op := range got {
				if ref != tt.ref && op != OpNone && tt.name != "generation record lost (status reset)" {
					t.Errorf("unrelated %s: %s", ref, op)
				}
			}
			c.apply(t, plan)
			if w := Writes(Plan(desired, c.live, c.gens)); len(w) != 0 {
				t.Errorf("not at rest after the fix: %s %s (%s)", w[0].Op, RefOf(w[0].Object), w[0].Reason)
			}
		})
	}
}

func TestPlanAggregatedClusterRole(t *testing.T) {
	role := clusterRole("aggregate")
	role.Rules = nil
	role.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"a": "b"}}}}
	c := newCluster()
	c.apply(t, Plan([]client.Object{role}, c.live, nil))
	// The aggregation controller fills in the rules: not ours, not a drift.
	c.live[RefOf(role)].(*rbacv1.ClusterRole).Rules = []rbacv1.PolicyRule{{Verbs: []string{"get"}}}
	if w := Writes(Plan([]client.Object{role}, c.live, nil)); len(w) != 0 {
		t.Errorf("aggregated rules counted as drift: %s", w[0].Reason)
	}
}

func TestPlanSecretDataIsRotationsBusiness(t *testing.T) {
	secret := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: metav1.ObjectMeta{Name: "kubevirt-ca", Namespace: ns}}
	c := newCluster()
	c.apply(t, Plan([]client.Object{secret}, c.live, nil))
	c.live[RefOf(secret)].(*corev1.Secret).Data = map[string][]byte{"tls.crt": []byte("pem")}
	if w := Writes(Plan([]client.Object{secret}, c.live, nil)); len(w) != 0 {
		t.Errorf("certificate data counted as drift: %s", w[0].Reason)
	}
}

func TestGenerations(t *testing.T) {
	a := v1.GenerationStatus{Group: "apps", Resource: "deployments", Namespace: ns, Name: "a", LastGeneration: 1}
	b := v1.GenerationStatus{Group: "apps", Resource: "daemonsets", Namespace: ns, Name: "b", LastGeneration: 1}
	a2 := a
	a2.LastGeneration = 2
	got := MergeGenerations([]v1.GenerationStatus{a, b}, []v1.GenerationStatus{a2})
	if len(got) != 2 || got[0] != a2 || got[1] != b {
		t.Errorf("merge replaced badly: %+v", got)
	}
	got = ForgetGenerations(got, []client.Object{deployment("a", 1)})
	if len(got) != 1 || got[0] != b {
		t.Errorf("forget: %+v", got)
	}
	if g, _ := generationOf(&rbacv1.Role{}, 1, ""); g.Resource != "" {
		t.Error("Roles have no generation semantics")
	}
}

// Hashing and building the apply body of an unstructured object (the strategy's
// Others) must leave it intact: the converter hands out its own map.
func TestUnstructuredObjectsSurviveHashAndApplyBody(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "instancetype.kubevirt.io/v1beta1", "kind": "VirtualMachineClusterInstancetype",
		"metadata": map[string]any{"name": "u1.small", "resourceVersion": "7"}, "spec": map[string]any{"cpu": map[string]any{"guest": int64(1)}},
	}}
	before := u.DeepCopy()
	if _, err := Hash(u); err != nil {
		t.Fatal(err)
	}
	if _, err := applyBody(u, testScheme(t)); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before.Object, u.Object) {
		t.Errorf("modified: %v", u.Object)
	}
}
