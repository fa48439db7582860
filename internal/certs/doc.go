// Package certs owns the operator's self-signed PKI: the rotation policy read
// from spec.certificateRotateStrategy, issuing CA, serving and client
// certificates, their kubernetes.io/tls Secret encoding, the rotation
// decisions, the CA bundles of the CA ConfigMaps, and filling the strategy's
// certificate shells with data (Fill) and its webhooks and APIServices with
// the bundle (InjectCABundle).
//
// Everything here is a pure function of its inputs: the time is always a
// `now` parameter (the controller passes its injected clock's Now; nothing in
// this package calls time.Now), and decisions are returned as data
// (Decision) for the controller to act on and requeue at.
//
// # Who signs what (profiles.go)
//
// kubevirt-ca (CN kubevirt.io) signs all eleven leaf certificates;
// kubevirt-export-ca (export.kubevirt.io) and kubevirt-backup-ca
// (backup.kubevirt.io) are CAs the components use themselves, so the operator
// only issues them and publishes their bundles. Serving certificates carry
// the Service DNS names <svc>, <svc>.<ns>, <svc>.<ns>.svc and
// <svc>.<ns>.svc.cluster.local; common names follow upstream because the
// components check them (e.g. kubevirt.io:system:node:virt-handler).
//
// # Keys
//
// New keys are ECDSA P-256 by default: generating one takes microseconds
// (RSA-2048 takes tens of milliseconds, which would make filling 14 Secrets
// from scratch slow and the tests slower), the PEM is small, and every TLS
// stack involved (Go, the kube-apiserver calling webhooks and APIServices)
// accepts it; upstream KubeVirt uses ECDSA too. Issuer.Key is injectable,
// e.g. a pool of pre-generated keys in tests. Parsing accepts any key type
// crypto/tls accepts, so Secrets written by others still load.
//
// # Order of writes
//
// The controller writes the CA Secrets, then the CA ConfigMaps (kubevirt-ca
// before resetting kubevirt-external-ca), then the webhooks and APIServices
// with InjectCABundle, and the leaf Secrets last, so no leaf is served before
// its CA is trusted; it requeues at Result.NextCheck.
//
// # Idempotence
//
// When a Decision says no rotation, Fill reuses the live Secret's bytes
// verbatim and Bundle is deterministic (current CA first, the rest sorted),
// so calling Fill again with unchanged inputs returns deep-equal objects and
// the apply engine writes nothing at rest.
package certs
