"""Fixtures of the differential suite: one ZooKeeper, Kafka 3.9 and kafkapy on it.

Started once per test session (package-scoped: stopped after this package's tests), each broker in its own chroot (``/kafka``, ``/kafkapy``)
with ``brokers.SHARED_SETTINGS``, then both get ``state.prepare``.  Missing Java, Kafka or
ZooKeeper skips the suite, except with ``CI=true`` where it fails.

Each case's outcome is recorded in ``RESULTS``; at the end of the session the differences go
to ``REPORT_PATH`` (case id, field path, Kafka's value, ours) and the response fields no case
compared to ``COVERAGE_PATH``; a short summary is printed in the terminal.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.conformance import report
from tests.conformance.brokers import (
    KafkaProcess, find_kafka_home, kafkapy_process, wait_ready)
from tests.conformance.cases import Side
from tests.conformance.client import Connection
from tests.conformance.state import prepare
from tests.support.zookeeper_server import ZOOKEEPER_SKIP_REASON, ZooKeeperServer, zookeeper_classpath


def _missing(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"conformance suite needs it under CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="package")
def conformance_brokers():
    """(kafka Side, kafkapy Side), prepared alike; stopped when the package's tests are done,
    so the JVMs do not outlive them in a whole-suite run."""
    home = find_kafka_home()
    if home is None:
        _missing("no Kafka 3.9 (../shared/kafka_2.13-3.9.0 or $KAFKA_HOME) or no java")
    if zookeeper_classpath() is None:
        _missing(ZOOKEEPER_SKIP_REASON)
    base = Path(tempfile.mkdtemp(prefix="kafkapy-conformance-"))
    (base / "zk").mkdir()
    zk = ZooKeeperServer(base / "zk").start()
    kafka = KafkaProcess(home, base / "kafka", f"{zk.connect_string}/kafka").start()
    ours = kafkapy_process(base / "kafkapy", f"{zk.connect_string}/kafkapy").start()
    try:
        wait_ready(kafka.port, kafka.proc, kafka.output)
        wait_ready(ours.port, ours.proc, ours.output)
        sides = (Side("kafka", Connection("127.0.0.1", kafka.port)),
                 Side("kafkapy", Connection("127.0.0.1", ours.port)))
        for side in sides:
            prepare(side)
        yield sides
    finally:
        for stop in (ours.kill, kafka.stop, zk.stop):
            stop()
        if not os.environ.get("CONFORMANCE_KEEP"):     # keep logs for a post-mortem
            shutil.rmtree(base, ignore_errors=True)


def _full_run() -> bool:
    from tests.conformance.catalogue import CASES
    return len(report.RESULTS) == len(CASES)


def pytest_sessionfinish(session, exitstatus):
    if report.RESULTS:
        report.write(full=_full_run())


def pytest_terminal_summary(terminalreporter):
    if report.RESULTS:
        target = report.REPORT_PATH if _full_run() else report.PARTIAL_PATH
        terminalreporter.write_line(report.summary(target))
