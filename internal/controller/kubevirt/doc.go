// Package kubevirt owns the KubeVirt CR's controller: it watches KubeVirt CRs in
// the operator's namespace and drives their status. In this first increment it
// only acknowledges a new CR by setting status.phase to Deploying; install,
// upgrade and uninstall come with the reconcile issue.
package kubevirt
