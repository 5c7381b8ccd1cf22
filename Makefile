# Courier's build. Tool versions come from hack/tools/go.mod; each tool is
# built into bin/ under a versioned name, so a second run builds nothing.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

ROOT := $(abspath .)
BIN := $(ROOT)/bin
TOOLS_DIR := $(ROOT)/hack/tools

# tool-version reads a module's version from the tools module's go.mod.
tool-version = $(shell awk '$$1 == "$(1)" { print $$2; exit }' $(TOOLS_DIR)/go.mod)
K8S_VERSION := $(call tool-version,k8s.io/kubernetes)
ETCD_VERSION := $(call tool-version,go.etcd.io/etcd/server/v3)
CONTROLLER_TOOLS_VERSION := $(call tool-version,sigs.k8s.io/controller-tools)
STATICCHECK_VERSION := $(call tool-version,honnef.co/go/tools)
KWOK_VERSION := $(call tool-version,sigs.k8s.io/kwok)
KUEUE_VERSION := $(call tool-version,sigs.k8s.io/kueue)
TRAINER_VERSION := $(call tool-version,github.com/kubeflow/trainer/v2)
JOBSET_VERSION := $(call tool-version,sigs.k8s.io/jobset)
# Helm has a module of its own: it follows a newer Kubernetes client.
HELM_TOOLS_DIR := $(TOOLS_DIR)/helm
HELM_VERSION := $(shell awk '$$1 == "require" && $$2 == "helm.sh/helm/v4" { print $$3; exit }' $(HELM_TOOLS_DIR)/go.mod)
# So has kustomize, to leave the other tools' pins alone.
KUSTOMIZE_TOOLS_DIR := $(TOOLS_DIR)/kustomize
KUSTOMIZE_VERSION := $(shell awk '$$1 == "require" && $$2 == "sigs.k8s.io/kustomize/kustomize/v5" { print $$3; exit }' $(KUSTOMIZE_TOOLS_DIR)/go.mod)

# Kueue's scheduler-library is not in the public checksum database.
export GONOSUMDB := sigs.k8s.io/scheduler-library

CONTROLLER_GEN := $(BIN)/controller-gen
STATICCHECK := $(BIN)/staticcheck

# KUBEBUILDER_ASSETS is where the integration tests find etcd and kube-apiserver.
KUBEBUILDER_ASSETS ?= $(BIN)
export KUBEBUILDER_ASSETS

# Kubernetes binaries report the version stamped here; Kueue refuses to run
# against an API server that reports none.
K8S_MINOR := $(word 2,$(subst ., ,$(K8S_VERSION)))
K8S_LDFLAGS := -X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 \
	-X k8s.io/component-base/version.gitMinor=$(K8S_MINOR) \
	-X k8s.io/component-base/version.gitTreeState=clean \
	-X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z

# tools/ is a module of its own: the local clusters, the benchmarks and the
# soak, apart from the product.
LAB_DIR := $(ROOT)/tools
GO_DIRS := api cmd pkg test hack tools

# The version and revision Courier's binaries report (pkg/version): the
# nearest v* tag, else v0.0.0-dev, and the commit, "-dirty" with changes.
VERSION ?= $(shell git describe --tags --match 'v*' --dirty 2>/dev/null || echo v0.0.0-dev)
REVISION := $(shell git rev-parse HEAD 2>/dev/null)$(shell git diff --quiet HEAD 2>/dev/null || echo -dirty)
VERSION_PKG := github.com/courierdev/courier/pkg/version
GO_LDFLAGS := -X $(VERSION_PKG).version=$(VERSION) -X $(VERSION_PKG).revision=$(REVISION)
GO_TEST_FLAGS ?=
# The cluster-inventory API's reference credential plugin, which Courier's
# image carries at /plugins/secretreader, at the version go.mod pins.
SECRETREADER_PKG := sigs.k8s.io/cluster-inventory-api/plugins/secretreader/cmd/plugin
# test/manifests renders the charts and config/ with bin/helm and
# bin/kustomize, and dry-runs them against kube-apiserver.
INTEGRATION_PACKAGES := ./test/integration/... ./test/manifests/...
# test/release checks what `make release` wrote; alone it builds a release
# first, for every platform, which `make release` already does.
UNIT_PACKAGES = $(shell go list ./... | grep -v -e /test/integration -e /test/manifests -e /test/release -e /e2e)

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} \
		/^[a-zA-Z0-9_-]+:.*?##/ { printf "  %-18s %s\n", $$1, $$2 } \
		/^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

LOCAL_DIR := $(ROOT)/_output/local
E2E_DIR := $(ROOT)/_output/e2e
COURIER_LOCAL := $(BIN)/courier-local
COURIER_BENCH := $(BIN)/courier-bench

