# Sluice — the front door. `make demo` serves the demo table; `make test`
# runs every test. Both install what they need (Go modules, the pinned code
# generators, a Python venv with pyarrow) under the git-ignored .tmp/.

SHELL := /bin/bash
GO ?= go
PYTHON ?= python3

TMP := $(CURDIR)/.tmp
BIN := $(TMP)/bin
VENV := $(TMP)/venv
PY := $(VENV)/bin/python

# Pinned tools, installed with `go install` into .tmp/bin.
BUF_VERSION := v1.75.0
PROTOC_GEN_GO_VERSION := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2
GOLANGCI_LINT_VERSION := v2.15.0

# Pinned Python packages of the e2e venv.
PY_PACKAGES := pyarrow==26.0.1 pytest==9.2.0 "pyiceberg[sql-sqlite]==0.12.0" pandas==3.1.1 networkx==3.4.2

# Demo and run settings.
WAREHOUSE ?= ./warehouse
LISTEN ?= 127.0.0.1:8815
ARGS ?=

# Fuzzing time per fuzzer.
FUZZTIME ?= 30s

UNIT_PKGS = $(shell $(GO) list ./... | grep -v /e2e)

.PHONY: all build run demo venv tools generate checkgenerate lint checkfuzz fmt test test-unit test-python test-e2e \
	bench load fuzz clean test-long

all: build

## build: build flightd into .tmp/bin
build:
	$(GO) build -o $(BIN)/flightd ./cmd/flightd

## run: serve the warehouse (WAREHOUSE, LISTEN, ARGS)
run: build
	$(BIN)/flightd --warehouse $(WAREHOUSE) --listen $(LISTEN) $(ARGS)

## demo: serve the embedded warehouse with the demo table demo.orders
demo: build venv
	@echo "The Python venv with pyarrow and the sluice client: $(PY)"
	$(BIN)/flightd --demo --warehouse $(WAREHOUSE) --listen $(LISTEN) $(ARGS)

## venv: the Python venv with pyarrow, pytest, pyiceberg and the sluice client
venv: $(VENV)/.installed
$(VENV)/.installed: clients/python/pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check $(PY_PACKAGES)
	$(PY) -m pip install --quiet --disable-pip-version-check -e ./clients/python
	touch $@

## tools: the pinned code generators
tools: $(BIN)/.tools-$(BUF_VERSION)-$(PROTOC_GEN_GO_VERSION)-$(PROTOC_GEN_GO_GRPC_VERSION)
$(BIN)/.tools-%:
	GOBIN=$(BIN) $(GO) install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
	GOBIN=$(BIN) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	GOBIN=$(BIN) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
	touch $@

## generate: regenerate gen/ from proto/ (local plugins, no network)
generate: tools
	$(BIN)/buf lint
	$(BIN)/buf generate

## checkgenerate: fail when gen/ is not what proto/ generates
checkgenerate: generate
	@git diff --exit-code --stat -- gen/ || (echo "gen/ is stale: run 'make generate' and commit" && exit 1)
	@test -z "$$(git status --porcelain -- gen/)" || (git status --porcelain -- gen/; echo "gen/ has untracked files: run 'make generate' and commit" && exit 1)

$(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION):
	GOBIN=$(BIN) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(BIN)/golangci-lint $@

## lint: golangci-lint and gofmt, and every fuzzer listed in FUZZERS
lint: $(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION) checkfuzz
	@test -z "$$(gofmt -l $$(git ls-files '*.go' | grep -v '^gen/'))" || (gofmt -l $$(git ls-files '*.go' | grep -v '^gen/'); exit 1)
	$(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION) run ./...

## fmt: format the Go code
fmt:
	gofmt -w $$(git ls-files '*.go' | grep -v '^gen/')

## test: every test: generated code, lint, Go unit tests with -race, Python client tests, e2e
test: checkgenerate lint test-unit test-python test-e2e

## test-unit: Go unit tests with the race detector
test-unit:
	$(GO) test -race -count=1 $(UNIT_PKGS)

## test-long: the engine's oracle on many more random histories (SEEDS per configuration)
SEEDS ?= 25
test-long: venv
	SLUICE_ORACLE_SEEDS=$(SEEDS) $(GO) test -count=1 -timeout 60m -run 'TestOracle' ./feed/
	SLUICE_SOAK=1 SLUICE_PYTHON=$(PY) $(GO) test -count=1 -timeout 30m -run 'TestFollowMirrorWithCrashes' -v ./e2e/

## test-python: the Python client's unit tests
test-python: venv
	cd clients/python && $(PY) -m pytest -q -p no:cacheprovider tests

## test-e2e: real flightd processes read by the Go and pyarrow clients
test-e2e: venv
	SLUICE_PYTHON=$(PY) $(GO) test -count=1 -timeout 20m ./e2e/...

## bench: the benchmarks: workloads, every arm in one run, docs/BENCHMARKS.md (RUNS, BIG_ROWS)
RUNS ?= 5
BIG_ROWS ?= 10000000
bench: build venv
	$(GO) build -o $(BIN)/sluice-bench ./cmd/sluice-bench
	$(BIN)/sluice-bench -runs $(RUNS) -big-rows $(BIG_ROWS) -flightd $(BIN)/flightd -python $(PY) -out docs/BENCHMARKS.md
	$(MAKE) load

## load: the load test (e2e/load_test.go): LOAD_CONSUMERS consumers and a writer on one flightd for LOAD_DURATION; docs/LOAD.md
LOAD_DURATION ?= 60s
LOAD_CONSUMERS ?= 50
load:
	SLUICE_LOAD=1 SLUICE_LOAD_DURATION=$(LOAD_DURATION) SLUICE_LOAD_CONSUMERS=$(LOAD_CONSUMERS) \
		SLUICE_LOAD_OUT=$(CURDIR)/docs/LOAD.md $(GO) test -count=1 -timeout 30m -run '^TestLoad$$' -v ./e2e/

# Every fuzzer, as package:name. checkfuzz (run by lint) fails when a
# fuzzer of the code is missing here.
FUZZERS := \
	./feed/:FuzzParseFilter \
	./server/:FuzzDecodeRequest \
	./server/:FuzzDecodeBody \
	./auth/:FuzzParseAuthorization \
	./auth/:FuzzIssuedToken \
	./auth/:FuzzAuthenticate \
	./auth/:FuzzGlobMatch \
	./clients/go/:FuzzParseMeta \
	./clients/go/:FuzzUnmarshalFlightData

## fuzz: every fuzzer for FUZZTIME each; a failing input is kept in its package's testdata/fuzz
fuzz: checkfuzz
	@set -e; for f in $(FUZZERS); do \
		echo "== $${f#*:} in $${f%%:*} for $(FUZZTIME)"; \
		$(GO) test $${f%%:*} -run '^$$' -fuzz "^$${f#*:}$$" -fuzztime $(FUZZTIME); \
	done

## checkfuzz: every `func Fuzz` of the code is in FUZZERS
checkfuzz:
	@missing=$$(git grep --untracked -h -o '^func Fuzz[A-Za-z0-9_]*' -- '*_test.go' | sed 's/^func //' | sort -u | \
		while read -r name; do echo " $(FUZZERS) " | grep -q ":$$name " || echo "$$name"; done); \
		test -z "$$missing" || (echo "fuzzers missing from FUZZERS in the Makefile:" $$missing; exit 1)

## clean: remove built binaries, the venv and tools
clean:
	rm -rf $(TMP)
