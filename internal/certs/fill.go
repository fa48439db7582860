package certs

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virt-operator/virt-operator/internal/strategy"
)

// Inputs is what Fill needs besides the strategy.
type Inputs struct {
	// Secrets and ConfigMaps are the live objects, by namespace and name; a
	// missing entry means the object does not exist.
	Secrets    map[types.NamespacedName]*corev1.Secret
	ConfigMaps map[types.NamespacedName]*corev1.ConfigMap
	Policy     Policy
	Now        time.Time
	Issuer     Issuer
}

// SecretDecision is the decision taken on one live Secret.
type SecretDecision struct {
	Secret types.NamespacedName
	Decision
}

// Result is the certificate part of the desired state.
type Result struct {
	// Secrets are copies of the strategy's kubernetes.io/tls Secrets with their
	// data and the kubevirt.io/duration annotation: the CAs first, then the
	// leaves, each in strategy order. Write the CA Secrets, then the
	// ConfigMaps, then inject CABundle into the webhooks and APIServices, and
	// only then the leaf Secrets, so no leaf is served before its CA is
	// trusted.
	Secrets []*corev1.Secret
	// ConfigMaps are copies of the strategy's CA ConfigMaps with their
	// ca-bundle: kubevirt-ca, then kubevirt-external-ca (reset to an empty
	// bundle once its certificates are merged into kubevirt-ca's), then the
	// export and backup bundles.
	ConfigMaps []*corev1.ConfigMap
	// CABundle is the kubevirt-ca bundle, for InjectCABundle.
	CABundle []byte
	// Decisions holds the decision on every live certificate Secret, in the
	// order of Secrets.
	Decisions []SecretDecision
	// NextCheck is the earliest time a certificate becomes due or a bundle
	// drops an expired certificate: the controller requeues then.
	NextCheck time.Time
}

// Fill computes the certificate Secrets and CA ConfigMaps of a strategy from
// the live ones. s is not modified. A Secret whose decision is not to rotate
// keeps its live data byte for byte, so with unchanged inputs Fill returns
// deep-equal results. Every kubernetes.io/tls Secret of the strategy must be
// one the operator issues (ProfileFor), and each leaf's CA must be in the
// strategy; other Secret types and ConfigMaps are left out of the result.
func Fill(s *strategy.Strategy, in Inputs) (*Result, error) {
	if err := in.Policy.Validate(); err != nil {
		return nil, err
	}
	var cas, leaves []*corev1.Secret
	for _, sec := range s.Secrets {
		if sec.Type != corev1.SecretTypeTLS {
			continue
		}
		prof, ok := ProfileFor(sec.Name, sec.Namespace)
		if !ok {
			return nil, fmt.Errorf("certificate secret %s/%s: the operator has no profile for it", sec.Namespace, sec.Name)
		}
		if prof.Kind == KindCA {
			cas = append(cas, sec)
		} else {
			leaves = append(leaves, sec)
		}
	}
	r := &Result{}
	issued := map[string]*KeyPair{}
	replaced := map[string]*x509.Certificate{} // CA name → the live CA it replaces
	for _, shell := range cas {
		live := in.Secrets[key(shell.Namespace, shell.Name)]
		d, kp := caDecision(live, in.Policy, in.Now)
		prof, _ := ProfileFor(shell.Name, shell.Namespace)
		if d.Rotate {
			if old, err := ParseSecret(live); err == nil {
				replaced[shell.Name] = old.Cert
			}
		}
		kp, err := r.add(shell, d, kp, prof, nil, in)
		if err != nil {
			return nil, err
		}
		issued[shell.Name] = kp
	}
	for _, shell := range leaves {
		prof, _ := ProfileFor(shell.Name, shell.Namespace)
		ca := issued[prof.CA]
		if ca == nil {
			return nil, fmt.Errorf("certificate secret %s/%s: its CA %s is not in the strategy", shell.Namespace, shell.Name, prof.CA)
		}
		live := in.Secrets[key(shell.Namespace, shell.Name)]
		d, kp := leafDecision(live, ca, in.Policy, in.Now)
		if _, err := r.add(shell, d, kp, prof, ca, in); err != nil {
			return nil, err
		}
	}
	if err := r.fillBundles(s.ConfigMaps, issued, replaced, in); err != nil {
		return nil, err
	}
	return r, nil
}