.PHONY: demo
demo: e2e-binaries build ## Run Courier's main job: a manager and 2 workers with real Kueue, Trainer and JobSet, and a TrainJob dispatched across them.
	@$(COURIER_LOCAL) status --dir $(LOCAL_DIR) | grep -q "^Clusters:" || $(COURIER_LOCAL) up --dir $(LOCAL_DIR) --bin $(BIN)
	$(COURIER_LOCAL) demo --dir $(LOCAL_DIR) --bin $(BIN)

.PHONY: demo-down
demo-down: ## Stop the demo's clusters and processes.
	$(COURIER_LOCAL) down --dir $(LOCAL_DIR) --bin $(BIN)

##@ Development

.PHONY: build
build: ## Build bin/courier, bin/courier-fence, bin/secretreader, bin/courier-local and bin/kubectl-courier, stamped with VERSION.
	go build -ldflags "$(GO_LDFLAGS)" -o $(BIN)/courier ./cmd/courier
	go build -ldflags "$(GO_LDFLAGS)" -o $(BIN)/courier-fence ./cmd/courier-fence
	go build -o $(BIN)/secretreader $(SECRETREADER_PKG)
	cd $(LAB_DIR) && go build -o $(BIN)/courier-local ./cmd/courier-local
	go build -ldflags "$(GO_LDFLAGS)" -o $(BIN)/kubectl-courier ./cmd/kubectl-courier

