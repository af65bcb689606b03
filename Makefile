# Two commands: `make run` (console on the local demo cluster) and `make test` (the whole suite).
# Both install what is missing first; every step is idempotent.

SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000
REDIS_PORT ?= 6380
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_RUN := redis-server default-jdk-headless maven python3-venv
APT_TEST := chromium

.PHONY: run test test-unit test-web test-web-postgres test-integration setup system-deps test-deps venv kafka-jars spark-jars lint migrate clean stop bench

setup: system-deps venv kafka-jars spark-jars

system-deps:
	@missing=""; \
	command -v redis-server >/dev/null || missing="$$missing redis-server"; \
	command -v java >/dev/null || missing="$$missing default-jdk-headless"; \
	command -v mvn >/dev/null || missing="$$missing maven"; \
	$(shell command -v python3) -c 'import venv, ensurepip' 2>/dev/null || missing="$$missing python3-venv"; \
	dpkg -s libldap2-dev >/dev/null 2>&1 || missing="$$missing libldap2-dev"; \
	dpkg -s libsasl2-dev >/dev/null 2>&1 || missing="$$missing libsasl2-dev"; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing >/dev/null; \
	fi

test-deps: system-deps
	@command -v chromium >/dev/null || { echo "installing Debian chromium"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null; }
	@# The LDAP tests start their own slapd with their own config: Debian's default directory is not made.
	@test -x /usr/sbin/slapd || { echo "installing Debian slapd"; \
	  echo "slapd slapd/no_configuration boolean true" | $(SUDO) debconf-set-selections; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq slapd >/dev/null; }
	@# `make test` runs the web layer on PostgreSQL too: tests/postgres.py starts a server of its own from Debian's binaries.
	@ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || { echo "installing Debian postgresql"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq postgresql >/dev/null; }

venv: $(VENV)/.installed
$(VENV)/.installed: requirements.txt
	@test -x $(PY) || python3 -m venv $(VENV)
	@$(PY) -m pip install -q --upgrade pip
	@$(PY) -m pip install -q -r requirements.txt
	@touch $@

kafka-jars: kafka/lib/.installed
kafka/lib/.installed: kafka/pom.xml
	@echo "fetching Apache Kafka jars from Maven Central (kafka/pom.xml)"
	@rm -rf kafka/lib
	@cd kafka && mvn -q -B dependency:copy-dependencies -DoutputDirectory=lib -DincludeScope=runtime
	@touch $@

spark-jars: analytics/lib/.installed
analytics/lib/.installed: analytics/pom.xml
	@echo "fetching Spark's Kafka connector jars from Maven Central (analytics/pom.xml)"
	@rm -rf analytics/lib
	@cd analytics && mvn -q -B dependency:copy-dependencies -DoutputDirectory=lib -DincludeScope=runtime
	@touch $@

migrate: setup
	@$(PY) manage.py migrate -v0
	@$(PY) manage.py collectstatic --noinput -v0

