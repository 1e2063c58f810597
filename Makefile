# slotq — run `make` for the list of targets.
.DEFAULT_GOAL := help
SHELL := /bin/bash

GO        ?= go
PKGS      ?= ./...
BENCHTIME ?= 1s

# moto_server and cfn-lint (the tests' SQS and the template's linter) come
# with the machine image's Python, installed with pyenv: its shims go on
# PATH for every target when it is there.
PYENV_ROOT ?= $(HOME)/.pyenv
ifneq ($(wildcard $(PYENV_ROOT)/shims),)
export PATH := $(PYENV_ROOT)/shims:$(PYENV_ROOT)/bin:$(PATH)
endif

.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_.%-]+:.*## / {printf "  \033[36m%-22s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: run
# `go run` would leave its program running when it is stopped (kill, as a
# script stops `make run &`): build, then exec, so that the signal make
# passes on reaches slotq local itself, which stops and frees its ports.
run: ## Run the stack locally (embedded backend; DynamoDB/SQS if AWS_ENDPOINT_URL_* are set): Invoke API on 127.0.0.1:3001, web console on 127.0.0.1:3002, SQS event source, schedule; ARGS='--log info' logs echo payloads and start lines (slotq timeline --log); bin/slotq is the CLI it builds
	$(GO) build -o bin/slotq ./cmd/slotq && exec bin/slotq local $(ARGS)

.PHONY: demo
demo: ## Run producers and workers on the embedded backend and show a live timeline of starts and a summary
	$(GO) run ./cmd/slotq demo

# The conformance suite's concurrency subtests, which `make test` repeats on
# DynamoDB Local: races that pass once by luck rarely pass five times.
CONCURRENT ?= ^TestState$$/^(Take|Gate|Lanes|Skip|Due|Forms|Meters)$$/^(Concurrent|PutDuringAdds)
CONCURRENT_COUNT ?= 5

.PHONY: setup
setup: ## Check what the tests need (Java 17, npm, Chromium, make, git, moto_server, cfn-lint, boto3); as root install what is missing with apt-get, else print the command and stop; fetch DynamoDB Local and the TypeScript producer's packages (npm ci)
	internal/dev/setup/setup.sh

.PHONY: test
test: setup ## First `make setup`, then run every test with -race (starts DynamoDB Local for DynamoDB, moto_server for SQS, Chromium for the console, the Python and TypeScript producers) and the example project's, then repeat the store's concurrency tests
	$(GO) vet $(PKGS)
	$(MAKE) --no-print-directory lint-template
	$(MAKE) --no-print-directory test-example
	SLOTQ_REQUIRE_LOCAL_AWS=1 SLOTQ_REQUIRE_BROWSER=1 SLOTQ_REQUIRE_PRODUCERS=1 $(GO) test -race -count=1 -timeout 40m $(PKGS)
	@echo "repeating the concurrency subtests on DynamoDB Local: -count=$(CONCURRENT_COUNT) -run '$(CONCURRENT)'"
	@out=$$(SLOTQ_REQUIRE_LOCAL_AWS=1 $(GO) test -race -count=$(CONCURRENT_COUNT) -run '$(CONCURRENT)' -v ./internal/dynamostore 2>&1); rc=$$?; \
	  grep -E -- '--- (PASS|FAIL|SKIP)|^(ok|FAIL|panic)|\.go:[0-9]+:' <<<"$$out"; \
	  [ $$rc -eq 0 ] || exit $$rc; \
	  grep -q -- '--- PASS: TestState/.*/Concurrent' <<<"$$out" || \
	    { echo "make test: -run '$(CONCURRENT)' selected no concurrency subtest of internal/dev/storetest" >&2; exit 1; }
	@$(MAKE) --no-print-directory check-emulators

.PHONY: check-emulators
check-emulators: ## Fail if an emulator a test started (moto_server, DynamoDB Local, the console tests' Chromium) outlived its test binary
	@sleep 1; left=$$(ps -eo pid=,ppid=,stat=,args= | awk '$$2 == 1 && $$3 !~ /^Z/ && /moto_server|DynamoDBLocal|chrom/ && !/awk/ {print $$1 ": " substr($$0, index($$0, $$4), 80)}'); \
	  if [ -n "$$left" ]; then echo "make test: these outlived the tests that started them:" >&2; echo "$$left" >&2; exit 1; fi

