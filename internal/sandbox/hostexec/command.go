package hostexec

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Programs maps container images to the host programs that stand in for them.
type Programs struct {
	// Default runs every image that Images does not name: the virt-operator binary.
	Default string
	// Images maps an image (exactly as in the pod, or its repository without tag or
	// digest) to a host program. These are other projects' binaries (KubeVirt's own
	// operator, for a release the builtin generator does not know): they find the
	// API server only through a --kubeconfig flag, which the runner appends.
	Images map[string]string
}

// Program returns the host program for image, and whether it is a mapped one
// (which gets --kubeconfig).
func (p Programs) Program(image string) (string, bool, error) {
	if prog, ok := p.Images[image]; ok {
		return prog, true, nil
	}
	if prog, ok := p.Images[repository(image)]; ok {
		return prog, true, nil
	}
	if p.Default == "" {
		return "", false, fmt.Errorf("no host program for image %q", image)
	}
	return p.Default, false, nil
}

// repository strips the tag and digest from an image reference.
func repository(image string) string {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		image = image[:i]
	}
	return image
}

// Argv is the host command line of container c, whose image is provided by program.
// The program stands in for the image's entrypoint: without a container command it
// runs with the container's args. A container command replaces the entrypoint as in
// Kubernetes; its first word is taken as the program when it has the program's base
// name (command ["virt-operator", "--x"] runs PROGRAM --x ARGS), otherwise it is run
// from the host's PATH. $(VAR) references to env are expanded as a kubelet does.
func Argv(c *corev1.Container, program string, env map[string]string) []string {
	var argv []string
	switch {
	case len(c.Command) == 0:
		argv = []string{program}
	case filepath.Base(c.Command[0]) == filepath.Base(program):
		argv = append([]string{program}, c.Command[1:]...)
	default:
		argv = append([]string(nil), c.Command...)
	}
	argv = append(argv, c.Args...)
	for i := 1; i < len(argv); i++ {
		argv[i] = expand(argv[i], env)
	}
	if len(c.Command) > 0 && argv[0] != program {
		argv[0] = expand(argv[0], env)
	}
	return argv
}

// EnvSource reads the data of the ConfigMaps and Secrets that env refers to; kind is
// "ConfigMap" or "Secret". A missing object returns an error satisfying
// apierrors.IsNotFound.
type EnvSource func(kind, name string) (map[string]string, error)

// ContainerEnv resolves the environment of container c as a kubelet would: envFrom
// first, then env in order (later entries win; values may refer to earlier ones with
// $(VAR)). Supported sources: literal values, fieldRef (metadata.name, namespace,
// uid, labels['k'], annotations['k'], spec.nodeName, spec.serviceAccountName,
// status.hostIP(s), status.podIP(s)), configMapKeyRef, secretKeyRef, and envFrom
// ConfigMaps and Secrets. It returns the variables in order and as a map.
func ContainerEnv(pod *corev1.Pod, c *corev1.Container, src EnvSource) ([]string, map[string]string, error) {
	vars := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
	}
	for _, from := range c.EnvFrom {
		var (
			kind, name string
			optional   *bool
		)
		switch {
		case from.ConfigMapRef != nil:
			kind, name, optional = "ConfigMap", from.ConfigMapRef.Name, from.ConfigMapRef.Optional
		case from.SecretRef != nil:
			kind, name, optional = "Secret", from.SecretRef.Name, from.SecretRef.Optional
		default:
			return nil, nil, fmt.Errorf("container %s: unsupported envFrom source", c.Name)
		}
		data, err := src(kind, name)
		if err != nil {
			if optional != nil && *optional {
				continue
			}
			return nil, nil, fmt.Errorf("container %s: envFrom %s %s: %w", c.Name, kind, name, err)
		}
		for k, v := range data {
			set(from.Prefix+k, v)
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, expand(e.Value, vars))
			continue
		}
		v, ok, err := valueFrom(pod, e.ValueFrom, src)
		if err != nil {
			return nil, nil, fmt.Errorf("container %s: env %s: %w", c.Name, e.Name, err)
		}
		if ok {
			set(e.Name, v)
		}
	}
	env := make([]string, 0, len(order))
	for _, k := range order {
		env = append(env, k+"="+vars[k])
	}
	return env, vars, nil
}

