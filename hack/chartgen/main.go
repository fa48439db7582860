// Command chartgen writes charts/virt-operator, the operator's Helm chart, from
// config/: the objects of config/default (kustomize's resources, read as they are:
// config/ has no transformer, and chartgen refuses a kustomization that has one)
// and of config/prometheus, as templates whose image, namespace, replicas,
// resources, placement and monitoring come from the chart's values. With its
// default values the chart renders exactly what `kubectl apply -k config/default`
// installs, plus Helm's own marks: the resource policy that keeps the KubeVirt
// CRD, the namespace and the PriorityClass on `helm uninstall`, and
// app.kubernetes.io/managed-by: Helm for kustomize. config/ stays the one source;
// `make generate` runs this command and `make verify-generate` checks its output
// is committed. The chart's hand-written parts (Chart.yaml, the values file and
// its schema, the helpers and notes) live in hack/chartgen/chart.
//
// Usage: go run ./hack/chartgen [-config config] [-out charts/virt-operator]
//
// The output directory is written whole: a file there that chartgen does not
// write is removed.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	config := flag.String("config", "config", "the config/ directory (kustomize bases)")
	out := flag.String("out", "charts/virt-operator", "the chart directory to write")
	flag.Parse()
	files, err := Generate(*config)
	if err == nil {
		err = WriteDir(*out, files)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chartgen:", err)
		os.Exit(1)
	}
}
