package apply

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// metadataDrift names what of our metadata the live object lost: a label or
// annotation we set that is missing or has another value. Extra keys are fine.
func metadataDrift(desired, live client.Object) string {
	if !subset(desired.GetLabels(), live.GetLabels()) {
		return "labels edited"
	}
	if !subset(desired.GetAnnotations(), live.GetAnnotations()) {
		return "annotations edited"
	}
	return ""
}

func bytesSubset(want, have map[string][]byte) bool {
	for k, v := range want {
		if hv, ok := have[k]; !ok || string(hv) != string(v) {
			return false
		}
	}
	return true
}

func subset(want, have map[string]string) bool {
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			return false
		}
	}
	return true
}

// ownedFieldsDrift compares, for kinds without a generation, the fields we own
// with the live ones after the API server's defaulting; it returns what differs,
// or "". Kinds with a generation are not compared here (see generationResource).
func ownedFieldsDrift(desired, live client.Object) string {
	if reflect.TypeOf(desired) != reflect.TypeOf(live) {
		return "live object of another type"
	}
	eq := equality.Semantic.DeepEqual
	switch d := desired.(type) {
	case *rbacv1.ClusterRole:
		l := live.(*rbacv1.ClusterRole)
		if d.AggregationRule != nil || l.AggregationRule != nil {
			// The aggregation controller owns the rules of an aggregated role.
			if !eq(d.AggregationRule, l.AggregationRule) {
				return "aggregationRule edited"
			}
		} else if !eq(d.Rules, l.Rules) {
			return "rules edited"
		}
	case *rbacv1.Role:
		if !eq(d.Rules, live.(*rbacv1.Role).Rules) {
			return "rules edited"
		}
	case *rbacv1.ClusterRoleBinding:
		l := live.(*rbacv1.ClusterRoleBinding)
		return bindingDrift(d.RoleRef, l.RoleRef, d.Subjects, l.Subjects)
	case *rbacv1.RoleBinding:
		l := live.(*rbacv1.RoleBinding)
		return bindingDrift(d.RoleRef, l.RoleRef, d.Subjects, l.Subjects)
	case *corev1.Service:
		return serviceDrift(d, live.(*corev1.Service))
	case *corev1.ConfigMap:
		// Our keys only: server-side apply keeps keys another manager added, so
		// counting them as drift would make every reconcile write again.
		l := live.(*corev1.ConfigMap)
		if !subset(d.Data, l.Data) || !bytesSubset(d.BinaryData, l.BinaryData) {
			return "data edited"
		}
	case *corev1.Secret:
		// Certificate data is managed by rotation; compared only when we set it.
		if l := live.(*corev1.Secret); !bytesSubset(d.Data, l.Data) {
			return "data edited"
		}
	case *corev1.ServiceAccount:
		l := live.(*corev1.ServiceAccount)
		if d.AutomountServiceAccountToken != nil && !eq(d.AutomountServiceAccountToken, l.AutomountServiceAccountToken) {
			return "automountServiceAccountToken edited"
		}
	case *apiregistrationv1.APIService:
		l := live.(*apiregistrationv1.APIService).Spec
		if len(d.Spec.CABundle) == 0 {
			// The certificates controller owns the bundle (we apply without it):
			// counting its bundle as drift wrote every APIService on every pass.
			l.CABundle = nil
		}
		if !eq(apiServiceSpec(d.Spec), apiServiceSpec(l)) {
			return "spec edited"
		}
	case *unstructured.Unstructured:
		for k, v := range d.Object {
			if k == "metadata" || k == "status" || k == "apiVersion" || k == "kind" {
				continue
			}
			if !contains(live.(*unstructured.Unstructured).Object[k], v) {
				return k + " edited"
			}
		}
	}
	return ""
}

func bindingDrift(dRef, lRef rbacv1.RoleRef, dSub, lSub []rbacv1.Subject) string {
	if normRoleRef(dRef) != normRoleRef(lRef) {
		return "roleRef edited"
	}
	if !equality.Semantic.DeepEqual(normSubjects(dSub), normSubjects(lSub)) {
		return "subjects edited"
	}
	return ""
}

