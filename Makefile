# slotq — run `make` for the list of targets.
.DEFAULT_GOAL := help
SHELL := /bin/bash

GO        ?= go
PKGS      ?= ./...
BENCHTIME ?= 1s

.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_.%-]+:.*## / {printf "  \033[36m%-22s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: run
run: ## Run the whole system locally on the embedded backend and show a demo
	$(GO) run ./cmd/slotq demo

.PHONY: test
test: ## Run every test with -race (starts moto_server for the AWS adapters)
	$(GO) vet $(PKGS)
	SLOTQ_REQUIRE_MOTO=1 $(GO) test -race -count=1 -timeout 20m $(PKGS)

.PHONY: bench
bench: ## Run the benchmarks and the demo workload
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./pkg/...
	$(GO) run ./cmd/slotq bench

.PHONY: fuzz
fuzz: ## Fuzz request decoding and slot invariants for a short while
	$(GO) test -run '^$$' -fuzz FuzzDecodeEnqueue -fuzztime 30s ./pkg/job
	$(GO) test -run '^$$' -fuzz FuzzTake -fuzztime 30s ./pkg/slot

.PHONY: fmt
fmt: ## Format the code
	gofmt -w $$(git ls-files '*.go')
