# Spark Connect servers for the Spark backend's integration tests (spark/,
# issue 22), installed under .tmp/ from PyPI and Maven Central by
# internal/testkit/testsvc/sparkconnect/install.sh:
#
#   .tmp/spark-connect-4.2  pyspark 4.2.0 + io.delta:delta-spark_4.2_2.13:4.4.0
#   .tmp/spark-connect-4.1  pyspark 4.1.4 + org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.11.0
#
# Runs on its own (make -f mk/spark.mk test-spark) or included by the
# Makefile (include mk/spark.mk). Needs Java 17 or newer (make java) and
# Python 3.10 or newer; the first install downloads about 900 MB.

TMP ?= $(CURDIR)/.tmp
GO ?= go
PYTHON ?= python3

SPARK42_DIR := $(TMP)/spark-connect-4.2
SPARK41_DIR := $(TMP)/spark-connect-4.1
SPARK42_PACKAGES := pyspark==4.2.0 io.delta:delta-spark_4.2_2.13:4.4.0
SPARK41_PACKAGES := pyspark==4.1.4 org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.11.0
SPARK_INSTALL := internal/testkit/testsvc/sparkconnect/install.sh

.PHONY: spark-connect test-spark test-integration bench-spark

## spark-connect: install the two Spark Connect servers of the Spark tests into .tmp/
spark-connect: $(SPARK42_DIR)/.installed $(SPARK41_DIR)/.installed

$(SPARK42_DIR)/.installed: $(SPARK_INSTALL) internal/testkit/testsvc/sparkconnect/ivysettings.xml
	PYTHON=$(PYTHON) $(SPARK_INSTALL) $(SPARK42_DIR) $(patsubst pyspark==%,%,$(word 1,$(SPARK42_PACKAGES))) $(word 2,$(SPARK42_PACKAGES))

$(SPARK41_DIR)/.installed: $(SPARK_INSTALL) internal/testkit/testsvc/sparkconnect/ivysettings.xml
	PYTHON=$(PYTHON) $(SPARK_INSTALL) $(SPARK41_DIR) $(patsubst pyspark==%,%,$(word 1,$(SPARK41_PACKAGES))) $(word 2,$(SPARK41_PACKAGES))

## test-spark: the Spark backend's tests against real Spark Connect servers (one of each version at a time)
test-spark: spark-connect
	SLUICE_SPARK_CONNECT_42=$(SPARK42_DIR) SLUICE_SPARK_CONNECT_41=$(SPARK41_DIR) \
		$(GO) test -race -count=1 -timeout 45m -v ./spark/...

## test-integration: the slow tests against real Spark Connect servers (issue 22): spark's integration tests, then the e2e tests of tables served through Spark by a real flightd (e2e/spark_test.go); one Spark server at a time; .ci/run runs it after make lint
test-integration: spark-connect
	SLUICE_SPARK_CONNECT_42=$(SPARK42_DIR) SLUICE_SPARK_CONNECT_41=$(SPARK41_DIR) \
		$(GO) test -count=1 -timeout 45m -v ./spark/...
	SLUICE_SPARK_CONNECT_42=$(SPARK42_DIR) SLUICE_SPARK_CONNECT_41=$(SPARK41_DIR) SLUICE_SKIP_PYTHON=1 \
		$(GO) test -count=1 -timeout 30m -v -run 'TestSpark' ./e2e/

## bench-spark: the same windows computed by Spark's change engines and natively, through one flightd (time, flightd and Spark CPU): docs/BENCHMARKS-SPARK.md
SPARK_BENCH_ROWS ?= 1000000
bench-spark: spark-connect
	SLUICE_SPARK_CONNECT_42=$(SPARK42_DIR) SLUICE_SPARK_CONNECT_41=$(SPARK41_DIR) SLUICE_SKIP_PYTHON=1 \
		SLUICE_SPARK_BENCH=1 SLUICE_SPARK_BENCH_ROWS=$(SPARK_BENCH_ROWS) SLUICE_SPARK_BENCH_OUT=$(CURDIR)/docs/BENCHMARKS-SPARK.md \
		$(GO) test -count=1 -timeout 60m -v -run '^TestSparkBench$$' ./e2e/
