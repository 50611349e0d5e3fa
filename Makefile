SHELL := bash -o pipefail
.DEFAULT_GOAL := help

# The version of the binary and the packages: git describe as a valid deb/rpm version
# (0.0.0~git<commits>.<hash> until the first tag); VERSION=... overrides.
VERSION ?= $(shell sh scripts/package/version.sh)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS := -s -w -X github.com/pcs-lifecycle/pcs-lifecycle/internal/cli.Version=$(VERSION) -X github.com/pcs-lifecycle/pcs-lifecycle/internal/cli.Commit=$(COMMIT)
BIN     ?= bin/pcs-lifecycle
GOBIN_TOOLS := $(CURDIR)/.tools
VERSITYGW_VERSION := v1.8.0
NFPM_VERSION := v2.45.2
# staticcheck: the default checks (bugs, simplifications, unused code) and nothing else; its
# findings are fixed, never silenced wholesale. Pinned; installed into .tools/ when missing.
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(GOBIN_TOOLS)/staticcheck-$(STATICCHECK_VERSION)
ARCH    ?= $(shell go env GOARCH)
DIST    ?= dist
GEN     ?= bin/gen
export AWS_EC2_METADATA_DISABLED := true
export PATH := $(GOBIN_TOOLS):$(shell go env GOPATH)/bin:$(PATH)

.PHONY: help build test test-deps unit lint demo bench package package-test tools fuzz clean

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## static bin/pcs-lifecycle with the version injected
	CGO_ENABLED=0 GOARCH=$(ARCH) go build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/pcs-lifecycle

tools: ## install the pinned test tools (versitygw) into .tools/
	@command -v versitygw >/dev/null || GOBIN=$(GOBIN_TOOLS) go install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)

test-deps: ## install what make test needs (Debian packages as root, pinned Go tools in .tools/), or say how
	bash scripts/test-deps.sh

unit: test-deps ## go tests with -race (the real parts: versitygw, Slurm, munge, the metadata mock)
	go test -race -count=1 -p 1 ./...  # one package at a time: the real-daemon tests are timing-sensitive under load

test: test-deps lint unit fuzz package-test ## everything CI runs, set-up included: lint, go tests, fuzz targets for FUZZTIME, the packages

fuzz: ## each fuzz target for FUZZTIME (default 30s); the seed corpora also run in every go test
	go test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $${FUZZTIME:-30s} ./pkg/lifecycle/
	@# FuzzRead writes and fsyncs files: on tmpfs when there is one, at ten times the pace.
	TMPDIR=$$(test -w /dev/shm && echo /dev/shm || echo $${TMPDIR:-/tmp}) go test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $${FUZZTIME:-30s} -fuzzminimizetime 2s ./internal/state/
	TMPDIR=$$(test -w /dev/shm && echo /dev/shm || echo $${TMPDIR:-/tmp}) go test -run '^$$' -fuzz '^FuzzRead$$' -fuzztime $${FUZZTIME:-30s} -fuzzminimizetime 2s ./internal/state/

lint: $(STATICCHECK) ## gofmt, go vet and staticcheck (pinned, installed into .tools/)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	go vet ./...
	$(STATICCHECK) ./...

$(STATICCHECK):
	GOBIN=$(GOBIN_TOOLS) go install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv $(GOBIN_TOOLS)/staticcheck $@

demo: build tools ## first boot, reboot and STOP_SEQUENCE on a sandbox node against a local S3 server
	bash scripts/demo.sh

bench: build tools ## benchmarks that print numbers
	go test -run '^$$' -bench . -benchmem ./internal/proc/ ./internal/state/
	bash scripts/bench.sh

$(GOBIN_TOOLS)/nfpm:
	GOBIN=$(GOBIN_TOOLS) go install github.com/goreleaser/nfpm/v2/cmd/nfpm@$(NFPM_VERSION)

package: build $(GOBIN_TOOLS)/nfpm ## .deb and .rpm in dist/ (also as dist/pcs-lifecycle.deb and .rpm); VERSION= overrides
	@# Man pages and completions from the cobra commands; dates from the commit: reproducible.
	go run ./internal/tools/gendocs -out $(GEN) -version '$(VERSION)' -date $$(git log -1 --format=%ct 2>/dev/null || echo 0)
	mkdir -p $(DIST)
	rm -f $(DIST)/pcs-lifecycle*.deb $(DIST)/pcs-lifecycle*.rpm
	sed -e 's|@BIN@|$(BIN)|g; s|@GEN@|$(GEN)|g' scripts/package/nfpm.yaml >$(GEN)/nfpm.yaml
	for p in deb rpm; do \
	  SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || echo 0) VERSION='$(VERSION)' ARCH=$(ARCH) \
	    $(GOBIN_TOOLS)/nfpm package --config $(GEN)/nfpm.yaml --packager $$p --target $(DIST)/ || exit 1; \
	  ln -sf "$$(cd $(DIST) && ls pcs-lifecycle?*.$$p)" $(DIST)/pcs-lifecycle.$$p; \
	done
	@ls -l $(DIST)

package-test: package ## install, upgrade and remove the .deb on this machine (root); check the .rpm in a scratch root
	rm -rf $(DIST)/older && $(MAKE) --no-print-directory package VERSION=0.0.0~git0.older DIST=$(DIST)/older BIN=bin/older/pcs-lifecycle GEN=bin/older/gen
	PCS_PACKAGE_DIST=$(CURDIR)/$(DIST) PCS_PACKAGE_OLDER=$(CURDIR)/$(DIST)/older go test -count=1 -v ./scripts/package/

clean: ## remove build outputs
	rm -rf bin dist
