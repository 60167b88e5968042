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

# The other pyspark minor the extra sluice[spark] allows (pyspark>=4.1):
# the Spark tests again with pyspark 4.1, in a venv of its own without
# Ray (make test-engines-spark41). pyspark 4.1 has no admission control;
# test_spark_stream.py checks the clear error in its place, and that the
# durable consumer trails the query by one batch there.
ENGINES41_VENV := $(TMP)/venv-engines-41
ENGINES41_PY := $(ENGINES41_VENV)/bin/python
PY_ENGINES41_PACKAGES := pyspark==4.1.4 pyarrow==26.0.1 pandas==2.3.3 pytest==9.2.0 "pyiceberg[sql-sqlite]==0.12.0"
ENGINES41_TESTS := test_spark_batch.py test_spark_filters.py test_spark_stream.py test_spark_restart.py test_spark_mor.py

.PHONY: venv-engines test-engines bench-engines venv-engines-41 test-engines-spark41

## venv-engines: the venv of the engine tests (pyspark, Ray, pyiceberg) in .tmp/venv-engines
venv-engines: $(ENGINES_VENV)/.installed

$(ENGINES_VENV)/.installed: mk/python-engines.mk
	$(PYTHON) -m venv $(ENGINES_VENV)
	$(ENGINES_PY) -m pip install --quiet --disable-pip-version-check $(PY_ENGINES_PACKAGES)
	touch $@

## test-engines: Spark (local[2]) and Ray (2 CPUs) read flightd replicas through sluice.spark and sluice.ray (e2e/engines: 40 tests, one of them for pyspark 4.1 only; 7.5 minutes on 2 cores under a load of 11 to 15, 14 minutes under 28 to 10 of which 2 built flightd; the first run also installs about 700 MB, and make spark-connect's Spark 4.1)
test-engines: venv-engines $(SPARK41_DIR)/.installed
	$(GO) build -o $(BIN)/flightd ./cmd/flightd
	cd e2e/engines && SLUICE_FLIGHTD=$(BIN)/flightd SLUICE_SPARK41=$(SPARK41_DIR) PYTHONPATH=$(CURDIR)/clients/python \
		PYSPARK_PYTHON=$(ENGINES_PY) PYSPARK_DRIVER_PYTHON=$(ENGINES_PY) SPARK_LOCAL_IP=127.0.0.1 \
		$(ENGINES_PY) -m pytest -q -p no:cacheprovider -x .

## venv-engines-41: the venv of the Spark tests on pyspark 4.1 (.tmp/venv-engines-41, no Ray)
venv-engines-41: $(ENGINES41_VENV)/.installed

$(ENGINES41_VENV)/.installed: mk/python-engines.mk
	$(PYTHON) -m venv $(ENGINES41_VENV)
	$(ENGINES41_PY) -m pip install --quiet --disable-pip-version-check $(PY_ENGINES41_PACKAGES)
	touch $@

## test-engines-spark41: the Spark batch, streaming, restart and merge-on-read tests of e2e/engines on pyspark 4.1.4 (test-engines runs them on 4.2.0; 37 tests, 4.5 minutes on 2 cores under a load of 3 to 7)
test-engines-spark41: venv-engines-41 $(SPARK41_DIR)/.installed
	$(GO) build -o $(BIN)/flightd ./cmd/flightd
	cd e2e/engines && SLUICE_FLIGHTD=$(BIN)/flightd SLUICE_SPARK41=$(SPARK41_DIR) PYTHONPATH=$(CURDIR)/clients/python \
		PYSPARK_PYTHON=$(ENGINES41_PY) PYSPARK_DRIVER_PYTHON=$(ENGINES41_PY) SPARK_LOCAL_IP=127.0.0.1 \
		$(ENGINES41_PY) -m pytest -q -p no:cacheprovider -x $(ENGINES41_TESTS)

## bench-engines: one window of BENCH_ENGINE_ROWS rows read by pyarrow, by Spark local[2] and by Ray through one flightd and two replicas, and by Spark 4.1's Iceberg changelog view on a copy-on-write copy (time, CPU, peak RSS; docs/BENCHMARKS-ENGINES.md; 10M rows: 2.5 minutes on a quiet 2-core machine once the venv is installed, about 35 under a load of 20 to 48)
BENCH_ENGINE_ROWS ?= 10000000
bench-engines: venv-engines $(SPARK41_DIR)/.installed
	$(GO) build -o $(BIN)/flightd ./cmd/flightd
	cd e2e/engines && PYTHONPATH=$(CURDIR)/clients/python PYSPARK_PYTHON=$(ENGINES_PY) \
		PYSPARK_DRIVER_PYTHON=$(ENGINES_PY) SPARK_LOCAL_IP=127.0.0.1 \
		$(ENGINES_PY) bench_engines.py --flightd $(BIN)/flightd --rows $(BENCH_ENGINE_ROWS) --spark41 $(SPARK41_DIR)
