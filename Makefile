# kafkapy — the README's two commands are the contract: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
STAMP  := $(VENV)/.installed
PROPS  ?= config/server.properties

.PHONY: run test test-unit bench venv system-deps java-clients clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e '.[test,spark]'
	touch $(STAMP)

venv: $(STAMP)

## Start one broker on 127.0.0.1:9092 with the embedded metadata store.
run: $(STAMP)
	$(PY) -m kafkapy $(PROPS)

## Install what the tests need (Debian packages as root), then run every test.
test: $(STAMP) system-deps java-clients
	$(PY) -m pytest -q -ra --durations=15

test-unit: $(STAMP)
	$(PY) -m pytest -q tests/unit

system-deps:
	bash scripts/install_test_deps.sh

java-clients: $(STAMP)
	PIP=$(PIP) bash scripts/fetch_java_clients.sh .cache/java-clients

## Throughput, latency, CPU and memory against kafkapy and the tansu peer; timer-wheel costs.
bench: $(STAMP)
	$(PY) bench/run_bench.py $(BENCH_ARGS)
	$(PY) bench/bench_timers.py

clean:
	rm -rf $(VENV) .cache build *.egg-info data
