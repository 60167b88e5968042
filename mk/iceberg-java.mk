# The Iceberg fixtures that only Iceberg's own Java library writes
# (feed/testdata/fixtures/java_*): equality-delete upserts as Flink's upsert
# writer commits them, on format v3 tables (see
# feed/testdata/fixtures/gen/README.md). The generator is a small Maven
# project (iceberg-core, iceberg-data, iceberg-parquet from Maven Central),
# cached under .tmp/m2; it writes the tables in a Hadoop catalog under
# /sluice-fixtures/java and copies them with what Iceberg's generic reader
# reads at every snapshot.
#
# Runs on its own (make -f mk/iceberg-java.mk iceberg-java-fixtures) or
# included by the Makefile. Needs Java 17 or newer, Maven and write access
# to /sluice-fixtures.

TMP ?= $(CURDIR)/.tmp
MVN ?= mvn

ICEBERG_JAVA_M2 := $(TMP)/m2
ICEBERG_JAVA_GEN := feed/testdata/fixtures/gen/java

.PHONY: iceberg-java-fixtures

## iceberg-java-fixtures: rewrite feed/testdata/fixtures/java_* (Iceberg 1.11 Java library: equality-delete upserts on v3; not part of test)
iceberg-java-fixtures:
	$(MVN) -q -B -Dmaven.repo.local=$(ICEBERG_JAVA_M2) -f $(ICEBERG_JAVA_GEN)/pom.xml compile exec:java \
		-Dexec.args=$(CURDIR)/feed/testdata/fixtures
	rm -rf $(ICEBERG_JAVA_GEN)/target