# SECURE=1 make run: the local cluster with TLS, SASL and ACLs (var/kafka-secure/), on the same ports;
# Kafka's tools log in as the console with --command-config var/secure/client.properties.
run: migrate
	@$(PY) manage.py ensureuser admin --role admin --password-file var/admin_password | sed 's/^/login: /'
	@echo "console: http://127.0.0.1:$(PORT)  (user admin, password in var/admin_password)"
	@$(if $(filter-out 0,$(SECURE)),echo "secure cluster: Kafka's tools take --command-config var/secure/client.properties")
	@PATH="$(CURDIR)/$(VENV)/bin:$$PATH" CONSOLE_PORT=$(PORT) REDIS_PORT=$(REDIS_PORT) \
	  $(if $(filter-out 0,$(SECURE)),DEVCLUSTER_SECURE=1) DEVCLUSTER_BACKUP=1 \
	  REDIS_URL=$${REDIS_URL:-redis://127.0.0.1:$(REDIS_PORT)/0} \
	  $(VENV)/bin/honcho start $(if $(KAFKA_BOOTSTRAP_SERVERS)$(KAFKA_CLUSTERS_FILE),redis web watcher worker analytics beat,)

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/mypy .

# The suite's three layers: unit (logic), web (pages, API and sockets in-process on a test Redis,
# no Kafka) and integration (a real 3-node Kafka and the whole console). The integration layer
# mostly waits on Kafka, so `make test` runs four chains side by side, each with its own Redis, data
# and Kafka ports: the integration layer on the shared cluster; the tests that kill brokers or move
# replicas (INTEGRATION_ALONE) with the Spark standalone test and the secured cluster's (a third cluster,
# its own ports 400 above the chain's), on a cluster of their own; the Spark runs, the API fuzzing and
# Kafka Connect with MirrorMaker 2 (INTEGRATION_SIDE, long and independent of the rest) on another; and
# lint with the Kafka-free layers, on an empty Kafka port range (their cluster "local" must not find a
# broker). The other chains' output follows the integration layer's; any failure fails `make test`.
TEST_REDIS_PORT ?= 6391
TEST_KAFKA_BASE_PORT ?= 29092
TEST_VAR_DIR ?= $(CURDIR)/var/test
INTEGRATION_ENV = TEST_REDIS_PORT=$(TEST_REDIS_PORT) TEST_KAFKA_BASE_PORT=$(TEST_KAFKA_BASE_PORT) TEST_VAR_DIR=$(TEST_VAR_DIR)
KAFKA_FREE_ENV = TEST_REDIS_PORT=$$(($(TEST_REDIS_PORT) + 1)) TEST_KAFKA_BASE_PORT=$$(($(TEST_KAFKA_BASE_PORT) + 100)) \
  TEST_VAR_DIR=$(TEST_VAR_DIR)-kafka-free
# (Redis 10 above the run's: the Kafka-free layer's xdist workers take the ports just above its own.)
ALONE_ENV = TEST_REDIS_PORT=$$(($(TEST_REDIS_PORT) + 10)) TEST_KAFKA_BASE_PORT=$$(($(TEST_KAFKA_BASE_PORT) + 300)) \
  TEST_VAR_DIR=$(TEST_VAR_DIR)-alone
# (Kafka 600 above the run's: its Connect worker, MirrorMaker 2 cluster and SASL broker keep the same offsets.)
SIDE_ENV = TEST_REDIS_PORT=$$(($(TEST_REDIS_PORT) + 20)) TEST_KAFKA_BASE_PORT=$$(($(TEST_KAFKA_BASE_PORT) + 600)) \
  TEST_VAR_DIR=$(TEST_VAR_DIR)-side
INTEGRATION_SIDE = tests/integration/test_analytics_live.py tests/integration/test_analytics_secured.py \
  tests/integration/test_api_fuzz.py tests/integration/test_connect.py tests/integration/test_connect_browser.py \
  tests/integration/test_connect_offsets.py tests/integration/test_connect_offsets_browser.py \
  tests/integration/test_connect_groups.py tests/integration/test_mirror.py
INTEGRATION_ALONE = tests/integration/test_faults.py tests/integration/test_faults_matrix.py \
  tests/integration/test_reassignment.py tests/integration/test_spark_standalone.py \
  tests/integration/test_secure_cluster.py tests/integration/test_alerts_faults.py \
  tests/integration/test_replica_lag.py
# The web layer mostly waits (sampling processes, timeouts), not computes: pytest-xdist workers run it
# side by side, each with its own Redis port (the ports just above the run's), data and Kafka ports
# (tests/workers.py). WEB_WORKERS=0 runs it in one process.
WEB_WORKERS ?= 4

test: test-deps setup
	@mkdir -p $(dir $(TEST_VAR_DIR))
	@free_log=$(TEST_VAR_DIR)-kafka-free.log; alone_log=$(TEST_VAR_DIR)-alone.log; side_log=$(TEST_VAR_DIR)-side.log; start=$$(date +%s); \
	{ $(MAKE) --no-print-directory lint; lint=$$?; $(KAFKA_FREE_ENV) $(PY) -m pytest tests/unit; layers=$$?; \
	  $(KAFKA_FREE_ENV) $(PY) -m pytest -n $(WEB_WORKERS) tests/web || layers=1; \
	  $(if $(filter postgres,$(TEST_DATABASE)),,TEST_DATABASE=postgres $(KAFKA_FREE_ENV) $(PY) -m pytest -n $(WEB_WORKERS) tests/web || layers=1;) \
	  [ $$lint = 0 ] && [ $$layers = 0 ]; } >$$free_log 2>&1 & free=$$!; \
	$(ALONE_ENV) $(PY) -m pytest $(INTEGRATION_ALONE) >$$alone_log 2>&1 & alone=$$!; \
	$(SIDE_ENV) $(PY) -m pytest $(INTEGRATION_SIDE) >$$side_log 2>&1 & side=$$!; \
	trap 'kill -INT $$free $$alone $$side 2>/dev/null' INT TERM; \
	$(INTEGRATION_ENV) $(PY) -m pytest tests/integration $(addprefix --ignore=,$(INTEGRATION_ALONE) $(INTEGRATION_SIDE)); integration=$$?; \
	wait $$alone; alone_exit=$$?; wait $$side; side_exit=$$?; wait $$free; kafka_free=$$?; \
	echo "== suite: $$(( ($$(date +%s) - start) / 60 )) min; integration layer exit $$integration, its broker-killing part exit $$alone_exit, its Spark, fuzzing and Connect part exit $$side_exit, lint, unit and web (and web on PostgreSQL) exit $$kafka_free"; \
	echo "== the integration tests that kill brokers or move replicas, and the Spark standalone test, on a cluster of their own ($$alone_log):"; cat $$alone_log; \
	echo "== the Spark runs, the API fuzzing and Kafka Connect with MirrorMaker 2, on a cluster of their own ($$side_log):"; cat $$side_log; \
	echo "== lint and the unit and web layers ($$free_log):"; cat $$free_log; \
	[ $$integration = 0 ] && [ $$alone_exit = 0 ] && [ $$side_exit = 0 ] && [ $$kafka_free = 0 ]

# The web layer on PostgreSQL (a server of its own, tests/postgres.py), as `make test` runs it beside
# the others; TEST_DATABASE=postgres runs any layer, or the whole suite, on PostgreSQL.
test-web-postgres: test-deps setup
	TEST_DATABASE=postgres $(INTEGRATION_ENV) $(PY) -m pytest -n $(WEB_WORKERS) tests/web $(PYTEST_ARGS)

# One layer at a time (no lint), e.g. `make test-unit`; pytest's options go in PYTEST_ARGS.
test-unit test-web test-integration: test-deps setup
	$(INTEGRATION_ENV) $(PY) -m pytest $(if $(filter test-web,$@),-n $(WEB_WORKERS)) tests/$(subst test-,,$@) $(PYTEST_ARGS)

bench: setup test-deps
	$(PY) -m bench.run

stop:
	-$(PY) manage.py connectworker down
	-$(PY) manage.py devcluster down --backup
	-$(if $(filter-out 0,$(SECURE)),DEVCLUSTER_SECURE=1) $(PY) manage.py devcluster down

clean: stop
	rm -rf var