// normRoleRef and normSubjects apply the API server's RBAC defaulting.
func normRoleRef(r rbacv1.RoleRef) rbacv1.RoleRef {
	if r.APIGroup == "" {
		r.APIGroup = rbacv1.GroupName
	}
	return r
}

func normSubjects(in []rbacv1.Subject) []rbacv1.Subject {
	out := make([]rbacv1.Subject, len(in))
	for i, s := range in {
		if s.APIGroup == "" && (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) {
			s.APIGroup = rbacv1.GroupName
		}
		out[i] = s
	}
	return out
}

// serviceDrift compares the selector keys, the ports and the fields we set.
// Only what we set counts: server-side apply keeps selector keys and ports
// (keyed by port and protocol) another manager added, and fields of our ports
// we leave empty. clusterIP and type changes are handled by needsRecreate.
func serviceDrift(d, l *corev1.Service) string {
	if !subset(d.Spec.Selector, l.Spec.Selector) {
		return "selector edited"
	}
	if d.Spec.PublishNotReadyAddresses != l.Spec.PublishNotReadyAddresses {
		return "publishNotReadyAddresses edited"
	}
	if d.Spec.SessionAffinity != "" && d.Spec.SessionAffinity != l.Spec.SessionAffinity {
		return "sessionAffinity edited"
	}
	live := make(map[portKey]corev1.ServicePort, len(l.Spec.Ports))
	for _, p := range l.Spec.Ports {
		p = normPort(p)
		live[portKey{p.Port, p.Protocol}] = p
	}
	for _, p := range d.Spec.Ports {
		want := normPort(p)
		have, ok := live[portKey{want.Port, want.Protocol}]
		if !ok {
			return "ports edited"
		}
		if want.Name == "" {
			have.Name = ""
		}
		if want.NodePort == 0 {
			have.NodePort = 0 // allocated by the server
		}
		if want.AppProtocol == nil {
			have.AppProtocol = nil
		}
		if !equality.Semantic.DeepEqual(want, have) {
			return "ports edited"
		}
	}
	return ""
}

// portKey is how server-side apply tells a Service's ports apart.
type portKey struct {
	port     int32
	protocol corev1.Protocol
}

func normPort(p corev1.ServicePort) corev1.ServicePort {
	if p.Protocol == "" {
		p.Protocol = corev1.ProtocolTCP
	}
	if p.TargetPort == (intstr.IntOrString{}) {
		p.TargetPort = intstr.FromInt32(p.Port)
	}
	return p
}

// needsRecreate: a Service whose type or clusterIP must change cannot be patched.
func needsRecreate(desired, live client.Object) string {
	d, ok := desired.(*corev1.Service)
	l, ok2 := live.(*corev1.Service)
	if !ok || !ok2 {
		return ""
	}
	dt, lt := d.Spec.Type, l.Spec.Type
	if dt == "" {
		dt = corev1.ServiceTypeClusterIP
	}
	if lt == "" {
		lt = corev1.ServiceTypeClusterIP
	}
	if dt != lt {
		return "service type changes from " + string(lt) + " to " + string(dt)
	}
	if d.Spec.ClusterIP != "" && d.Spec.ClusterIP != l.Spec.ClusterIP {
		return "service clusterIP changes from " + l.Spec.ClusterIP + " to " + d.Spec.ClusterIP
	}
	return ""
}

func apiServiceSpec(s apiregistrationv1.APIServiceSpec) apiregistrationv1.APIServiceSpec {
	if s.Service != nil {
		svc := *s.Service
		if svc.Port == nil {
			svc.Port = ptr.To[int32](443)
		}
		s.Service = &svc
	}
	return s
}

// contains reports whether want is a "subset" of have: maps recursively (extra
// keys in have are defaults), everything else equal.
func contains(have, want any) bool {
	wm, ok := want.(map[string]any)
	if !ok {
		return equality.Semantic.DeepEqual(have, want)
	}
	hm, ok := have.(map[string]any)
	if !ok {
		return false
	}
	for k, v := range wm {
		if !contains(hm[k], v) {
			return false
		}
	}
	return true
}
