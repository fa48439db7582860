// Package argocd ships the Argo CD health check for the KubeVirt CR: health.lua,
// and argocd-cm.yaml, the same script as a patch of Argo CD's argocd-cm.
package argocd

import _ "embed"

// HealthLua is the health check script.
//
//go:embed health.lua
var HealthLua string

// ConfigMapPatch is the argocd-cm patch that installs it.
//
//go:embed argocd-cm.yaml
var ConfigMapPatch string
