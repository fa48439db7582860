// Package kubevirt owns the KubeVirt CR's controller: for the active CR in the
// operator's namespace it computes the target deployment config and ID, gets
// the install strategy (cached ConfigMap or the strategy Job), applies it step
// by step (customization, certificates, the virt-handler canary through
// internal/rollout), advances the observed state once every step has rolled
// over, and uninstalls when the CR is deleted. The pure decisions are its
// Plan*/Conditions functions and the packages it calls; the Reconciler is the
// shell that reads the cluster and writes status, Events and objects.
package kubevirt
