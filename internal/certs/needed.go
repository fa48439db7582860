package certs

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Needed is the set of certificate Secrets and CA ConfigMaps to keep valid,
// as shells (metadata, no data) for Fill: every one wanted (the shells of the
// deployments involved, stamped as their deployment writes them), and every
// one of namespace that exists and that the operator issues, so that a
// component still running keeps its certificates whatever the deployments
// say; a leaf's CA, and a CA's bundle, are added when neither is there. A
// wanted shell wins over a live one of the same name. deleting: the install
// is being uninstalled, so nothing is wanted any more and only what exists is
// kept valid (never created again).
func Needed(namespace string, wantedSecrets []*corev1.Secret, wantedConfigMaps []*corev1.ConfigMap,
	liveSecrets []corev1.Secret, liveConfigMaps []corev1.ConfigMap, deleting bool) ([]*corev1.Secret, []*corev1.ConfigMap) {
	secrets := map[string]*corev1.Secret{}
	configMaps := map[string]*corev1.ConfigMap{}
	if !deleting {
		for _, s := range wantedSecrets {
			if _, ok := ProfileFor(s.Name, s.Namespace); ok && s.Type == corev1.SecretTypeTLS && s.Namespace == namespace {
				secrets[s.Name] = s
			}
		}
		for _, cm := range wantedConfigMaps {
			if IsBundleName(cm.Name) && cm.Namespace == namespace {
				configMaps[cm.Name] = cm
			}
		}
	}
	for i := range liveSecrets {
		live := &liveSecrets[i]
		if _, ok := ProfileFor(live.Name, live.Namespace); !ok || live.Type != corev1.SecretTypeTLS || live.Namespace != namespace ||
			live.DeletionTimestamp != nil || secrets[live.Name] != nil {
			continue
		}
		secrets[live.Name] = &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: shellMeta(&live.ObjectMeta), Type: corev1.SecretTypeTLS}
	}
	for i := range liveConfigMaps {
		live := &liveConfigMaps[i]
		if !IsBundleName(live.Name) || live.Namespace != namespace || live.DeletionTimestamp != nil || configMaps[live.Name] != nil {
			continue
		}
		configMaps[live.Name] = &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: shellMeta(&live.ObjectMeta)}
	}
	if deleting {
		return sorted(secrets), sorted(configMaps)
	}
	// A leaf needs its CA, and a CA its bundle: shells for those that neither
	// the deployments nor the cluster hold (deleted by hand), with the
	// leaf's stamps.
	for _, s := range sorted(secrets) {
		prof, _ := ProfileFor(s.Name, s.Namespace)
		if prof.CA != "" && secrets[prof.CA] == nil {
			secrets[prof.CA] = &corev1.Secret{TypeMeta: s.TypeMeta, ObjectMeta: shellMeta(&metav1.ObjectMeta{Name: prof.CA, Namespace: namespace, Labels: s.Labels}), Type: corev1.SecretTypeTLS}
		}
	}
	for _, s := range sorted(secrets) {
		if IsCAName(s.Name) && configMaps[s.Name] == nil {
			configMaps[s.Name] = &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
				ObjectMeta: shellMeta(&metav1.ObjectMeta{Name: s.Name, Namespace: namespace, Labels: s.Labels})}
		}
	}
	return sorted(secrets), sorted(configMaps)
}

// IsBundleName: the ConfigMap of that name holds a CA bundle the operator
// writes (a CA's, or kubevirt-external-ca, which it empties into kubevirt-ca's).
func IsBundleName(name string) bool { return IsCAName(name) || name == ConfigMapExternalCA }

// IsCertificateObject: obj is a certificate Secret or CA bundle ConfigMap the
// certificate controller writes, by name; no other writer touches it.
func IsCertificateObject(kind, name, namespace string) bool {
	switch kind {
	case "Secret":
		_, ok := ProfileFor(name, namespace)
		return ok
	case "ConfigMap":
		return IsBundleName(name)
	}
	return false
}

// shellMeta is the identity and stamps of an object, for a shell.
func shellMeta(m *metav1.ObjectMeta) metav1.ObjectMeta {
	out := metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace}
	if len(m.Labels) > 0 {
		out.Labels = map[string]string{}
		for k, v := range m.Labels {
			out.Labels[k] = v
		}
	}
	if len(m.Annotations) > 0 {
		out.Annotations = map[string]string{}
		for k, v := range m.Annotations {
			out.Annotations[k] = v
		}
	}
	return out
}

func sorted[T interface{ GetName() string }](m map[string]T) []T {
	out := make([]T, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out
}
