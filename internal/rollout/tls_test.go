package rollout

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

func handlerDS(args ...string) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{}
	ds.Spec.Template.Spec.Containers = []corev1.Container{{Name: "virt-handler", Command: []string{"virt-handler"}, Args: args}}
	return ds
}

func TestPreserveTLSArgs(t *testing.T) {
	base := []string{"--port", "8443", "-v", "2"}
	withTLS := append(slices.Clone(base), "--migration-cn-types", "migration", "--tls-min-version=1.2")
	cases := []struct {
		name       string
		live, want []string
		same       bool
	}{
		{"live has TLS, desired not: kept", withTLS, withTLS, false},
		{"both have TLS: desired untouched", withTLS, withTLS, true},
		{"live without TLS: desired untouched", base, base, true},
		{"a flag followed by another flag takes no value", []string{"--tls-insecure", "--port", "1"}, append(slices.Clone(base), "--tls-insecure"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			desiredArgs := base
			if tc.same && slices.Equal(tc.want, withTLS) {
				desiredArgs = withTLS
			}
			desired := handlerDS(desiredArgs...)
			before := slices.Clone(desired.Spec.Template.Spec.Containers[0].Args)
			got := PreserveTLSArgs(handlerDS(tc.live...), desired)
			if (got == desired) != tc.same {
				t.Errorf("returned desired itself: %v, want %v", got == desired, tc.same)
			}
			if args := got.Spec.Template.Spec.Containers[0].Args; !slices.Equal(args, tc.want) {
				t.Errorf("args %v, want %v", args, tc.want)
			}
			if !slices.Equal(desired.Spec.Template.Spec.Containers[0].Args, before) {
				t.Error("desired was modified")
			}
		})
	}
	if PreserveTLSArgs(nil, nil) != nil {
		t.Error("nil in, nil out")
	}
}

// handlerWithCert is a handler DaemonSet mounting the handler certificate Secret.
func handlerWithCert(args ...string) *appsv1.DaemonSet {
	ds := handlerDS(args...)
	ds.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "kubevirt-virt-handler-certs",
		VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: HandlerCertSecret}}}}
	ds.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "kubevirt-virt-handler-certs", MountPath: "/etc/virt-handler/clientcertificates"}}
	return ds
}

func carrying(ds *appsv1.DaemonSet, what string) *appsv1.DaemonSet {
	ds.Annotations = map[string]string{CarriedOverAnnotation: what}
	return ds
}

func TestPlanTemplate(t *testing.T) {
	base := []string{"--port", "8443"}
	withTLS := append(slices.Clone(base), "--tls-min-version=1.2")
	cases := []struct {
		name        string
		live        *appsv1.DaemonSet
		desired     *appsv1.DaemonSet
		phase       Phase
		specChanged bool
		wantArgs    []string
		wantCert    bool
		carried     string // CarriedOverAnnotation of the result
		drop        bool
	}{
		{"a new target drops TLS args: kept while the rollout starts", handlerDS(withTLS...), handlerDS(base...), PhaseSuccessful, true, withTLS, false, CarriedTLSArgs, false},
		{"kept while the canary bakes (the live template is the carried one)", carrying(handlerDS(withTLS...), CarriedTLSArgs), handlerDS(base...), PhaseCanary, false, withTLS, false, CarriedTLSArgs, false},
		{"kept through the fast step", carrying(handlerDS(withTLS...), CarriedTLSArgs), handlerDS(base...), PhaseWaiting, false, withTLS, false, CarriedTLSArgs, false},
		{"dropped once Successful", carrying(handlerDS(withTLS...), CarriedTLSArgs), handlerDS(base...), PhaseSuccessful, false, base, false, "", true},
		{"after the drop nothing more to do", handlerDS(base...), handlerDS(base...), PhaseSuccessful, false, base, false, "", false},
		{"Failed writes the clean metadata (the rollback brings the old template)", carrying(handlerDS(withTLS...), CarriedTLSArgs), handlerDS(base...), PhaseFailed, false, base, false, "", true},
		{"the target keeps TLS args itself: nothing carried", handlerDS(withTLS...), handlerDS(withTLS...), PhaseCanary, true, withTLS, false, "", false},
		{"the certificate Secret stays mounted during the rollout", handlerWithCert(base...), handlerDS(base...), PhaseStarted, true, base, true, CarriedHandlerCert, false},
		{"and is detached only once Successful", carrying(handlerWithCert(base...), CarriedHandlerCert), handlerDS(base...), PhaseSuccessful, false, base, false, "", true},
		{"both carried", handlerWithCert(withTLS...), handlerDS(base...), PhaseStarted, true, withTLS, true, CarriedTLSArgs + "," + CarriedHandlerCert, false},
		{"the target mounts the Secret itself: nothing carried", handlerWithCert(base...), handlerWithCert(base...), PhaseCanary, true, base, true, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			desiredBefore := tc.desired.DeepCopy()
			got := PlanTemplate(tc.live, tc.desired, tc.phase, tc.specChanged)
			c := got.DaemonSet.Spec.Template.Spec.Containers[0]
			if !slices.Equal(c.Args, tc.wantArgs) {
				t.Errorf("args %v, want %v", c.Args, tc.wantArgs)
			}
			hasCert := secretVolume(got.DaemonSet.Spec.Template.Spec.Volumes, HandlerCertSecret) != nil && len(c.VolumeMounts) == 1
			if hasCert != tc.wantCert {
				t.Errorf("certificate Secret mounted: %v, want %v", hasCert, tc.wantCert)
			}
			if a := got.DaemonSet.Annotations[CarriedOverAnnotation]; a != tc.carried {
				t.Errorf("%s = %q, want %q", CarriedOverAnnotation, a, tc.carried)
			}
			if got.DropCarried != tc.drop {
				t.Errorf("DropCarried = %v, want %v", got.DropCarried, tc.drop)
			}
			if tc.carried == "" && got.DaemonSet != tc.desired {
				t.Error("nothing carried, yet not desired itself")
			}
			if !equality.Semantic.DeepEqual(tc.desired, desiredBefore) {
				t.Error("desired was modified")
			}
		})
	}
}

