# The Paimon fixtures of format/paimon's tests (testdata/paimon, issue 21),
# written by Paimon's own writers: pypaimon (PyPI) in a venv of its own,
# and Paimon's Java core (org.apache.paimon:paimon-bundle from Maven
# Central) driven by the program in testdata/paimon/gen/java. Not part of
# make test: the tests read only what this commits. See
# testdata/paimon/README.md.
#
# Runs on its own (make -f mk/paimon.mk paimon-fixtures) or included by the
# Makefile (include mk/paimon.mk). Needs Python 3.10 or newer, Java 17 or
# newer and Maven.

TMP ?= $(CURDIR)/.tmp
PYTHON ?= python3
MVN ?= mvn

PYPAIMON_VERSION := 2.1.0
PAIMON_VENV := $(TMP)/venv-paimon
PAIMON_M2 := $(TMP)/m2
PAIMON_OUT := testdata/paimon
PAIMON_GEN := $(PAIMON_OUT)/gen

.PHONY: paimon-fixtures paimon-venv

## paimon-venv: pypaimon in its own venv under .tmp/venv-paimon
paimon-venv: $(PAIMON_VENV)/.pypaimon-$(PYPAIMON_VERSION)

$(PAIMON_VENV)/.pypaimon-$(PYPAIMON_VERSION):
	$(PYTHON) -m venv $(PAIMON_VENV)
	$(PAIMON_VENV)/bin/python -m pip install --quiet --disable-pip-version-check pypaimon==$(PYPAIMON_VERSION)
	touch $@

## paimon-fixtures: rewrite the Paimon tables of testdata/paimon and what their writers' reads return (pypaimon 2.1, paimon-bundle 1.3.0; not part of test)
paimon-fixtures: paimon-venv
	rm -rf $(PAIMON_OUT)/warehouse $(PAIMON_OUT)/expected
	$(PAIMON_VENV)/bin/python $(PAIMON_GEN)/pypaimon_fixtures.py $(PAIMON_OUT)
	$(PAIMON_VENV)/bin/python $(PAIMON_GEN)/pypaimon_refs.py $(PAIMON_OUT)
	$(MVN) -q -B -Dmaven.repo.local=$(PAIMON_M2) -f $(PAIMON_GEN)/java/pom.xml compile exec:java \
		-Dexec.args=$(CURDIR)/$(PAIMON_OUT)
	rm -rf $(PAIMON_GEN)/__pycache__

## paimon-java: the classpath of Paimon's Java core (paimon-bundle, jars from Maven Central into .tmp/m2) with the classes of testdata/paimon/gen/java, for e2e/protect_paimon_test.go (Paimon's own expiry)
PAIMON_JAVA_CLASSPATH := $(TMP)/paimon-java/classpath
.PHONY: paimon-java
paimon-java: $(PAIMON_JAVA_CLASSPATH)
$(PAIMON_JAVA_CLASSPATH): $(PAIMON_GEN)/java/pom.xml $(wildcard $(PAIMON_GEN)/java/src/main/java/sluice/*.java)
	@mkdir -p $(dir $@)classes
	$(MVN) -B -q -f $(PAIMON_GEN)/java/pom.xml -Dmaven.repo.local=$(PAIMON_M2) dependency:build-classpath \
		-Dmdep.outputFile=$@.deps
	javac -nowarn -cp "$$(cat $@.deps)" -d $(dir $@)classes $(PAIMON_GEN)/java/src/main/java/sluice/*.java
	echo "$(dir $@)classes:$$(cat $@.deps)" > $@.tmp
	mv $@.tmp $@
