"""The pytest plugin's fixture logic: settings from markers and indirect params, scopes,
``fresh=True``, ``mock_clock=True``, overriding by closer fixtures; at the end the installed
plugin's fixtures against a real in-process broker and cluster (examples/ has more).

The logic tests run inner pytest sessions (pytester, in-process) whose conftest replaces
``kafkapy.testing.broker``/``cluster`` with recording fakes, so they start no broker and the
log of starts and stops is exact.
"""
from __future__ import annotations

import json

import pytest

pytest_plugins = ["pytester"]


def _plugin_args() -> tuple[str, ...]:
    """Load the plugin by name unless its entry point already does (twice is an error)."""
    from importlib.metadata import entry_points

    if any(ep.name == "kafkapy" for ep in entry_points(group="pytest11")):
        return ("-p", "no:cacheprovider")
    return ("-p", "kafkapy.testing.pytest_plugin", "-p", "no:cacheprovider")

_FAKE_CONFTEST = '''
import json, os, pytest
from kafkapy import testing

LOG = os.environ["KAFKAPY_FAKE_LOG"]

def _log(*event):
    with open(LOG, "a") as f:
        f.write(json.dumps(event, default=repr) + "\\n")

class _Fake:
    def __init__(self, kind, settings):
        self.kind, self.settings = kind, settings
    def __enter__(self):
        _log("start", self.kind, {k: (type(v).__name__ if k == "clock" else v)
                                 for k, v in self.settings.items()})
        self.bootstrap = "127.0.0.1:1"
        return self
    def __exit__(self, *exc):
        _log("stop", self.kind)
    async def __aenter__(self):
        return self.__enter__()
    async def __aexit__(self, *exc):
        self.__exit__()

@pytest.fixture(autouse=True, scope="session")
def _fakes():
    mp = pytest.MonkeyPatch()
    mp.setattr(testing, "broker", lambda **s: _Fake("broker", s))
    mp.setattr(testing, "cluster", lambda **s: _Fake("cluster", s))
    yield
    mp.undo()
'''

_TESTS = '''
import pytest

pytestmark = pytest.mark.kafka_broker(num_partitions=1, log_retention_ms=5)

def test_default(kafka_broker):
    assert kafka_broker.settings == {"num_partitions": 1, "log_retention_ms": 5}

@pytest.mark.kafka_broker(num_partitions=3)
def test_closest_marker_wins(kafka_broker):
    assert kafka_broker.settings == {"num_partitions": 3, "log_retention_ms": 5}

def test_same_settings_again(kafka_broker):
    pass

@pytest.mark.parametrize("kafka_broker", [{"num_partitions": 7}], indirect=True)
def test_indirect(kafka_broker):
    assert kafka_broker.settings["num_partitions"] == 7

@pytest.mark.kafka_broker(fresh=True, mock_clock=True)
def test_fresh(kafka_broker):
    assert "fresh" not in kafka_broker.settings
    assert kafka_broker.settings["clock"].__class__.__name__ == "MockClock"

def test_cluster_default_three(kafka_cluster):
    assert kafka_cluster.settings == {"brokers": 3}

async def test_async(async_kafka_broker):
    assert async_kafka_broker.settings["num_partitions"] == 1
'''


def _run(pytester: pytest.Pytester, tmp_path, *args: str) -> list[list]:
    log = tmp_path / "events.jsonl"
    pytester.makeconftest(_FAKE_CONFTEST)
    pytester.makepyfile(test_inner=_TESTS)
    pytester.makeini("[pytest]\nasyncio_mode = auto\n"
                     "asyncio_default_fixture_loop_scope = function\n")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KAFKAPY_FAKE_LOG", str(log))
        result = pytester.runpytest_inprocess(*_plugin_args(), *args)
    result.assert_outcomes(passed=7)
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_function_scope_starts_and_stops_one_per_test(pytester, tmp_path):
    events = _run(pytester, tmp_path)
    starts = [e for e in events if e[0] == "start"]
    stops = [e for e in events if e[0] == "stop"]
    assert len(starts) == len(stops) == 7
    # Each start is stopped before the next test's start.
    assert [e[0] for e in events] == ["start", "stop"] * 7


def test_session_scope_shares_per_distinct_settings(pytester, tmp_path):
    events = _run(pytester, tmp_path, "--kafkapy-scope=session")
    starts = [e for e in events if e[0] == "start"]
    # default settings (shared by test_default and test_same_settings_again), closest marker,
    # indirect, fresh (its own), cluster, async (always its own)
    assert len(starts) == 6, starts
    # the fresh and async brokers stop at their tests' ends, the shared ones at the end
    # (last started, first stopped)
    assert [e[0] for e in events] == ["start"] * 4 + ["stop"] + ["start"] * 2 + ["stop"] * 5
    assert events[-4] == ["stop", "cluster"]


def test_ini_option_selects_scope(pytester, tmp_path):
    pytester.makeini("[pytest]\nkafkapy_scope = module\nasyncio_mode = auto\n"
                     "asyncio_default_fixture_loop_scope = function\n")
    log = tmp_path / "events.jsonl"
    pytester.makeconftest(_FAKE_CONFTEST)
    pytester.makepyfile(test_inner=_TESTS)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KAFKAPY_FAKE_LOG", str(log))
        result = pytester.runpytest_inprocess(*_plugin_args())
    result.assert_outcomes(passed=7)
    assert sum(1 for line in log.read_text().splitlines() if '"start"' in line) == 6


def test_module_fixture_overrides_plugin_fixture(pytester):
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_override='''
        import pytest

        @pytest.fixture
        def kafka_cluster():
            return "mine"

        def test_it(kafka_cluster):
            assert kafka_cluster == "mine"
    ''')
    result = pytester.runpytest_inprocess(*_plugin_args())
    result.assert_outcomes(passed=1)


def test_positional_marker_arguments_are_refused(pytester):
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_bad='''
        import pytest

        @pytest.mark.kafka_broker(3)
        def test_it(kafka_broker):
            pass
    ''')
    result = pytester.runpytest_inprocess(*_plugin_args())
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*keywords only*"])


# -- the installed plugin, real brokers -------------------------------------------------------


@pytest.mark.kafka_broker(num_partitions=2)
def test_kafka_broker_fixture_is_a_running_broker(kafka_broker):
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap)
    producer.send("plugin", b"v", partition=1).get(timeout=10)
    producer.close()
    assert [r.value for r in kafka_broker.records("plugin", 1)] == [b"v"]
    assert kafka_broker.records("plugin", 0) == []


@pytest.mark.kafka_cluster(brokers=2)
def test_kafka_cluster_fixture_is_a_running_cluster(kafka_cluster):
    assert len(kafka_cluster.brokers) == 2
    assert kafka_cluster.bootstrap.count(",") == 1
    kafka_cluster.create_topic("plugin", partitions=1, replication_factor=2)
    assert sorted(kafka_cluster.wait_isr("plugin", 0)) == [1, 2]


@pytest.mark.kafka_broker(mock_clock=True)
async def test_async_kafka_broker_runs_in_the_test_loop(async_kafka_broker):
    import inspect

    assert inspect.iscoroutinefunction(async_kafka_broker.create_topic)  # the async handle
    assert async_kafka_broker.clock is not None
    before = async_kafka_broker.clock.time_ms()
    await async_kafka_broker.advance(1_000)
    assert async_kafka_broker.clock.time_ms() == before + 1_000
