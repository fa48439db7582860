// Package integration holds tests that run against a real etcd and
// kube-apiserver (controller-runtime's envtest with the binaries from
// `make cluster-bins`), without nodes, a scheduler or controllers.
package integration