// valueFrom resolves one env source; ok is false for a missing optional key.
func valueFrom(pod *corev1.Pod, from *corev1.EnvVarSource, src EnvSource) (value string, ok bool, err error) {
	var (
		kind, name, key string
		optional        *bool
	)
	switch {
	case from.FieldRef != nil:
		v, err := fieldValue(pod, from.FieldRef.FieldPath)
		return v, err == nil, err
	case from.ConfigMapKeyRef != nil:
		r := from.ConfigMapKeyRef
		kind, name, key, optional = "ConfigMap", r.Name, r.Key, r.Optional
	case from.SecretKeyRef != nil:
		r := from.SecretKeyRef
		kind, name, key, optional = "Secret", r.Name, r.Key, r.Optional
	default:
		return "", false, fmt.Errorf("unsupported valueFrom (only fieldRef, configMapKeyRef and secretKeyRef run on the host)")
	}
	isOptional := optional != nil && *optional
	data, err := src(kind, name)
	if err != nil {
		if isOptional {
			return "", false, nil
		}
		return "", false, fmt.Errorf("%s %s: %w", kind, name, err)
	}
	v, found := data[key]
	if !found {
		if isOptional {
			return "", false, nil
		}
		return "", false, fmt.Errorf("%s %s has no key %q", kind, name, key)
	}
	return v, true, nil
}

// fieldValue is the downward-API value of a pod field.
func fieldValue(pod *corev1.Pod, path string) (string, error) {
	if k, ok := subscript(path, "metadata.labels"); ok {
		return pod.Labels[k], nil
	}
	if k, ok := subscript(path, "metadata.annotations"); ok {
		return pod.Annotations[k], nil
	}
	ips := func(list []string) string { return strings.Join(list, ",") }
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP":
		return pod.Status.HostIP, nil
	case "status.podIP":
		return pod.Status.PodIP, nil
	case "status.hostIPs":
		var l []string
		for _, ip := range pod.Status.HostIPs {
			l = append(l, ip.IP)
		}
		return ips(l), nil
	case "status.podIPs":
		var l []string
		for _, ip := range pod.Status.PodIPs {
			l = append(l, ip.IP)
		}
		return ips(l), nil
	}
	return "", fmt.Errorf("unsupported fieldRef %q", path)
}

// subscript parses PREFIX['key'].
func subscript(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"['")
	if !ok || !strings.HasSuffix(rest, "']") {
		return "", false
	}
	return strings.TrimSuffix(rest, "']"), true
}

// expand replaces $(VAR) with the value of VAR when vars defines it and leaves it
// as is otherwise; $$ escapes a dollar sign (Kubernetes' expansion rules).
func expand(s string, vars map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// ProcessEnv is the complete environment of a host-executed container: PATH (and
// TMPDIR if set) from the host, HOME and HOSTNAME as in a pod (HOME is the pod's work
// directory), the container's variables, then KUBECONFIG pointing at the sandbox's
// kubeconfig so the program reaches the API server from the host. A KUBECONFIG the
// container sets is overridden: its path would only exist inside an image.
func ProcessEnv(podName, home, kubeconfig string, containerEnv []string) []string {
	env := []string{"PATH=" + hostPath(), "HOME=" + home, "HOSTNAME=" + podName}
	if tmp := os.Getenv("TMPDIR"); tmp != "" {
		env = append(env, "TMPDIR="+tmp)
	}
	env = append(env, containerEnv...)
	if kubeconfig != "" {
		env = append(env, "KUBECONFIG="+kubeconfig)
	}
	return env
}

// WithGOGC is env with GOGC=gogc first, unless gogc is empty or env sets GOGC
// (a container's own setting wins). Tests run the host-executed programs (the
// strategy dumps, KubeVirt's own operators) at the sandbox components' GOGC:
// on two cores the collector's CPU is the suite's wall time.
func WithGOGC(env []string, gogc string) []string {
	if gogc == "" || slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "GOGC=") }) {
		return env
	}
	return append([]string{"GOGC=" + gogc}, env...)
}

func hostPath() string {
	if p := os.Getenv("PATH"); p != "" {
		return p
	}
	return "/usr/local/bin:/usr/bin:/bin"
}