.PHONY: docs
docs: ## Write the CLI reference docs/cli.md from the commands' own help (cmd/slotq TestCLIReference holds it to them)
	$(GO) run ./cmd/slotq reference > docs/cli.md

.PHONY: schema
schema: ## Write the JSON Schemas of the enqueue and admin functions' requests and answers, docs/schema/*.json, from pkg/api (internal/dev/apischema TestSchemaFiles holds them to it)
	$(GO) run ./internal/dev/apischema/cmd/apischema docs/schema

.PHONY: screenshots
screenshots: ## Write the console's screenshots (docs/console-*.png) from its browser test against the local runtime (needs chromium)
	SLOTQ_REQUIRE_BROWSER=1 SLOTQ_SCREENSHOTS=$(CURDIR)/docs $(GO) test -count=1 -run '^TestBrowser$$' ./internal/cli/console

.PHONY: test-example
test-example: ## Test the example project examples/acme (its own module): vet, build its bootstraps, one job of each kind through the local runtime, cfn-lint
	$(MAKE) --no-print-directory -C examples/acme test GO=$(GO)

DYNAMODB_PORT ?= 8000

.PHONY: dynamodb-local
# Built, then exec'd, as make run is: stopped by its PID, the program
# itself gets the signal and stops DynamoDB Local's Java with it.
dynamodb-local: ## Run DynamoDB Local on port $(DYNAMODB_PORT) and print the environment that points the AWS SDK at it (needs Java 17; it listens on every interface, as DynamoDB Local always does)
	$(GO) build -o bin/dynamodb-local ./internal/dev/dynamolocal/cmd/dynamodb-local && exec bin/dynamodb-local -port $(DYNAMODB_PORT)