func TestCleanupStrategy(t *testing.T) {
	p := DefaultPolicy()
	fast := RollingUpdate(p.FastStep)
	ds := func(strategy *appsv1.DaemonSetUpdateStrategy, generation, observed int64, updated, desired int32) *appsv1.DaemonSet {
		d := handlerDS()
		d.Spec.UpdateStrategy = *strategy
		d.Generation = generation
		d.Status = appsv1.DaemonSetStatus{ObservedGeneration: observed, UpdatedNumberScheduled: updated, DesiredNumberScheduled: desired, NumberReady: desired}
		return d
	}
	rolledOver := ds(fast, 3, 3, 20, 20)
	cases := []struct {
		name  string
		phase Phase
		tmpl  TemplateWrite
		live  *appsv1.DaemonSet
		want  *appsv1.DaemonSetUpdateStrategy
	}{
		{"dropping the carried settings: the fast step", PhaseSuccessful, TemplateWrite{DropCarried: true}, ds(Default(), 2, 2, 20, 20), fast},
		{"the clean template reaching the nodes: kept at the fast step", PhaseSuccessful, TemplateWrite{}, ds(fast, 3, 3, 6, 20), fast},
		{"the clean template written, not yet observed: kept", PhaseSuccessful, TemplateWrite{}, ds(fast, 4, 3, 20, 20), fast},
		{"the clean template on every pod: the decision's strategy (back to 1)", PhaseSuccessful, TemplateWrite{}, rolledOver, nil},
		{"a node down with an updated pod does not hold the fast step", PhaseSuccessful, TemplateWrite{}, func() *appsv1.DaemonSet {
			d := rolledOver.DeepCopy()
			d.Status.NumberUnavailable, d.Status.NumberReady = 1, 19
			return d
		}(), nil},
		{"rolling at maxUnavailable 1 is not a clean-up", PhaseSuccessful, TemplateWrite{}, ds(Default(), 3, 3, 6, 20), nil},
		{"no clean-up outside Successful", PhaseIncreasing, TemplateWrite{DropCarried: true}, ds(fast, 3, 3, 6, 20), nil},
		{"no live DaemonSet", PhaseSuccessful, TemplateWrite{DropCarried: true}, nil, nil},
	}
	for _, tt := range cases {
		got := CleanupStrategy(tt.phase, tt.tmpl, tt.live, p, false)
		if (got == nil) != (tt.want == nil) || (got != nil && !SameStrategy(*got, *tt.want)) {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}
