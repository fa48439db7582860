package certs

import (
	"errors"
	"fmt"
	"time"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// Upstream's defaults (§4.10 of the upstream notes): the CA lives 7 days, a
// leaf certificate 1 day, and each is renewed when 20% of its life is left.
const (
	DefaultCADuration   = 7 * 24 * time.Hour
	DefaultCertDuration = 24 * time.Hour
	// DefaultRenewFraction is the share of a duration left when renewal is due
	// if renewBefore is not set.
	DefaultRenewFraction = 0.2
)

// Lifetime is how long one certificate lives and how long before its end it
// is replaced.
type Lifetime struct {
	Duration    time.Duration
	RenewBefore time.Duration
}

// Policy is the rotation policy of every certificate the operator issues.
type Policy struct {
	// CA is the lifetime of kubevirt-ca.
	CA Lifetime
	// Cert is the lifetime of every leaf certificate.
	Cert Lifetime
}

// DefaultPolicy is the policy of an empty certificateRotateStrategy.
func DefaultPolicy() Policy {
	return Policy{
		CA:   Lifetime{DefaultCADuration, fraction(DefaultCADuration)},
		Cert: Lifetime{DefaultCertDuration, fraction(DefaultCertDuration)},
	}
}

// AuxCA is the lifetime of kubevirt-export-ca and kubevirt-backup-ca. Upstream
// gives them the CA's duration but the leaf certificates' renewBefore; we keep
// that quirk so a cluster moving between the two operators rotates at the same
// times.
func (p Policy) AuxCA() Lifetime {
	return Lifetime{Duration: p.CA.Duration, RenewBefore: p.Cert.RenewBefore}
}

// LifetimeOf returns the lifetime of the certificate in the Secret of that
// name: kubevirt-ca, an auxiliary CA, or a leaf.
func (p Policy) LifetimeOf(secretName string) Lifetime {
	switch secretName {
	case SecretCA:
		return p.CA
	case SecretExportCA, SecretBackupCA:
		return p.AuxCA()
	default:
		return p.Cert
	}
}

const fieldPrefix = "spec.certificateRotateStrategy.selfSigned."

// PolicyFrom reads the policy from a KubeVirt spec's certificateRotateStrategy.
// An unset duration takes the default; an unset renewBefore is 20% of the
// (possibly user-set) duration. The error names every offending field.
//
// A value that is not a Go duration (stored under an older CRD, see v1.Duration)
// is named; the policy returned then has the default in its place.
func PolicyFrom(s v1.KubeVirtCertificateRotateStrategy) (Policy, error) {
	var ca, server *v1.CertConfig
	if s.SelfSigned != nil {
		ca, server = s.SelfSigned.CA, s.SelfSigned.Server
	}
	caLife, caErrs := lifetimeFrom(ca, DefaultCADuration, "ca")
	certLife, certErrs := lifetimeFrom(server, DefaultCertDuration, "server")
	p := Policy{CA: caLife, Cert: certLife}
	if errs := append(caErrs, certErrs...); len(errs) > 0 {
		return p, errors.Join(errs...)
	}
	return p, p.Validate()
}

func lifetimeFrom(c *v1.CertConfig, defDuration time.Duration, name string) (Lifetime, []error) {
	l := Lifetime{Duration: defDuration}
	var errs []error
	if c != nil && c.Duration != nil {
		if err := c.Duration.Check(fieldPrefix + name + ".duration"); err != nil {
			errs = append(errs, err)
		} else {
			l.Duration = c.Duration.Duration
		}
	}
	l.RenewBefore = fraction(l.Duration)
	if c != nil && c.RenewBefore != nil {
		if err := c.RenewBefore.Check(fieldPrefix + name + ".renewBefore"); err != nil {
			errs = append(errs, err)
		} else {
			l.RenewBefore = c.RenewBefore.Duration
		}
	}
	return l, errs
}

func fraction(d time.Duration) time.Duration {
	return time.Duration(float64(d) * DefaultRenewFraction)
}

// The shortest lifetimes a policy may set. A certificate must live long enough
// for the rotation to distribute it before it is due again: a pass writes the
// CA, the bundles and the webhooks' caBundle before the leaf Secrets, and the
// components read their files and Secrets with a delay of their own. A lifetime
// of a second would reissue every certificate on every pass. The admission
// webhook refuses a spec below these, so the operator and the webhook agree.
const (
	MinDuration    = time.Minute
	MinRenewBefore = 10 * time.Second
)

// Validate rejects a policy that could never work: a duration shorter than
// MinDuration, a renewBefore shorter than MinRenewBefore (renewal at the instant
// of expiry leaves clients with an expired certificate), or a renewBefore not
// shorter than its duration (every new certificate would be due at once: a
// rotation loop).
func (p Policy) Validate() error {
	var errs []error
	errs = append(errs, p.CA.validate("ca")...)
	errs = append(errs, p.Cert.validate("server")...)
	if len(errs) == 0 && p.Cert.RenewBefore >= p.CA.Duration {
		errs = append(errs, fmt.Errorf("%sserver.renewBefore (%s) must be shorter than %sca.duration (%s): "+
			"the export and backup CAs are renewed that long before they expire",
			fieldPrefix, p.Cert.RenewBefore, fieldPrefix, p.CA.Duration))
	}
	return errors.Join(errs...)
}

func (l Lifetime) validate(name string) []error {
	var errs []error
	d, rb := fieldPrefix+name+".duration", fieldPrefix+name+".renewBefore"
	if l.Duration < MinDuration {
		errs = append(errs, fmt.Errorf("%s (%s) must be at least %s", d, l.Duration, MinDuration))
	}
	if l.RenewBefore < MinRenewBefore {
		errs = append(errs, fmt.Errorf("%s (%s) must be at least %s", rb, l.RenewBefore, MinRenewBefore))
	} else if l.Duration >= MinDuration && l.RenewBefore >= l.Duration {
		errs = append(errs, fmt.Errorf("%s (%s) must be shorter than %s (%s)", rb, l.RenewBefore, d, l.Duration))
	}
	return errs
}
