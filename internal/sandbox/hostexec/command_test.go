package hostexec

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

func TestPrograms(t *testing.T) {
	p := Programs{Default: "/bin/virt-operator", Images: map[string]string{
		"example.io/tool:v2":  "/opt/tool-v2",
		"example.io/tool":     "/opt/tool",
		"localhost:5000/fake": "/opt/fake",
	}}
	for image, want := range map[string]string{
		"quay.io/kubevirt/virt-operator:v1.5.0": "/bin/virt-operator",
		"example.io/tool:v2":                    "/opt/tool-v2",
		"example.io/tool:v3":                    "/opt/tool",
		"example.io/tool@sha256:abc":            "/opt/tool",
		"localhost:5000/fake:latest":            "/opt/fake",
	} {
		got, mapped, err := p.Program(image)
		if err != nil || got != want || mapped != (want != p.Default) {
			t.Errorf("%s: %q (mapped %v) %v, want %q", image, got, mapped, err, want)
		}
	}
	if _, _, err := (Programs{}).Program("x"); err == nil {
		t.Error("no program and no default: no error")
	}
}

func TestArgv(t *testing.T) {
	env := map[string]string{"NS": "kubevirt"}
	for _, tc := range []struct {
		command, args, want []string
	}{
		{nil, []string{"dump-install-strategy"}, []string{"/b/virt-operator", "dump-install-strategy"}},
		{[]string{"virt-operator", "--port", "8443"}, []string{"--dump"}, []string{"/b/virt-operator", "--port", "8443", "--dump"}},
		{[]string{"/usr/bin/virt-operator"}, nil, []string{"/b/virt-operator"}},
		{[]string{"sh", "-c", "echo $(NS)"}, []string{"$$(NS)", "$(MISSING)"}, []string{"sh", "-c", "echo kubevirt", "$(NS)", "$(MISSING)"}},
	} {
		c := &corev1.Container{Command: tc.command, Args: tc.args}
		if got := Argv(c, "/b/virt-operator", env); !slices.Equal(got, tc.want) {
			t.Errorf("command %q args %q: %q, want %q", tc.command, tc.args, got, tc.want)
		}
	}
}

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "1", "B": "two"}
	for in, want := range map[string]string{
		"plain":        "plain",
		"$(A)-$(B)":    "1-two",
		"$$(A)":        "$(A)",
		"$(C)":         "$(C)",
		"$(A":          "$(A",
		"cost $5 $":    "cost $5 $",
		"x$(A)$(A)$$y": "x11$y",
	} {
		if got := expand(in, vars); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestContainerEnv(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "dumper", Namespace: "kubevirt", UID: "u1",
			Labels: map[string]string{"app": "x"}, Annotations: map[string]string{"a/b": "c"}},
		Spec:   corev1.PodSpec{NodeName: "node-000", ServiceAccountName: "sa"},
		Status: corev1.PodStatus{PodIP: "10.0.0.9", HostIP: "10.255.0.1", PodIPs: []corev1.PodIP{{IP: "10.0.0.9"}, {IP: "fd00::9"}}},
	}
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
	}
	src := func(kind, name string) (map[string]string, error) {
		switch kind + "/" + name {
		case "ConfigMap/cm":
			return map[string]string{"k": "from-cm", "shared": "cm"}, nil
		case "Secret/s":
			return map[string]string{"password": "hunter2"}, nil
		}
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: kind}, name)
	}
	c := &corev1.Container{
		Name: "main",
		EnvFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}, Prefix: "CM_"},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}, Optional: ptr.To(true)}},
		},
		Env: []corev1.EnvVar{
			{Name: "TARGET_DEPLOYMENT_CONFIG", Value: `{"id":"x"}`},
			{Name: "POD_NAMESPACE", ValueFrom: field("metadata.namespace")},
			{Name: "POD_NAME", ValueFrom: field("metadata.name")},
			{Name: "UID", ValueFrom: field("metadata.uid")},
			{Name: "APP", ValueFrom: field("metadata.labels['app']")},
			{Name: "ANN", ValueFrom: field("metadata.annotations['a/b']")},
			{Name: "NODE", ValueFrom: field("spec.nodeName")},
			{Name: "SA", ValueFrom: field("spec.serviceAccountName")},
			{Name: "IP", ValueFrom: field("status.podIP")},
			{Name: "IPS", ValueFrom: field("status.podIPs")},
			{Name: "HOST", ValueFrom: field("status.hostIP")},
			{Name: "K", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "k"}}},
			{Name: "PW", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "password"}}},
			{Name: "OPT", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "nope", Optional: ptr.To(true)}}},
			{Name: "REF", Value: "$(POD_NAMESPACE)/$(POD_NAME)"},
			{Name: "CM_shared", Value: "overridden"},
		},
	}
	env, vars, err := ContainerEnv(pod, c, src)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"CM_k": "from-cm", "CM_shared": "overridden", "TARGET_DEPLOYMENT_CONFIG": `{"id":"x"}`,
		"POD_NAMESPACE": "kubevirt", "POD_NAME": "dumper", "UID": "u1", "APP": "x", "ANN": "c",
		"NODE": "node-000", "SA": "sa", "IP": "10.0.0.9", "IPS": "10.0.0.9,fd00::9", "HOST": "10.255.0.1",
		"K": "from-cm", "PW": "hunter2", "REF": "kubevirt/dumper",
	}
	if len(vars) != len(want) {
		t.Errorf("vars %v, want %v", vars, want)
	}
	for k, v := range want {
		if vars[k] != v {
			t.Errorf("%s=%q, want %q", k, vars[k], v)
		}
	}
	if len(env) != len(want) || !slices.Contains(env, "REF=kubevirt/dumper") {
		t.Errorf("env %q", env)
	}

	for name, bad := range map[string]corev1.EnvVar{
		"unsupported field": {Name: "X", ValueFrom: field("status.phase")},
		"missing cm":        {Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Key: "k"}}},
		"missing key":       {Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}},
		"resource field":    {Name: "X", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}},
	} {
		_, _, err := ContainerEnv(pod, &corev1.Container{Name: "main", Env: []corev1.EnvVar{bad}}, src)
		if err == nil || !strings.Contains(err.Error(), "env X") {
			t.Errorf("%s: error %v", name, err)
		}
	}
}

func TestWithGOGC(t *testing.T) {
	for _, c := range []struct {
		name string
		env  []string
		gogc string
		want []string
	}{
		{"none asked", []string{"A=1"}, "", []string{"A=1"}},
		{"asked", []string{"A=1"}, "400", []string{"GOGC=400", "A=1"}},
		{"the container's own wins", []string{"GOGC=50", "A=1"}, "400", []string{"GOGC=50", "A=1"}},
		{"a look-alike is not GOGC", []string{"GOGCX=1"}, "400", []string{"GOGC=400", "GOGCX=1"}},
	} {
		if got := WithGOGC(slices.Clone(c.env), c.gogc); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestProcessEnv(t *testing.T) {
	t.Setenv("PATH", "/host/bin")
	t.Setenv("TMPDIR", "")
	env := ProcessEnv("dumper", "/sb/hostexec/ns-dumper", "/sb/kubeconfig", []string{"A=1", "KUBECONFIG=/in/image"})
	want := []string{"PATH=/host/bin", "HOME=/sb/hostexec/ns-dumper", "HOSTNAME=dumper", "A=1", "KUBECONFIG=/in/image", "KUBECONFIG=/sb/kubeconfig"}
	if !slices.Equal(env, want) {
		t.Errorf("env %q, want %q (exec keeps the last KUBECONFIG)", env, want)
	}
}
