"""Shared fixtures: a real broker process per test module or per test; how parallel test
processes (pytest-xdist, ``make test``) share the tests out.

``make test`` runs the suite in several worker processes (pytest-xdist): each test module goes
whole to one worker (its module fixtures start once), and the modules of a folder that share an
expensive session fixture go to the same worker (``_SHARED``), so the Spark session, the
compiled Java clients and the conformance suite's Kafka broker start once.  Groups that take
longest are handed out first (``_FIRST``), so none of them starts last and runs alone.
Each worker draws its ports from a range of its own (``kafkapy.testing._broker.free_port``).
"""
from __future__ import annotations

import os

import pytest

from tests.support.broker_process import BrokerProcess
from tests.support.kafka_jvm import SCRIPT_ENV


def pytest_configure(config):
    """Every Kafka 3.9 script a test starts inherits ``SCRIPT_ENV`` (tests/support/kafka_jvm.py:
    the classpath without a grep per jar)."""
    os.environ.update(SCRIPT_ENV)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """A broker shared by the tests of one module."""
    with BrokerProcess(tmp_path_factory.mktemp("broker") / "logs").start() as b:
        yield b


@pytest.fixture
def fresh_broker(tmp_path):
    """A broker of this test's own, for restart and crash tests."""
    b = BrokerProcess(tmp_path / "logs").start()
    yield b
    b.kill()


# Path prefixes whose modules form one group: they share a session or package fixture (the
# conformance suite's Kafka and kafkapy brokers, the Spark session, the compiled Java clients).
_SHARED = {"tests/conformance/": "conformance", "tests/spark/": "spark",
           "tests/clients/": "clients"}
# Groups handed out first, in this order: the longest ones.
_FIRST = ("conformance", "spark", "tests/mixed/", "clients", "tests/faults/", "tests/cluster/")


def _group(nodeid: str) -> str:
    """The group of a test: its module's, or the shared one of the module's folder."""
    module = nodeid.split("::", 1)[0]
    return next((g for prefix, g in _SHARED.items() if module.startswith(prefix)), module)


def _rank(group: str) -> int:
    return next((i for i, first in enumerate(_FIRST) if group.startswith(first)), len(_FIRST))


def pytest_collection_modifyitems(config, items):
    """The longest groups first (every worker collects, and orders, alike)."""
    items.sort(key=lambda item: _rank(_group(item.nodeid)))     # stable within a rank


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Whole groups to a worker, in collection order (xdist's loadscope, scoped by ``_group``)."""
    from xdist.scheduler import LoadScopeScheduling

    class _ByGroup(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _group(nodeid)

    config.option.loadscopereorder = False
    return _ByGroup(config, log)


def pytest_terminal_summary(terminalreporter):
    """One line on the machine the suite ran on, for reading a slow run's log: CPUs, the
    load average at the end, and whether Kafka's JVMs had the class-data archive."""
    import os

    from tests.support.kafka_jvm import CDS_ARCHIVE
    load = "/".join(f"{x:.1f}" for x in os.getloadavg())
    archive = "built" if CDS_ARCHIVE.is_file() else "missing"
    terminalreporter.write_line(f"machine: {os.cpu_count()} CPUs, load average {load}; "
                                f"Kafka class-data archive {archive}")