.PHONY: build-bench
build-bench: ## Build bin/courier-bench, which runs the benchmarks and the soak.
	cd $(LAB_DIR) && go build -o $(COURIER_BENCH) ./cmd/courier-bench

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs and RBAC, the charts' copies of them and of config/worker, and the charts' READMEs.
	$(CONTROLLER_GEN) crd:generateEmbeddedObjectMeta=true rbac:roleName=manager-role paths=./api/v1alpha1/... paths=./pkg/... \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	@# The chart renders verbatim copies (templates/crds.yaml, templates/rbac.yaml,
	@# templates/user-roles.yaml, templates/monitoring.yaml), naming them after the release.
	rm -rf charts/courier/files/crds charts/courier/files/rbac charts/courier/files/prometheus
	mkdir -p charts/courier/files/crds charts/courier/files/rbac charts/courier/files/prometheus
	cp config/crd/bases/*.yaml charts/courier/files/crds/
	cp config/rbac/role.yaml config/rbac/*_viewer_role.yaml config/rbac/*_editor_role.yaml charts/courier/files/rbac/
	cp config/components/prometheus/courier-dashboard.json config/components/prometheus/courier-alerts.yaml charts/courier/files/prometheus/
	@# The worker chart renders config/worker's objects from verbatim copies.
	rm -rf charts/courier-worker/files
	mkdir -p charts/courier-worker/files
	cp config/worker/rbac.yaml config/worker/rbac-namespaced.yaml config/worker/fence.yaml charts/courier-worker/files/
	@# A chart's README documents every value from values.schema.json.
	go run ./hack/chartreadme --chart charts/courier
	go run ./hack/chartreadme --chart charts/courier-worker

.PHONY: fmt
fmt: ## Format the code.
	gofmt -s -w $(GO_DIRS)

.PHONY: vet
vet: ## Run go vet.
	go vet ./...
	cd $(LAB_DIR) && go vet ./...

.PHONY: lint
lint: $(STATICCHECK) ## Run gofmt, go vet and staticcheck.
	@unformatted=$$(gofmt -s -l $(GO_DIRS)); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	go vet ./...
	cd $(LAB_DIR) && go vet ./...
	$(STATICCHECK) ./...
	cd $(LAB_DIR) && $(STATICCHECK) ./...

.PHONY: verify
verify: generate manifests lint ## Regenerate, lint, and fail if generated files differ from the tree.
	@git diff --exit-code -- api config charts || { echo "Generated files are stale: run 'make generate manifests' and commit."; exit 1; }
	@untracked=$$(git ls-files --others --exclude-standard -- api config charts); \
	if [ -n "$$untracked" ]; then echo "Generated files are not committed:"; echo "$$untracked"; exit 1; fi

##@ Release

RELEASE_DIR ?= $(ROOT)/_output/release/$(VERSION)
IMAGE_REPOSITORY ?= courier
export IMAGE_REPOSITORY

.PHONY: release
release: $(BIN)/helm $(BIN)/kustomize ## Write a release into _output/release/VERSION (make release VERSION=vX.Y.Z; IMAGE_REPOSITORY names the image), then check it: plugin archives, krew manifest, both charts, install YAML, the image where Docker runs, SHA256SUMS.
	@[ "$(origin VERSION)" != file ] || { echo "make release needs VERSION=vX.Y.Z"; exit 1; }
	nice -n 10 hack/release.sh $(VERSION) $(RELEASE_DIR)
	COURIER_RELEASE_DIR=$(RELEASE_DIR) COURIER_RELEASE_VERSION=$(VERSION) go test -count=1 ./test/release/

##@ Test

.PHONY: test
test: test-unit test-integration ## Run unit and integration tests.

.PHONY: test-unit
test-unit: ## Run unit tests, the lab's in tools/ too.
	go test -race $(GO_TEST_FLAGS) $(UNIT_PACKAGES)
	cd $(LAB_DIR) && go test -race $(GO_TEST_FLAGS) ./...

.PHONY: test-integration
test-integration: test-binaries $(BIN)/helm $(BIN)/kustomize ## Run integration tests against real kube-apiserver and etcd.
	@mkdir -p $(ROOT)/_artifacts
	go test -count=1 $(GO_TEST_FLAGS) -timeout 20m $(INTEGRATION_PACKAGES) 2>&1 | tee $(ROOT)/_artifacts/test-integration.log \
		|| { hack/test-failures.sh $(ROOT)/_artifacts/test-integration.log; exit 1; }

.PHONY: test-e2e
test-e2e: e2e-binaries build ## Run the e2e suite on local clusters with the real peers.
	@$(COURIER_LOCAL) down --dir $(E2E_DIR) --bin $(BIN) >/dev/null 2>&1 || true
	@$(COURIER_LOCAL) up --dir $(E2E_DIR) --bin $(BIN) --courier-log-level 4 || { $(COURIER_LOCAL) logs --dir $(E2E_DIR) --out $(ROOT)/_artifacts/e2e; $(COURIER_LOCAL) down --dir $(E2E_DIR) --bin $(BIN); exit 1; }
	@rc=0; mkdir -p $(ROOT)/_artifacts; \
	COURIER_E2E_MANAGER_KUBECONFIG=$(E2E_DIR)/manager.kubeconfig \
	COURIER_E2E_WORKERS=worker-1=$(E2E_DIR)/worker-1.kubeconfig,worker-2=$(E2E_DIR)/worker-2.kubeconfig \
	COURIER_E2E_STOP_WORKER="$(COURIER_LOCAL) stop --dir $(E2E_DIR) --bin $(BIN)" \
	COURIER_E2E_START_WORKER="$(COURIER_LOCAL) start --dir $(E2E_DIR) --bin $(BIN)" \
	go test -count=1 -timeout 20m $(GO_TEST_FLAGS) ./e2e/... 2>&1 | tee $(ROOT)/_artifacts/test-e2e.log || rc=$$?; \
	if [ $$rc -ne 0 ]; then $(COURIER_LOCAL) logs --dir $(E2E_DIR) --out $(ROOT)/_artifacts/e2e; echo "Logs in _artifacts/e2e"; fi; \
	$(COURIER_LOCAL) down --dir $(E2E_DIR) --bin $(BIN) || rc=1; \
	if [ $$rc -ne 0 ]; then hack/test-failures.sh $(ROOT)/_artifacts/test-e2e.log; fi; \
	exit $$rc

.PHONY: kind-images
kind-images: ## Build the kind path's images offline (node image, Courier, Kueue, Trainer, JobSet) from pinned sources and Debian packages; needs root and Docker (hack/kind/).
	nice -n 10 hack/kind/build-bins.sh
	nice -n 10 hack/kind/build-images.sh

.PHONY: test-e2e-kind
test-e2e-kind: ## Run the e2e suite on three kind clusters with Courier's chart (hack/e2e-kind.sh); E2E_ARGS passes go test flags.
	hack/e2e-kind.sh

##@ Tools

.PHONY: test-binaries
test-binaries: $(BIN)/kube-apiserver $(BIN)/etcd $(BIN)/kube-controller-manager ## Build the integration tests' etcd, kube-apiserver and kube-controller-manager.

.PHONY: e2e-binaries
e2e-binaries: test-binaries $(BIN)/kube-scheduler $(BIN)/kubectl $(BIN)/kwok $(BIN)/kwokctl \
	$(BIN)/kueue $(BIN)/trainer-controller-manager $(BIN)/jobset $(BIN)/helm ## Build the real peers the local clusters run, and Helm for Courier's chart.

.PHONY: tools
tools: e2e-binaries $(CONTROLLER_GEN) $(STATICCHECK) $(BIN)/kustomize ## Build every tool.

# Each tool is built once into bin/<name>-<version>; bin/<name> links to it.
# The fifth argument names another tools module than hack/tools.
define versioned-tool
$(BIN)/$(1): $(BIN)/$(1)-$(2)
	ln -sf $(1)-$(2) $(BIN)/$(1)
$(BIN)/$(1)-$(2):
	@mkdir -p $(BIN)
	cd $(or $(5),$(TOOLS_DIR)) && go build -o $$@ $(4) $(3)
endef

$(eval $(call versioned-tool,kube-apiserver,$(K8S_VERSION),k8s.io/kubernetes/cmd/kube-apiserver,-ldflags "$(K8S_LDFLAGS)"))
$(eval $(call versioned-tool,etcd,$(ETCD_VERSION),./etcd))
$(eval $(call versioned-tool,controller-gen,$(CONTROLLER_TOOLS_VERSION),sigs.k8s.io/controller-tools/cmd/controller-gen))
$(eval $(call versioned-tool,staticcheck,$(STATICCHECK_VERSION),honnef.co/go/tools/cmd/staticcheck))
$(eval $(call versioned-tool,kube-controller-manager,$(K8S_VERSION),k8s.io/kubernetes/cmd/kube-controller-manager,-ldflags "$(K8S_LDFLAGS)"))
$(eval $(call versioned-tool,kube-scheduler,$(K8S_VERSION),k8s.io/kubernetes/cmd/kube-scheduler,-ldflags "$(K8S_LDFLAGS)"))
$(eval $(call versioned-tool,kubectl,$(K8S_VERSION),k8s.io/kubernetes/cmd/kubectl,-ldflags "$(K8S_LDFLAGS)"))
$(eval $(call versioned-tool,kwok,$(KWOK_VERSION),sigs.k8s.io/kwok/cmd/kwok))
$(eval $(call versioned-tool,kwokctl,$(KWOK_VERSION),sigs.k8s.io/kwok/cmd/kwokctl))
$(eval $(call versioned-tool,kueue,$(KUEUE_VERSION),sigs.k8s.io/kueue/cmd/kueue))
$(eval $(call versioned-tool,trainer-controller-manager,$(TRAINER_VERSION),github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager))
$(eval $(call versioned-tool,jobset,$(JOBSET_VERSION),sigs.k8s.io/jobset))
$(eval $(call versioned-tool,helm,$(HELM_VERSION),helm.sh/helm/v4/cmd/helm,,$(HELM_TOOLS_DIR)))
$(eval $(call versioned-tool,kustomize,$(KUSTOMIZE_VERSION),sigs.k8s.io/kustomize/kustomize/v5,,$(KUSTOMIZE_TOOLS_DIR)))

##@ Benchmarks

.PHONY: bench-scale
bench-scale: build build-bench test-binaries ## Measure Courier's own cost per dispatch at scale; BENCH_ARGS passes flags (courier-bench scale -h).
	$(COURIER_BENCH) scale $(BENCH_ARGS)

.PHONY: bench-stack
bench-stack: e2e-binaries build build-bench ## Measure placement with the real Kueue, Trainer and JobSet: jobs per worker, requests to workers per workload; BENCH_ARGS passes flags (courier-bench stack -h).
	$(COURIER_BENCH) stack $(BENCH_ARGS)

BENCH_DIR := $(ROOT)/_output/bench-compare

.PHONY: bench
bench: e2e-binaries build build-bench ## Compare Courier with MultiKueue v0.19.1, as released and with worker clients at 1,000 QPS, on the same clusters and loads, 3 repeats in rotating order (docs/performance.md); WORKERS=3 for 3 workers; BENCH_ARGS passes flags, --smoke for a short run (courier-bench compare -h).
	tools/hack/build-kueue-multikueue-qps.sh
	@# A comparison interrupted hard leaves its environment up; stop it by PID first.
	@$(COURIER_LOCAL) down --dir $(BENCH_DIR) --bin $(BIN) >/dev/null 2>&1 || true
	$(COURIER_BENCH) compare --dir $(BENCH_DIR) --bin $(BIN) --workers $(or $(WORKERS),2) $(BENCH_ARGS)

##@ Reliability

SOAK_DIR := $(ROOT)/_output/soak-env

.PHONY: soak
soak: e2e-binaries build build-bench ## Run the fault-injection soak: 500 jobs and 36 faults on a manager and 3 workers, then the exactly-once invariants (docs/soak.md); SOAK_ARGS passes flags (courier-bench soak -h).
	@# A soak interrupted hard leaves its environment up; stop it by PID first.
	@$(COURIER_LOCAL) down --dir $(SOAK_DIR) --bin $(BIN) >/dev/null 2>&1 || true
	$(COURIER_BENCH) soak --dir $(SOAK_DIR) --out $(ROOT)/_output/soak $(SOAK_ARGS)

.PHONY: soak-short
soak-short: e2e-binaries build build-bench ## Run the seeded short soak that CI runs: 60 jobs, one fault of each kind; fails when an invariant does.
	@$(COURIER_LOCAL) down --dir $(SOAK_DIR) --bin $(BIN) >/dev/null 2>&1 || true
	$(COURIER_BENCH) soak --short --dir $(SOAK_DIR) --out $(ROOT)/_output/soak-short $(SOAK_ARGS)
