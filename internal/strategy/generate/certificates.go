package generate

import (
	corev1 "k8s.io/api/core/v1"
)

// caSecrets sign the certificates of the components.
var caSecrets = []string{secretCA, secretExportCA, secretBackupCA}

// serviceCertSecrets are the serving and client certificates of the components.
var serviceCertSecrets = []string{
	secretAPICerts,
	secretControllerCerts,
	secretExportProxyCerts,
	secretHandlerServerCerts,
	secretHandlerMigrationCerts,
	secretHandlerVsockCerts,
	secretHandlerMonitoringCerts,
	secretHandlerCerts,
	secretSyncCtrlCerts,
	secretSyncCtrlServerCerts,
	secretOperatorCerts,
}

// caConfigMaps publish the CA bundles (data key ca-bundle, filled at apply time);
// kubevirt-external-ca is for the admin's own CA and is never overwritten.
var caConfigMaps = []string{secretCA, secretExportCA, secretBackupCA, configMapExternalCA}

// certificates are shells: the operator issues and rotates the key material at
// apply time. A kubernetes.io/tls Secret must have the tls.crt and tls.key keys,
// so they are present and empty.
func (b *builder) certificates() {
	for _, name := range append(append([]string(nil), caSecrets...), serviceCertSecrets...) {
		b.add(&corev1.Secret{
			ObjectMeta: meta(name, b.ns, nil),
			Type:       corev1.SecretTypeTLS,
			Data:       map[string][]byte{corev1.TLSCertKey: {}, corev1.TLSPrivateKeyKey: {}},
		})
	}
	for _, name := range caConfigMaps {
		b.add(&corev1.ConfigMap{ObjectMeta: meta(name, b.ns, nil)})
	}
}
