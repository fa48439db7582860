package strategy

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virt-operator/virt-operator/internal/metadata"
)

// FuzzDecode feeds arbitrary payloads, encoded or plain, to Decode. It checks only
// that Decode never panics, that every failure wraps ErrCorrupt (so the operator
// can always recover by regenerating), and that a success holds at least one object.
func FuzzDecode(f *testing.F) {
	// Small seeds: the engine minimises every interesting input, and minimising
	// the full test strategy takes longer than a short fuzz run.
	small := &Strategy{}
	for _, o := range fullStrategy(f).Objects() {
		if kind := o.GetObjectKind().GroupVersionKind().Kind; kind == "ServiceAccount" || kind == KindSecurityContextConstraints {
			if err := small.Add(o); err != nil {
				f.Fatal(err)
			}
		}
	}
	cm, err := Encode(small, testConfig(), "monitoring")
	if err != nil {
		f.Fatal(err)
	}
	plain, err := Manifests(small)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(cm.Data[ManifestsKey], true)
	f.Add(string(plain), false)
	f.Add("", true)
	f.Add("", false)
	f.Add("---\n---\n", false)
	f.Add("apiVersion: v1\nkind: Pod\n", false)
	f.Add("apiVersion: security.openshift.io/v1\nkind: SecurityContextConstraints\nmetadata: 3\n", false)
	f.Add("H4sIAAAAAAAA/w==", true)

	f.Fuzz(func(t *testing.T, payload string, encoded bool) {
		in := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "fuzz", Namespace: "kubevirt", Labels: map[string]string{metadata.InstallStrategyLabel: ""}},
			Data:       map[string]string{ManifestsKey: payload},
		}
		if encoded {
			in.Annotations = map[string]string{metadata.InstallStrategyConfigMapEncodingAnnotation: metadata.InstallStrategyConfigMapEncodingGzipBase64}
		}
		s, err := Decode(in)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
			return
		}
		if len(s.Objects()) == 0 {
			t.Fatal("decoded a strategy with no objects")
		}
	})
}
