package certs

import (
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/virt-operator/virt-operator/internal/metadata"
)

// Decision says whether a certificate Secret must be reissued now and, if
// not, when to look at it again.
type Decision struct {
	Rotate bool
	// Reason is one of the Reason constants.
	Reason string
	// Message explains the reason for humans; it names no generated values
	// except the certificate fields being compared.
	Message string
	// NextCheck is when the certificate becomes due: now when Rotate is set,
	// the rotation deadline otherwise. The controller requeues at the earliest
	// NextCheck of all certificates.
	NextCheck time.Time
}

// Reasons of a Decision.
const (
	ReasonValid           = "Valid"
	ReasonMissing         = "Missing"
	ReasonCorrupt         = "Corrupt"
	ReasonDurationChanged = "DurationChanged"
	ReasonProfileChanged  = "ProfileChanged"
	ReasonWrongCA         = "SignedByOtherCA"
	ReasonExpiring        = "Expiring"
	ReasonUnknownSecret   = "UnknownSecret"
)

// CADecision decides on one of the CA Secrets (kubevirt-ca,
// kubevirt-export-ca, kubevirt-backup-ca). A CA is reissued when it is missing
// or corrupt, its duration annotation differs from the policy, its subject is
// not the expected CA, or now is past notAfter − renewBefore.
func CADecision(secret *corev1.Secret, p Policy, now time.Time) Decision {
	d, _ := caDecision(secret, p, now)
	return d
}

// ServingDecision decides on a leaf certificate Secret (server or client),
// given the current CA that must have signed it. On top of the CA's reasons
// it is reissued when it is not signed by ca, when its common name, DNS names
// or key usage differ from its profile, and its deadline is the earlier of
// notAfter − renewBefore and, when the CA expires first,
// caNotAfter − caRenewBefore/2 (half-way through the CA's overlap window, by
// when the next CA is in every bundle). A nil ca skips the CA checks.
func ServingDecision(secret *corev1.Secret, ca *KeyPair, p Policy, now time.Time) Decision {
	d, _ := leafDecision(secret, ca, p, now)
	return d
}

func caDecision(secret *corev1.Secret, p Policy, now time.Time) (Decision, *KeyPair) {
	if secret == nil {
		return decide(nil, Profile{}, Lifetime{}, nil, Lifetime{}, now)
	}
	prof, ok := ProfileFor(secret.Name, secret.Namespace)
	if !ok || prof.Kind != KindCA {
		return unknown(secret, "is not a CA secret"), nil
	}
	return decide(secret, prof, p.LifetimeOf(secret.Name), nil, Lifetime{}, now)
}

func leafDecision(secret *corev1.Secret, ca *KeyPair, p Policy, now time.Time) (Decision, *KeyPair) {
	if secret == nil {
		return decide(nil, Profile{}, Lifetime{}, nil, Lifetime{}, now)
	}
	prof, ok := ProfileFor(secret.Name, secret.Namespace)
	if !ok || prof.Kind == KindCA {
		return unknown(secret, "is not a leaf certificate secret"), nil
	}
	return decide(secret, prof, p.LifetimeOf(secret.Name), ca, p.LifetimeOf(prof.CA), now)
}

func unknown(secret *corev1.Secret, what string) Decision {
	return Decision{Reason: ReasonUnknownSecret,
		Message: fmt.Sprintf("secret %s/%s %s the operator issues", secret.Namespace, secret.Name, what)}
}

// decide is the decision proper; it also returns the parsed key pair when the
// Secret is kept, so callers do not parse it twice.
func decide(s *corev1.Secret, prof Profile, life Lifetime, ca *KeyPair, caLife Lifetime, now time.Time) (Decision, *KeyPair) {
	rotate := func(reason, msg string) (Decision, *KeyPair) {
		return Decision{Rotate: true, Reason: reason, Message: msg, NextCheck: now}, nil
	}
	kp, err := ParseSecret(s)
	switch {
	case errors.Is(err, ErrNoData):
		return rotate(ReasonMissing, "the secret has no certificate yet")
	case err != nil:
		return rotate(ReasonCorrupt, err.Error())
	}
	if why := prof.mismatch(kp.Cert); why != "" {
		return rotate(ReasonProfileChanged, why)
	}
	if got := s.Annotations[metadata.CertificateDurationAnnotation]; !sameDuration(got, life.Duration) {
		return rotate(ReasonDurationChanged, fmt.Sprintf("annotation %s is %q, the policy says %s",
			metadata.CertificateDurationAnnotation, got, life.Duration))
	}
	deadline := kp.Cert.NotAfter.Add(-life.RenewBefore)
	if ca != nil {
		if err := kp.Cert.CheckSignatureFrom(ca.Cert); err != nil {
			return rotate(ReasonWrongCA, fmt.Sprintf("not signed by the current %s (%q)", prof.CA, ca.Cert.Subject.CommonName))
		}
		if ca.Cert.NotAfter.Before(kp.Cert.NotAfter) {
			if byCA := ca.Cert.NotAfter.Add(-caLife.RenewBefore / 2); byCA.Before(deadline) {
				deadline = byCA
			}
		}
	}
	if !now.Before(deadline) {
		return rotate(ReasonExpiring, fmt.Sprintf("due for renewal since %s (expires %s)",
			deadline.UTC().Format(time.RFC3339), kp.Cert.NotAfter.UTC().Format(time.RFC3339)))
	}
	return Decision{Reason: ReasonValid, Message: "valid until the renewal deadline", NextCheck: deadline}, kp
}

func sameDuration(annotation string, want time.Duration) bool {
	got, err := parseDurationAnnotation(annotation)
	return err == nil && got == want
}
