package kubevirt

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/certs"
	"github.com/virt-operator/virt-operator/internal/controller/certificates"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// wantCertificates tells the certificate controller (package
// controller/certificates) which certificates the deployments involved need:
// the certificate Secret and CA ConfigMap shells of the target's prepared
// strategy and of the observed one's, each stamped as its deployment writes it
// (the target's wins where both have one). It records whether they are
// served: the object phase writes nothing before the certificates of what it
// writes exist and are valid. The certificate controller never waits on this
// controller: it keeps every certificate that exists valid in any case.
func (r *Reconciler) wantCertificates(s *scope) {
	if r.Certificates == nil { // no certificate controller (unit tests of other phases)
		s.certificatesServed = true
		return
	}
	var wanted certificates.Wanted
	seen := map[string]bool{}
	for _, d := range []*deployment{s.target, s.observed} {
		if d == nil || d.prepared == nil {
			continue
		}
		shells := &strategy.Strategy{}
		for _, sec := range d.prepared.Secrets {
			if isCertificate(sec) && !seen["Secret/"+sec.Name] {
				seen["Secret/"+sec.Name] = true
				shells.Secrets = append(shells.Secrets, sec.DeepCopy())
			}
		}
		for _, cm := range d.prepared.ConfigMaps {
			if isCertificate(cm) && !seen["ConfigMap/"+cm.Name] {
				seen["ConfigMap/"+cm.Name] = true
				shells.ConfigMaps = append(shells.ConfigMaps, cm.DeepCopy())
			}
		}
		apply.Desired(shells, d.cfg)
		wanted.Secrets = append(wanted.Secrets, shells.Secrets...)
		wanted.ConfigMaps = append(wanted.ConfigMaps, shells.ConfigMaps...)
	}
	s.certificatesServed = r.Certificates.Set(s.kv, wanted)
	if !s.certificatesServed {
		s.requeueAfter(certificatesWait)
	}
}

// certificatesWait is how soon a pass waiting for the certificate controller
// looks again: its writes wake this controller, but a pass that found every
// certificate valid writes nothing.
const certificatesWait = time.Second

// isCertificate: obj is a certificate Secret or CA bundle ConfigMap, which
// only the certificate controller writes.
func isCertificate(obj client.Object) bool {
	switch o := obj.(type) {
	case *corev1.Secret:
		return certs.IsCertificateObject("Secret", o.Name, o.Namespace)
	case *corev1.ConfigMap:
		return certs.IsCertificateObject("ConfigMap", o.Name, o.Namespace)
	}
	return false
}

// withoutCertificates is actions without those on certificate Secrets and
// CA bundle ConfigMaps.
func withoutCertificates(actions []apply.Action) []apply.Action {
	out := actions[:0:0]
	for _, a := range actions {
		if !isCertificate(a.Object) {
			out = append(out, a)
		}
	}
	return out
}
