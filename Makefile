# Fresh machine: `make run` starts a dev server, `make test` runs every check.
# The interpreter .venv is built on: Debian's own python3, the one the image ships,
# when it is 3.11+ (scripts/pick-python says why); `make PYTHON=...` overrides it.
PYTHON ?= $(shell sh scripts/pick-python)
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
PYTEST_ARGS ?=

.PHONY: run test lint typecheck unit clean bench bench-tools

# An environment made with another interpreter (an older checkout's, on pyenv's
# python3) is made again.
VENV_PYTHON := $(shell $(BIN)/python -c 'import sys; print(sys.base_prefix + "-" + sys.version.split()[0])' 2>/dev/null)
WANT_PYTHON := $(shell $(PYTHON) -c 'import sys; print(sys.base_prefix + "-" + sys.version.split()[0])' 2>/dev/null)
ifneq ($(VENV_PYTHON),$(WANT_PYTHON))
.PHONY: $(STAMP)
endif

$(STAMP): pyproject.toml
	$(PYTHON) -m venv --clear $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/coffer server -dev

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

# pytest exits 5 when it collected nothing; scripts/run_pytest.py turns that (and an
# all-skipped run) into a failure. COV_FLOOR is the suite's measured line coverage of
# node, api, consensus and sdk (in-process only): raise it as coverage grows, never lower
# it (docs/architecture.md, "Guards"). The whole suite runs in two stages
# (scripts/test_suite.py): in-process suites on TEST_JOBS cores, then the cluster,
# browser and container suites alone. `make test PYTEST_ARGS=tests/api COV_ARGS=`
# runs a subset in one process without the floor; `make test COV_ARGS=` the whole suite
# without coverage.
COV_FLOOR := 90
TEST_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
COV_ARGS  ?= --cov=node --cov=api --cov=consensus --cov=sdk --cov-report=term:skip-covered \
             --cov-fail-under=$(COV_FLOOR)
test: lint typecheck
ifeq ($(strip $(PYTEST_ARGS)),)
	$(BIN)/python scripts/test_suite.py --jobs $(TEST_JOBS) $(if $(strip $(COV_ARGS)),--cov-floor $(COV_FLOOR))
else
	$(BIN)/python scripts/run_pytest.py -q $(COV_ARGS) $(PYTEST_ARGS)
endif

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .coverage .coverage.*

# Benchmarks (docs/performance.md): etcd and HAProxy from Debian, profilers from PyPI.
# `make bench` runs every suite and rewrites the tables in docs/performance.md;
# `make bench BENCH_SUITES=standard` runs one. Results: bench/results/*.jsonl.
BENCH_SUITES ?= standard profile scale
BENCH_STAMP  := $(VENV)/.bench-stamp

$(BENCH_STAMP): $(STAMP) pyproject.toml
	$(BIN)/pip install --quiet -e '.[test,bench]'
	touch $(BENCH_STAMP)

bench-tools: $(BENCH_STAMP)
	@command -v etcd >/dev/null && command -v haproxy >/dev/null || { \
	  apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server haproxy; }

bench: bench-tools
	@for suite in $(BENCH_SUITES); do \
	  rm -f bench/results/$$suite.jsonl; \
	  echo "== bench suite $$suite"; \
	  $(BIN)/python -m bench.run --suite $$suite --out bench/results/$$suite.jsonl --update-docs \
	    || exit 1; \
	done

# Compose deployment (docs/deploy.md) and container chaos (docs/chaos.md). Images are
# built locally from a debootstrap base (deploy/build-base.sh, once); nothing is pulled.
# `make cluster-up COFFER_PROJECT=name` runs a second cluster beside the first.
COFFER_PROJECT ?= coffer
# `make cluster-up COFFER_SEAL=pkcs11`: the HSM variant (deploy/compose.hsm.yaml, SoftHSM2).
COFFER_SEAL    ?= shamir
CHAOS_ARGS     ?= all --up --down --record docs/chaos.md

.PHONY: images cluster-up cluster-down chaos replication-up replication-down chaos-dr

images: $(STAMP)
	PYTHON=$(BIN)/python deploy/build-images.sh

cluster-up: $(STAMP)
	PYTHON=$(BIN)/python $(BIN)/python deploy/clusterctl.py -p $(COFFER_PROJECT) --seal $(COFFER_SEAL) up

cluster-down:
	$(PYTHON) deploy/clusterctl.py -p $(COFFER_PROJECT) down

chaos: $(STAMP)
	CHAOS_COMMAND="make chaos" PYTHON=$(BIN)/python $(BIN)/python -m chaos.compose $(CHAOS_ARGS)

# Two sites for cross-cluster replication (deploy/compose.replication.yaml, docs/replication.md
# "Compose"): a primary and a DR secondary cluster, each behind its own HAProxy.
REPLICATION_PROJECT ?= coffer-repl

replication-up: $(STAMP)
	PYTHON=$(BIN)/python $(BIN)/python deploy/clusterctl.py --replication -p $(REPLICATION_PROJECT) up

replication-down:
	$(PYTHON) deploy/clusterctl.py --replication -p $(REPLICATION_PROJECT) down

chaos-dr: $(STAMP)
	CHAOS_COMMAND="make chaos-dr" PYTHON=$(BIN)/python $(BIN)/python -m chaos.compose dr-failover \
	  --up --down --record docs/chaos.md
