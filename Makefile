# virt-operator: everything a step needs is installed by the step itself.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c

ROOT         := $(CURDIR)
CACHE        := $(ROOT)/.cache
TOOLS        := $(CACHE)/tools
export CLUSTER_BINS ?= $(CACHE)/cluster-bins
CONTROLLER_GEN := $(TOOLS)/controller-gen
GOLANGCI_LINT  := $(TOOLS)/golangci-lint
HELM           := $(TOOLS)/helm
SANDBOX_DIR  ?= $(ROOT)/_sandbox
NODES        ?= 3
# make run: VMs created once KubeVirt is Deployed, how many of them cannot live-migrate,
# and the upgrade it then shows them moving through (UPGRADE_TO= for none).
VMS            ?= 6
NON_MIGRATABLE ?= 2
UPGRADE_TO     ?= v1.9.0
# make run: LOG=1 shows the operator's log in the terminal instead of
# $(SANDBOX_DIR)/logs/virt-operator.log.
LOG            ?=
GO_TEST_FLAGS ?=
# Builds and tests leave the clone's absolute path out (-trimpath), so that a
# clone anywhere on the machine finds Go's build and test caches warm: with the
# path in every compile's key, a fresh clone in a new directory compiled
# everything again and ran every unit test again.
export GOFLAGS := -trimpath $(GOFLAGS)

.PHONY: all build generate verify-generate tools cluster-bins vet lint docs-check chart-check test test-checks test-unit test-integration test-e2e run bench clean

all: build

# The operator (what the image ships) and the development sandbox (virt-sandbox:
# make run, the e2e tests' clusters), which runs the operator binary beside it.
build:
	go build -o bin/ ./cmd/virt-operator ./cmd/virt-sandbox

# The tools are built by hack/tool-bin.sh, or taken from the machine's shared cache.
$(CONTROLLER_GEN): hack/tools/go.mod hack/tools/go.sum
	hack/tool-bin.sh $@ hack/tools sigs.k8s.io/controller-tools/cmd/controller-gen

$(GOLANGCI_LINT): hack/tools/go.mod hack/tools/go.sum
	hack/tool-bin.sh $@ hack/tools github.com/golangci/golangci-lint/v2/cmd/golangci-lint

# Helm is pinned in a module of its own (hack/tools/helm), so its dependencies move
# no version the other tools are built with; its version is stamped as a release
# build's would be.
$(HELM): hack/tools/helm/go.mod hack/tools/helm/go.sum
	hack/tool-bin.sh $@ hack/tools/helm helm.sh/helm/v4/cmd/helm "-X helm.sh/helm/v4/internal/version.version=$$(cd hack/tools/helm && go list -m -f '{{.Version}}' helm.sh/helm/v4)"

tools: $(CONTROLLER_GEN) $(GOLANGCI_LINT) $(HELM)

MONITORING_CRDS := test/e2e/testdata/monitoring-crds

# Deepcopy functions and CRD manifests come from the API types; both are committed.
# The ServiceMonitor and PrometheusRule CRDs the e2e tests install come from the
# prometheus-operator API module's types.
generate: $(CONTROLLER_GEN)
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	$(CONTROLLER_GEN) crd:allowDangerousTypes=true paths=./api/... output:crd:dir=config/crd/bases
	@# The VM kinds' CRDs are the install strategy's (internal/release, from kubevirt.io/api):
	@# api/v1 types only what the operator reads of them.
	rm -f config/crd/bases/kubevirt.io_virtualmachine*.yaml
	hack/kubevirt-api/schemas.sh $(CONTROLLER_GEN)
	go run ./hack/rbacgen > internal/operator/zz_generated.rbac.go
	$(CONTROLLER_GEN) rbac:roleName=virt-operator paths=./internal/... output:rbac:dir=config/rbac
	$(CONTROLLER_GEN) crd:maxDescLen=0 paths=github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1 output:crd:dir=$(MONITORING_CRDS)
	find $(MONITORING_CRDS) -name '*.yaml' ! -name '*_servicemonitors.yaml' ! -name '*_prometheusrules.yaml' -delete
	@# The Helm chart is config/default (and config/prometheus) as templates: last,
	@# once the CRD and role.yaml above are written.
	go run ./hack/chartgen -config config -out charts/virt-operator

