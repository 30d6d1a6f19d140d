"""Shared fixtures: a real broker process per test module or per test; how parallel test
processes (pytest-xdist, ``make test``) share the tests out.

``make test`` runs the suite in several worker processes with ``--dist loadgroup``: each test
module goes whole to one worker (its module fixtures start once), and modules that share an
expensive session fixture go to the same worker (``_SHARED_SESSIONS``), so the Spark session,
the compiled Java clients and the conformance suite's Kafka broker start once.  Groups that
take longest are handed out first (``_FIRST``), so none of them starts last and runs alone.
Each worker draws its ports from a range of its own (``kafkapy.testing._broker.free_port``).
"""
from __future__ import annotations

from collections import defaultdict

import pytest

from tests.support.broker_process import BrokerProcess


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """A broker shared by the tests of one module."""
    b = BrokerProcess(tmp_path_factory.mktemp("broker") / "logs").start()
    yield b
    b.stop()


@pytest.fixture
def fresh_broker(tmp_path):
    """A broker of this test's own, for restart and crash tests."""
    b = BrokerProcess(tmp_path / "logs").start()
    yield b
    b.kill()


# A fixture name -> the group of every module with a test using it.
_SHARED_SESSIONS = {"spark": "spark", "spark_harness": "spark", "java_clients": "java-clients",
                    "conformance_brokers": "conformance"}
# Path prefixes whose modules form one group (package-scoped fixtures).
_SHARED_PACKAGES = {"tests/conformance/": "conformance", "tests/spark/": "spark"}
# Groups handed out first, in this order: the longest ones.
_FIRST = ("conformance", "spark", "tests/mixed/", "java-clients", "tests/cluster/")


def _module_of(item) -> str:
    return item.nodeid.split("::", 1)[0]


def _groups(items) -> dict[str, str]:
    """Module path -> its xdist group."""
    groups = {}
    for item in items:
        module = _module_of(item)
        shared = next((g for prefix, g in _SHARED_PACKAGES.items() if module.startswith(prefix)),
                      None)
        shared = shared or next((g for f, g in _SHARED_SESSIONS.items()
                                 if f in getattr(item, "fixturenames", ())), None)
        if shared or module not in groups:
            groups[module] = shared or groups.get(module) or module
    return groups


def pytest_collection_modifyitems(config, items):
    if not config.pluginmanager.hasplugin("xdist"):
        return
    groups = _groups(items)
    by_group = defaultdict(list)
    for item in items:
        group = groups[_module_of(item)]
        item.add_marker(pytest.mark.xdist_group(group))
        by_group[group].append(item)
    def rank(group: str) -> int:
        return next((i for i, first in enumerate(_FIRST) if group.startswith(first)), len(_FIRST))
    order = sorted(by_group, key=rank)      # stable: collection order within a rank
    items[:] = [item for group in order for item in by_group[group]]