# `make bench` writes each table it measures between the markers of its
# name in docs/performance.md (and the cost report in docs/costs.md), with
# the command and the host's load average (internal/bench/benchdoc): run it on
# a quiet host, and commit the docs it leaves.
PERF_DOC  ?= docs/performance.md
COSTS_DOC ?= docs/costs.md
GOBENCH    = $(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./cmd/... ./pkg/... ./internal/...
BENCHDOC   = $(GO) run ./internal/bench/benchdoc/cmd/benchdoc -doc $(PERF_DOC)

.PHONY: bench
bench: ## Run the benchmarks, the demo workloads (interval, rate, window, keys, lanes, fair share; embedded, on the model of DynamoDB, then on DynamoDB Local + moto), one queue's ceiling on DynamoDB Local and the cost report (slotq-bench: the steps that start emulators); write their tables into docs/performance.md and docs/costs.md
	set -o pipefail; out=$$(mktemp); trap 'rm -f "$$out"' EXIT; \
	  $(GOBENCH) | tee "$$out" | $(BENCHDOC) -table go -command "$(GOBENCH)" && \
	  $(GO) run ./internal/bench/benchdoc/cmd/benchdoc -doc $(COSTS_DOC) -table resume -match '/internal/dynamostore ResumeRun/' \
	  -command "$(GOBENCH)" < "$$out" | sed -n '/^written to/,$$p'
	set -o pipefail; SLOTQ_SIM_WEEK=1 $(GO) test -count=1 -run '^TestResumeScheduledWeek$$' -v ./internal/engine/ | \
	  $(BENCHDOC) -table week -format lines -command "SLOTQ_SIM_WEEK=1 go test -count=1 -run '^TestResumeScheduledWeek$$' -v ./internal/engine/"
	$(GO) run ./cmd/slotq bench --doc $(PERF_DOC) --table demo
	$(GO) run ./cmd/slotq bench --runs 5 --producers 4 --jobs 100 --batch 1 --interval 20ms --doc $(PERF_DOC) --table single
	$(GO) run ./cmd/slotq bench --runs 3 --producers 8 --jobs 500 --rate 500/1s --burst 5 --workers 16 --doc $(PERF_DOC) --table rate
	$(GO) run ./cmd/slotq bench --runs 3 --producers 8 --jobs 1000 --rate 1000/1s --burst 10 --workers 32 --doc $(PERF_DOC) --table rate1000
	$(GO) run ./cmd/slotq bench --runs 3 --producers 8 --jobs 100 --window 10/50ms --workers 16 --doc $(PERF_DOC) --table window
	$(GO) run ./cmd/slotq bench --runs 3 --producers 8 --jobs 100 --window 10/100ms --workers 16 --doc $(PERF_DOC) --table window100
	sh -c 'while :; do :; done' & b1=$$!; sh -c 'while :; do :; done' & b2=$$!; trap 'kill $$b1 $$b2' EXIT; \
	  $(GO) run ./cmd/slotq bench --runs 3 --producers 8 --jobs 500 --rate 500/1s --burst 5 --workers 16 --doc $(PERF_DOC) --table busy \
	  --note 'with two busy loops beside it (sh -c "while :; do :; done", twice)'
	sh -c 'while :; do :; done' & b1=$$!; sh -c 'while :; do :; done' & b2=$$!; trap 'kill $$b1 $$b2' EXIT; \
	  $(GO) run ./cmd/slotq bench --runs 3 --doc $(PERF_DOC) --table busy-interval \
	  --note 'with two busy loops beside it (sh -c "while :; do :; done", twice)'
	$(GO) run ./cmd/slotq bench --store dynamodb-model --runs 3 --producers 8 --jobs 100 --batch 1 --rate 500/1s --burst 10 --doc $(PERF_DOC) --table model500
	$(GO) run ./cmd/slotq bench --store dynamodb-model --runs 3 --producers 8 --jobs 100 --batch 10 --rate 500/1s --burst 10 --doc $(PERF_DOC) --table model500batch
	$(GO) run ./cmd/slotq bench --store dynamodb-model --runs 3 --producers 8 --jobs 200 --batch 1 --rate 1000/1s --burst 10 --doc $(PERF_DOC) --table model1000
	$(GO) run ./cmd/slotq bench --runs 3 --producers 8 --jobs 250 --keys 50 --key-rate 2/1s --rate 200/1s --workers 32 --doc $(PERF_DOC) --table keys
	$(GO) run ./cmd/slotq bench lanes --doc $(PERF_DOC) --table lanes
	$(GO) run ./cmd/slotq bench fair --runs 3 --doc $(PERF_DOC) --table fair
	$(GO) run ./cmd/slotq bench fair --runs 3 --key-book-ahead 0 --doc $(PERF_DOC) --table fair-unbounded
	set -o pipefail; for i in 1 2 3; do SLOTQ_REQUIRE_LOCAL_AWS=1 $(GO) test -count=1 -run 'TestSimulation$$' -v ./internal/bench/awssim | grep -o 'figures: .*' || exit 1; done | \
	  $(BENCHDOC) -table awssim -format lines -command "SLOTQ_REQUIRE_LOCAL_AWS=1 go test -count=1 -run 'TestSimulation$$' -v ./internal/bench/awssim (3 times)"
	set -o pipefail; $(GO) run ./internal/bench/precision/cmd/precision | \
	  $(BENCHDOC) -table precision -format markdown -prefix '' -command "go run ./internal/bench/precision/cmd/precision"
	set -o pipefail; $(GO) run ./internal/bench/precision/cmd/precision -table window | \
	  $(BENCHDOC) -table batching-window -format markdown -prefix '' -command "go run ./internal/bench/precision/cmd/precision -table window"
	set -o pipefail; $(GO) run ./internal/bench/cmd/slotq-bench ceiling | \
	  $(BENCHDOC) -table ceiling -format cells -command "go run ./internal/bench/cmd/slotq-bench ceiling"
	$(GO) run ./internal/bench/cmd/slotq-bench costs --doc $(COSTS_DOC) --table costs

.PHONY: fuzz
fuzz: ## Fuzz request decoding and slot invariants for a short while
	$(GO) test -run '^$$' -fuzz FuzzDecodeEnqueue -fuzztime 30s ./internal/job
	$(GO) test -run '^$$' -fuzz FuzzTake -fuzztime 30s ./internal/slot
	$(GO) test -run '^$$' -fuzz FuzzAdmin -fuzztime 30s ./internal/lambdafn/admin

.PHONY: fmt
fmt: ## Format the code
	gofmt -w $$(git ls-files '*.go')

# ---- Lambda functions and the SAM stack (docs/deploy.md) ----------------

# `sam build` runs build-<LogicalId> for each function (Metadata:
# BuildMethod: makefile) with ARTIFACTS_DIR set, in this folder
# (samconfig.toml: build_in_source). LAMBDA_GOARCH lets `make invoke`
# build the same target for this machine. -s -w drop the symbol table and
# DWARF: a smaller package to upload and load; panics still print their
# stack trace.
#
# The bootstraps say what they were built from (the worker logs it at its
# first invocation, as `slotq --version` prints it): the build records the
# VCS revision itself where it can, and these -X values stand in where it
# cannot (a git worktree, a copy without .git, -buildvcs=false).
ARTIFACTS_DIR ?= .aws-sam/bootstrap
LAMBDA_GOARCH ?= arm64
BUILDINFO      = github.com/slotq/slotq/internal/buildinfo
BUILD_VERSION  = $(shell git describe --tags --exact-match --match 'v*' 2>/dev/null)
BUILD_REVISION = $(shell git rev-parse HEAD 2>/dev/null)
BUILD_TIME     = $(shell TZ=UTC git log -1 --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd 2>/dev/null)
BUILD_MODIFIED = $(shell git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo true)
BUILD_LDFLAGS  = -X $(BUILDINFO).Version=$(BUILD_VERSION) -X $(BUILDINFO).Revision=$(BUILD_REVISION) \
                 -X $(BUILDINFO).Time=$(BUILD_TIME) -X $(BUILDINFO).Modified=$(BUILD_MODIFIED)
LAMBDA_LDFLAGS = -s -w $(BUILD_LDFLAGS)
LAMBDA_BUILD   = GOOS=linux GOARCH=$(LAMBDA_GOARCH) CGO_ENABLED=0 $(GO) build -tags lambda.norpc -trimpath -ldflags='$(LAMBDA_LDFLAGS)' -o $(ARTIFACTS_DIR)/bootstrap

.PHONY: slotq
slotq: ## Build the CLI into ./slotq; its --version names the commit it was built from
	$(GO) build -ldflags='$(BUILD_LDFLAGS)' -o slotq ./cmd/slotq

.PHONY: build-EnqueueFunction build-WorkerFunction build-ResumeFunction build-AdminFunction
build-EnqueueFunction: ## Build the enqueue function's bootstrap into ARTIFACTS_DIR (sam build)
	$(LAMBDA_BUILD) ./functions/enqueue
build-WorkerFunction: ## Build the worker function's bootstrap into ARTIFACTS_DIR (sam build)
	$(LAMBDA_BUILD) ./functions/worker
build-ResumeFunction: ## Build the resume function's bootstrap into ARTIFACTS_DIR (sam build)
	$(LAMBDA_BUILD) ./functions/resume
build-AdminFunction: ## Build the admin function's bootstrap into ARTIFACTS_DIR (sam build)
	$(LAMBDA_BUILD) ./functions/admin

FN    ?= EnqueueFunction
EVENT ?= events/enqueue.json

.PHONY: invoke
invoke: ## Invoke one function locally like `sam local invoke` (FN=EnqueueFunction EVENT=events/enqueue.json)
	$(GO) run ./cmd/slotq sam invoke --event $(EVENT) $(FN)

.PHONY: start-lambda
start-lambda: ## Run the built bootstraps like `sam local start-lambda` (Invoke API on 127.0.0.1:3001), with the SQS event source and the schedule in front
	$(GO) build -o bin/slotq ./cmd/slotq && exec bin/slotq sam start-lambda --addr 127.0.0.1:3001 $(ARGS)

.PHONY: lint-template
lint-template: ## Check template.yaml with cfn-lint, informational checks included
	@command -v cfn-lint >/dev/null || { echo "cfn-lint is missing: it ships with the machine image's Python (pip install cfn-lint)" >&2; exit 1; }
	cfn-lint -c I -- template.yaml
