// Package admission serves the webhooks the install strategy points at the operator
// itself (the ValidatingWebhookConfiguration virt-operator-validator, through the
// Service kubevirt-operator-webhook): validation of the KubeVirt CR on create,
// update and delete, at upstream's paths.
//
// The decisions are pure functions (decide.go): a second KubeVirt is refused, as
// upstream refuses it; a spec the operator would refuse or hold on forever is
// refused with the field named, checked by the operator's own code (the
// deployment config, the certificate and rollout policies, the windows, the
// workload-update settings, the generator's monitoring names), by what the API
// server would refuse in the pod placement the operator copies (placement.go)
// and, for a release the builtin generator knows, by a dry run: the release
// rendered and customized as the operator customizes it (within apply's
// limits on patches), with a deadline, whatever the spec;
// an update is checked only when the spec changes, so the
// operator's own finalizer and label writes always pass; a delete under
// BlockUninstallIfWorkloadsExist (the default) is refused while workloads exist, with
// their counts, which is the only point at which an uninstall can still be
// cancelled. The server (server.go) is a thin TLS shell around them: it serves with
// the certificate the operator issues into the Secret kubevirt-operator-certs from
// its own CA (read on every handshake from the cache, so a rotation needs no
// restart), HTTP/1.1 only and with bounded reads, and runs on every replica, not
// only the leader.
package admission
