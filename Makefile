# cdc-lakehouse: `make demo` (set-up + sample pipeline) and `make test` (set-up + whole suite).
# Everything is created inside the checkout: .venv, .cache (Maven + jars), lakehouse/.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
MVN := mvn -q -B -s jvm/settings.xml -Dmaven.repo.local=$(CURDIR)/.cache/m2
SPARK_JARS := .cache/jars/spark/.synced
FUNCTIONS_JAR := .cache/jars/spark/cdc-lakehouse-functions.jar
FUNCTIONS_SRC := $(wildcard jvm/functions/src/main/java/cdc/lakehouse/*.java)
CDS_ARCHIVE := .cache/cds/lakehouse.jsa
export LAKEHOUSE_DIR ?= $(CURDIR)/lakehouse
# apt-get needs root: CI runs as root, a developer's machine through sudo.
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: setup venv jars cds demo test lint sqlfluff pytest clean kafka-up kafka-down bench kafka-jars kafka-status \
	postgres-bin postgres-up postgres-down cluster-up cluster-down test-cluster \
	sources-bin sources-up sources-down debezium-jars

setup: venv jars cds

venv: $(BIN)/.installed

$(BIN)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

jars: $(SPARK_JARS) $(FUNCTIONS_JAR)

# Delta and the Spark Kafka connector from Maven Central; pyspark's own jars are not copied twice.
$(SPARK_JARS): jvm/pom.xml jvm/settings.xml $(BIN)/.installed
	rm -rf .cache/jars/resolved
	$(MVN) -f jvm/pom.xml dependency:copy-dependencies -DincludeScope=runtime \
	    -DoutputDirectory=$(CURDIR)/.cache/jars/resolved
	$(BIN)/python -m lakehouse.jars .cache/jars/resolved .cache/jars/spark
	touch $@

# The project's own JVM functions (jvm/functions: the exact-JSON marking of macros/utils/cdc_json.sql),
# compiled by the JDK against pyspark's jars into the same folder, so that every Spark session of
# the lakehouse has them on its classpath. After the sync above, which empties that folder.

$(FUNCTIONS_JAR): $(FUNCTIONS_SRC) $(SPARK_JARS)
	rm -rf .cache/functions-classes
	javac --release 17 -Xlint:all,-path -Werror -d .cache/functions-classes \
	    -cp "$$($(BIN)/python -c 'import pathlib, pyspark; print(pathlib.Path(pyspark.__file__).parent / "jars")')/*:.cache/jars/spark/*" \
	    $(FUNCTIONS_SRC)
	jar --create --file $@ -C .cache/functions-classes .

# The driver JVM's class archive (ingestion/lakehouse/cds.py): a build of the sample in a
# throw-away lakehouse dumps the classes it loaded, and every Spark session then starts from them.
# Written again when the jars or the Python packages change (the JVM would ignore a stale one).
cds: $(CDS_ARCHIVE)

$(CDS_ARCHIVE): $(SPARK_JARS) $(FUNCTIONS_JAR) $(BIN)/.installed
	$(BIN)/python -m lakehouse.cds

demo: setup
	$(BIN)/lakehouse ingest --from-file samples/debezium_inventory.jsonl --format debezium-json
	$(BIN)/lakehouse build
	$(BIN)/lakehouse sql "select source_table, pk, last_op, row from gold.cdc_current_state order by source_table, pk"

lint: sqlfluff
	$(BIN)/ruff check ingestion tests bench

sqlfluff: setup
	LAKEHOUSE_DIR=$(CURDIR)/.cache/lint-lakehouse $(BIN)/sqlfluff lint models

# Two workers on two cores: a test spends much of its time in one thread (a JVM starting, dbt
# compiling, Spark planning), so two at once finish the suite sooner. Each test file stays in
# one worker (its module fixtures build once). PYTEST_WORKERS=0 runs them one at a time.
PYTEST_WORKERS ?= 2

# --durations: the slowest tests, in every run's log, to keep the suite's time in view.
pytest: setup kafka-jars postgres-bin sources-bin debezium-jars
	$(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist loadfile --durations=40 --durations-min=15

test: setup lint pytest

clean:
	rm -rf lakehouse target logs dbt_packages

# A real single-node Kafka (KRaft) from Maven Central jars (jvm/kafka-pom.xml -> .cache/jars/kafka),
# on 127.0.0.1 only; data and logs in .cache/kafka (or LAKEHOUSE_KAFKA_DIR). KAFKA_PORT=9092.
kafka-jars: venv
	$(BIN)/lakehouse kafka jars

kafka-up: kafka-jars
	$(BIN)/lakehouse kafka up $(if $(KAFKA_PORT),--port $(KAFKA_PORT))

kafka-down: venv
	$(BIN)/lakehouse kafka down

kafka-status: venv
	$(BIN)/lakehouse kafka status

# The shared-metastore / cluster setup (README "Run it on your cluster"). PostgreSQL is Debian's
# package, installed with apt-get when its server programs are missing; `lakehouse postgres up`
# runs it on 127.0.0.1 (data in .cache/postgres) and prints the LAKEHOUSE_METASTORE_* to export.
postgres-bin: venv
	@$(BIN)/lakehouse postgres bin >/dev/null 2>&1 || { \
	    echo "PostgreSQL server programs not found: installing Debian's postgresql (apt-get)"; \
	    $(SUDO) apt-get update -q && \
	    $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql && \
	    $(BIN)/lakehouse postgres bin; }

postgres-up: postgres-bin
	$(BIN)/lakehouse postgres up

postgres-down: venv
	$(BIN)/lakehouse postgres down

# The real-database harness (docs/real-databases.md): source PostgreSQL and MariaDB from Debian's
# packages (mariadb-server installed with apt-get when missing), Debezium 3.5 from Maven Central.
sources-bin: postgres-bin
	@$(BIN)/lakehouse source bin mariadb >/dev/null 2>&1 || { \
	    echo "MariaDB server programs not found: installing Debian's mariadb-server (apt-get)"; \
	    $(SUDO) apt-get update -q && \
	    $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends mariadb-server && \
	    $(BIN)/lakehouse source bin mariadb; }

sources-up: sources-bin
	$(BIN)/lakehouse source up postgres
	$(BIN)/lakehouse source up mariadb

sources-down: venv
	$(BIN)/lakehouse source down postgres
	$(BIN)/lakehouse source down mariadb

debezium-jars: venv
	$(BIN)/lakehouse debezium jars

# A Spark standalone master (127.0.0.1:7077, web UI :8080) and 2 workers from the pyspark wheel.
cluster-up: setup
	$(BIN)/lakehouse cluster up

cluster-down: venv
	$(BIN)/lakehouse cluster down

# The cluster test alone: PostgreSQL metastore, master + 2 workers, ingest, serve, dbt --target thrift.
test-cluster: setup postgres-bin
	$(BIN)/pytest -q tests/python/test_cluster.py
