# The Python client's engine readers (sluice.spark, sluice.ray; issue 23)
# and their e2e tests (e2e/engines) against real flightd replicas, with
# pyspark in local mode (local[2]) and Ray on 2 CPUs.
#
#   make test-engines    the venv, flightd, then pytest e2e/engines
#   make venv-engines    only the venv: .tmp/venv-engines
#
# Included by the Makefile after mk/spark.mk: the Spark 4.1 install there
# (with Iceberg's Spark runtime, which Spark 4.2 lacks) writes the
# merge-on-read table that test_spark_mor.py reads. Needs Java 17 or newer
# for Spark (make java) and Python 3.11. The venv is its own (pyspark and Ray are large, about 700 MB
# together), not the tests' .tmp/venv. The client is not installed into
# it: the tests import this tree's clients/python through PYTHONPATH,
# which Spark's and Ray's Python workers inherit.

TMP ?= $(CURDIR)/.tmp
BIN ?= $(TMP)/bin
GO ?= go
PYTHON ?= python3

ENGINES_VENV := $(TMP)/venv-engines
ENGINES_PY := $(ENGINES_VENV)/bin/python
# The versions the extras sluice[spark] and sluice[ray] are tested with
# (clients/python/pyproject.toml). pyspark 4.2 for the streaming source's
# admission control (maxSnapshotsPerTrigger, maxRowsPerTrigger); pandas 2,
# which pyspark 4.2 supports (it warns on pandas 3); pyiceberg writes the
# tables the tests commit to while Spark reads.
PY_ENGINES_PACKAGES := pyspark==4.2.0 "ray[data]==2.60.0" pyarrow==26.0.1 pandas==2.3.3 pytest==9.2.0 \
	"pyiceberg[sql-sqlite]==0.12.0"

.PHONY: venv-engines test-engines bench-engines

## venv-engines: the venv of the engine tests (pyspark, Ray, pyiceberg) in .tmp/venv-engines
venv-engines: $(ENGINES_VENV)/.installed

$(ENGINES_VENV)/.installed: mk/python-engines.mk
	$(PYTHON) -m venv $(ENGINES_VENV)
	$(ENGINES_PY) -m pip install --quiet --disable-pip-version-check $(PY_ENGINES_PACKAGES)
	touch $@

## test-engines: Spark (local[2]) and Ray (2 CPUs) read flightd replicas through sluice.spark and sluice.ray (e2e/engines: 39 tests, 7.5 minutes on 2 cores under a load of 11 to 15; the first run also installs about 700 MB, and make spark-connect's Spark 4.1)
test-engines: venv-engines $(SPARK41_DIR)/.installed
	$(GO) build -o $(BIN)/flightd ./cmd/flightd
	cd e2e/engines && SLUICE_FLIGHTD=$(BIN)/flightd SLUICE_SPARK41=$(SPARK41_DIR) PYTHONPATH=$(CURDIR)/clients/python \
		PYSPARK_PYTHON=$(ENGINES_PY) PYSPARK_DRIVER_PYTHON=$(ENGINES_PY) SPARK_LOCAL_IP=127.0.0.1 \
		$(ENGINES_PY) -m pytest -q -p no:cacheprovider -x .

## bench-engines: one window of BENCH_ENGINE_ROWS rows read by pyarrow, by Spark local[2] and by Ray through one flightd and two replicas (time, CPU, peak RSS; docs/BENCHMARKS-ENGINES.md)
BENCH_ENGINE_ROWS ?= 2000000
bench-engines: venv-engines
	$(GO) build -o $(BIN)/flightd ./cmd/flightd
	cd e2e/engines && PYTHONPATH=$(CURDIR)/clients/python PYSPARK_PYTHON=$(ENGINES_PY) \
		PYSPARK_DRIVER_PYTHON=$(ENGINES_PY) SPARK_LOCAL_IP=127.0.0.1 \
		$(ENGINES_PY) bench_engines.py --flightd $(BIN)/flightd --rows $(BENCH_ENGINE_ROWS)
