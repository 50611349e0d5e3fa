SHELL := bash -o pipefail
.DEFAULT_GOAL := help

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS := -s -w -X github.com/pcs-lifecycle/pcs-lifecycle/internal/cli.Version=$(VERSION) -X github.com/pcs-lifecycle/pcs-lifecycle/internal/cli.Commit=$(COMMIT)
BIN     := bin/pcs-lifecycle
GOBIN_TOOLS := $(CURDIR)/.tools
VERSITYGW_VERSION := v1.8.0
export AWS_EC2_METADATA_DISABLED := true
export PATH := $(GOBIN_TOOLS):$(shell go env GOPATH)/bin:$(PATH)

.PHONY: help build test test-deps unit lint demo bench package tools fuzz clean

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## static bin/pcs-lifecycle with the version injected
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/pcs-lifecycle

tools: ## install the pinned test tools (versitygw) into .tools/
	@command -v versitygw >/dev/null || GOBIN=$(GOBIN_TOOLS) go install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)

test-deps: ## install what make test needs (Debian packages as root, pinned Go tools in .tools/), or say how
	bash scripts/test-deps.sh

unit: test-deps ## go tests with -race (the real parts: versitygw, Slurm, munge, the metadata mock)
	go test -race -count=1 -p 1 ./...  # one package at a time: the real-daemon tests are timing-sensitive under load

test: test-deps lint unit fuzz ## everything CI runs, set-up included: lint, go tests, each fuzz target for FUZZTIME

fuzz: ## each fuzz target for FUZZTIME (default 30s); the seed corpora also run in every go test
	go test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $${FUZZTIME:-30s} ./pkg/lifecycle/
	@# FuzzRead writes and fsyncs files: on tmpfs when there is one, at ten times the pace.
	TMPDIR=$$(test -w /dev/shm && echo /dev/shm || echo $${TMPDIR:-/tmp}) go test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $${FUZZTIME:-30s} -fuzzminimizetime 2s ./internal/state/
	TMPDIR=$$(test -w /dev/shm && echo /dev/shm || echo $${TMPDIR:-/tmp}) go test -run '^$$' -fuzz '^FuzzRead$$' -fuzztime $${FUZZTIME:-30s} -fuzzminimizetime 2s ./internal/state/

lint: ## gofmt and go vet
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	go vet ./...

demo: build tools ## first boot, reboot and STOP_SEQUENCE on a sandbox node against a local S3 server
	bash scripts/demo.sh

bench: build tools ## benchmarks that print numbers
	go test -run '^$$' -bench . -benchmem ./internal/proc/ ./internal/state/
	bash scripts/bench.sh

package: build ## a tarball with the binary, units and scripts
	mkdir -p dist
	tar -czf dist/pcs-lifecycle-$(VERSION).tar.gz bin/pcs-lifecycle systemd scripts README.md

clean: ## remove build outputs
	rm -rf bin dist
