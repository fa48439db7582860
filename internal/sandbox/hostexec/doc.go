// Package hostexec runs selected pods of the sandbox as processes on the host.
//
// kwok nodes run no containers, but some pods must really run: the operator's
// install-strategy Job starts the target operator image to generate the install
// strategy. The sandbox therefore executes such pods on the host with the project's
// own binary and marks them finished from the exit code; the real Job controller in
// kube-controller-manager then completes or fails their Job.
//
// Selection: a pod is host-executed when it is labelled
// sandbox.virt-operator.io/host-exec=true (Label) or matches one of the configured
// label selectors (DefaultSelectors: kubevirt.io=virt-operator-strategy-dumper, the
// install-strategy pods). The sandbox's kwok stages exclude the same pods through
// Matcher.StageExpression, so kwok never makes them Ready, completes or crash-loops
// them; kube-scheduler still binds them and kwok still deletes them.
//
// Command: Programs maps the container image to a host program (by default the
// virt-operator binary) that stands in for the image's entrypoint, run with the
// container's args (see Argv for container commands). The environment is the
// container's (values, fieldRef, ConfigMap and Secret refs, envFrom; see
// ContainerEnv) plus PATH, HOME (a per-pod work directory), HOSTNAME and KUBECONFIG
// pointing at the sandbox's admin kubeconfig, so the program reaches the API server
// from the host. Init containers are not supported (the pod fails).
//
// Runner: informers (one per selector) watch pods cluster-wide. A matching pod bound
// to a node and still Pending is marked Running (containers running and ready, host
// and pod IP = the node's InternalIP), its containers run at once as processes (own
// process group, killed with the runner, on pod deletion, or after Timeout or the
// pod's activeDeadlineSeconds), their stdout and stderr appended to
// LOGDIR/hostexec-NAMESPACE-POD.log, and the pod is marked Succeeded (every exit code
// 0, terminated reason Completed) or Failed (terminated with the exit code, reason
// Error and, as message, the last line the process wrote to stderr). At most
// Concurrency pods run at once; the others stay Pending until a slot frees.
//
// A pod never runs twice: the runner remembers the UIDs it handled, and on start it
// leaves Succeeded and Failed pods alone and marks a Running pod it did not start
// Failed (reason RunnerRestarted, "runner restarted"), since its process died with
// the previous runner. A pod is marked Running before its process starts, so a
// runner dying in between leaves it Running, never half-run and Pending.
//
// Kubernetes' Job controller writes its own Failed condition ("Job has reached the
// specified backoff limit"); the process's error is in the pod's terminated state
// (status.containerStatuses[].state.terminated.message).
//
// In the sandbox the runner is a background process, `virt-sandbox hostexec`
// (hidden), started by sandbox.Up and stopped by Down like the other components;
// it runs the operator's pods with the virt-operator binary.
package hostexec