# Fails when the committed generated files differ from what `make generate` writes.
verify-generate: generate
	@git diff --exit-code -- api config/crd config/rbac/role.yaml internal/operator/zz_generated.rbac.go $(MONITORING_CRDS) internal/release/data charts || { echo "generated files are stale: run make generate and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- config/crd internal/release/data charts)" || { echo "generated files are not committed: run make generate and commit"; exit 1; }

cluster-bins:
	hack/cluster-bins.sh

vet:
	go vet ./...

# Another clone's lint on the machine holds golangci-lint's lock: wait for it
# (without the flag the second run fails at once).
lint: $(GOLANGCI_LINT)
	$(GOLANGCI_LINT) run --allow-serial-runners ./...

test-unit:
	go test $(GO_TEST_FLAGS) -timeout 20m ./api/... ./config/... ./internal/... ./cmd/... ./hack/...

# The test processes, and the API servers and sandboxes they start, collect
# garbage at GOGC=400 (see TEST_GOGC): the tests assert behaviour, not memory,
# and on two cores the collector's CPU was half of what the e2e phase spent.
TEST_GOGC    ?= 400
E2E_PACKAGES ?= 2
E2E_TESTS    ?= 3

test-integration: cluster-bins
	GOGC=$(TEST_GOGC) go test $(GO_TEST_FLAGS) -timeout 20m ./test/integration/...

# E2E_PACKAGES packages at a time, and in each E2E_TESTS tests at a time
# (t.Parallel, each on its own sandbox). Measured on two cores, the e2e phase
# alone: two and two, 848 s with the cores 83% busy; then, with the API
# servers' load cut (the canary tests' polls, twenty lists a second, became
# watches; responses are no longer gzipped), two and three, 731 s at 89% (the
# install package 845 s → 690 s). Before that cut three at a time bought
# nothing, and four and four ran tests out of their deadlines.
# Three packages at a time is slower: a fresh-clone run took 934 s against 867
# and 911 at two, the install package, the long pole, 897 s against 816.
# go test starts the packages in the order named (each once): the two longest
# (E2E_FIRST) first, so neither waits for the alphabet and the short ones fill
# in beside them. In alphabetical order the install package, the long pole,
# started 163 s in, behind delegation and fidelity.
# The tests run the binaries make build wrote (else each test process builds its
# own).
E2E_FIRST := ./test/e2e/install ./test/e2e/fidelity
test-e2e: cluster-bins build $(HELM)
	GOGC=$(TEST_GOGC) VIRT_OPERATOR_TEST_BINARIES=$(ROOT)/bin VIRT_OPERATOR_TEST_HELM=$(HELM) go test $(GO_TEST_FLAGS) -timeout 40m -p $(E2E_PACKAGES) -parallel $(E2E_TESTS) $(E2E_FIRST) ./test/e2e/...

# helm lint of charts/virt-operator, and helm template against kustomize's build of
# config/default, with the default values and with every value changed, and the
# values schema refusing bad values (hack/tools/helm/chart_test.go): seconds.
chart-check: $(HELM)
	cd hack/tools/helm && HELM=$(HELM) go test $(GO_TEST_FLAGS) ./...

# Every relative link and #anchor of the tracked Markdown files resolves (hack/mdlinks).
docs-check:
	go run ./hack/mdlinks

# The checks that read or write the tree's generated files first (verify-generate
# rewrites them, and the end-to-end tests read the CRDs and RBAC it writes), and
# the cluster binaries and tools every later step shares; then the end-to-end
# tier beside the rest, one step at a time (test-checks). The end-to-end tier
# mostly waits on its sandboxes: in a run of it alone on two cores, a sixth of
# the CPU was idle, and the lint, unit and integration steps (four to five
# minutes in a row before it) fit into that.
test: docs-check verify-generate chart-check cluster-bins tools build
	$(MAKE) --no-print-directory -j2 test-e2e test-checks

# The steps of make test that run beside the end-to-end tier, in order.
test-checks:
	$(MAKE) --no-print-directory -j1 vet lint test-unit test-integration

# Brings up a sandbox cluster, runs the operator in the foreground against it and
# applies the sample KubeVirt CR; Ctrl-C tears everything down. The terminal shows
# the progress; the operator's log goes to a file (LOG=1: to the terminal).
run: cluster-bins build
	bin/virt-sandbox run --dir $(SANDBOX_DIR) --nodes $(NODES) --sample config/samples/kubevirt.yaml \
		--vms $(VMS) --non-migratable $(NON_MIGRATABLE) --demo-upgrade "$(UPGRADE_TO)" $(if $(filter-out 0,$(LOG)),--log-to-terminal)

# Go benchmarks of the pure code, then the operator on sandboxes: its lifecycle on
# 3 nodes (install, upgrade, uninstall, peak memory), the virt-handler canary on 200
# nodes next to plain DaemonSet updates, the workload update of 1000 VMIs on 20
# nodes next to its bound, and the scale scenario (1000 nodes, 10,000 VMIs: every
# phase's time, CPU, memory and API requests). BENCHMARKS.md is written from them.
BENCH_DIR := $(CACHE)/bench
bench: cluster-bins build
	mkdir -p $(BENCH_DIR) && rm -f $(BENCH_DIR)/scale.md
	go test -run '^$$' -bench . -benchmem ./internal/... | tee $(BENCH_DIR)/unit.txt
	VIRT_OPERATOR_TEST_BINARIES=$(ROOT)/bin BENCH_REPORT_DIR=$(BENCH_DIR) go test -run '^$$' -bench 'Lifecycle|HandlerCanary200|WorkloadUpdate1000|Scale1000' -benchtime 1x -timeout 90m ./test/e2e/install/ | tee $(BENCH_DIR)/e2e.txt
	go run ./hack/benchmd -out BENCHMARKS.md $(BENCH_DIR)/unit.txt $(BENCH_DIR)/e2e.txt $(BENCH_DIR)/scale.md

clean:
	rm -rf bin $(SANDBOX_DIR)