// add appends the desired Secret for shell and returns its key pair.
func (r *Result) add(shell *corev1.Secret, d Decision, kp *KeyPair, prof Profile, ca *KeyPair, in Inputs) (*KeyPair, error) {
	name := key(shell.Namespace, shell.Name)
	life := in.Policy.LifetimeOf(shell.Name)
	if d.Rotate {
		var err error
		if kp, err = in.Issuer.Issue(prof, ca, in.Now, life.Duration); err != nil {
			return nil, fmt.Errorf("certificate secret %s: %w", name, err)
		}
	} else {
		kp = &KeyPair{Cert: kp.Cert, Key: kp.Key, CertPEM: bytes.Clone(kp.CertPEM), KeyPEM: bytes.Clone(kp.KeyPEM)}
	}
	out := shell.DeepCopy()
	kp.SetSecret(out, life.Duration)
	next := d // a kept Secret is written unchanged, so its decision stands
	if d.Rotate {
		// The decision on the new certificate gives the next check, and
		// proves the policy cannot loop: a fresh certificate must not be due.
		if ca == nil {
			next, _ = caDecision(out, in.Policy, in.Now)
		} else {
			next, _ = leafDecision(out, ca, in.Policy, in.Now)
		}
		if next.Rotate {
			return nil, fmt.Errorf("certificate secret %s: a new certificate is due at once (%s: %s)", name, next.Reason, next.Message)
		}
	}
	r.Secrets = append(r.Secrets, out)
	r.Decisions = append(r.Decisions, SecretDecision{Secret: name, Decision: d})
	r.earliest(next.NextCheck)
	return kp, nil
}

func (r *Result) earliest(t time.Time) {
	if !t.IsZero() && (r.NextCheck.IsZero() || t.Before(r.NextCheck)) {
		r.NextCheck = t
	}
}

// fillBundles builds the CA ConfigMaps. Each bundle keeps what the live
// ConfigMap already trusts and the CA this Fill replaces; kubevirt-ca also
// takes in the certificates of kubevirt-external-ca.
func (r *Result) fillBundles(shells []*corev1.ConfigMap, issued map[string]*KeyPair, replaced map[string]*x509.Certificate, in Inputs) error {
	liveBundle := func(cm *corev1.ConfigMap) []*x509.Certificate {
		live := in.ConfigMaps[key(cm.Namespace, cm.Name)]
		if live == nil {
			return nil
		}
		certs, _ := ParseBundle([]byte(live.Data[CABundleKey])) // unreadable parts are dropped
		return certs
	}
	var first, external, rest []*corev1.ConfigMap
	var externalCerts []*x509.Certificate
	done := map[string]bool{}
	for _, cm := range shells {
		switch {
		case done[cm.Name]:
			continue // listed twice (upstream's strategies do)
		case cm.Name == ConfigMapExternalCA:
			externalCerts = liveBundle(cm)
			out := cm.DeepCopy()
			out.Data = map[string]string{CABundleKey: ""}
			external = append(external, out)
		case IsCAName(cm.Name):
			if issued[cm.Name] == nil {
				return fmt.Errorf("CA configmap %s/%s: its CA secret is not in the strategy", cm.Namespace, cm.Name)
			}
			if cm.Name == SecretCA {
				first = append(first, cm)
			} else {
				rest = append(rest, cm)
			}
		default:
			continue
		}
		done[cm.Name] = true
	}
	var out []*corev1.ConfigMap
	for _, cm := range append(first, rest...) {
		prev := liveBundle(cm)
		if old := replaced[cm.Name]; old != nil {
			prev = append(prev, old)
		}
		if cm.Name == SecretCA {
			prev = append(prev, externalCerts...)
		}
		bundle := Bundle(issued[cm.Name], prev, in.Now)
		c := cm.DeepCopy()
		c.Data = map[string]string{CABundleKey: string(bundle)}
		out = append(out, c)
		r.earliest(nextBundleChange(issued[cm.Name], prev, in.Now))
		if cm.Name == SecretCA {
			r.CABundle = bundle
			out = append(out, external...)
		}
	}
	if len(first) == 0 {
		out = append(out, external...)
	}
	r.ConfigMaps = out
	return nil
}

// InjectCABundle sets bundle as the caBundle of every webhook of the
// strategy's validating and mutating webhook configurations and of every
// APIService. It modifies s: call it on the reconcile's own copy of a cached
// strategy.
func InjectCABundle(s *strategy.Strategy, bundle []byte) {
	for _, c := range s.ValidatingWebhookConfigurations {
		for i := range c.Webhooks {
			c.Webhooks[i].ClientConfig.CABundle = bytes.Clone(bundle)
		}
	}
	for _, c := range s.MutatingWebhookConfigurations {
		for i := range c.Webhooks {
			c.Webhooks[i].ClientConfig.CABundle = bytes.Clone(bundle)
		}
	}
	for _, a := range s.APIServices {
		a.Spec.CABundle = bytes.Clone(bundle)
	}
}

func key(namespace, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: namespace, Name: name}
}
