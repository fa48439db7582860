// Package prometheus embeds config/prometheus, the optional manifests that have
// Prometheus scrape the operator's authenticated /metrics, so tests check them.
package prometheus

import _ "embed"

// Monitor is monitor.yaml: the Service, the ServiceMonitor and the reader binding.
//
//go:embed monitor.yaml
var Monitor []byte
