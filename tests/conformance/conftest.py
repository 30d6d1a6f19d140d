"""Fixtures of the differential suite: one ZooKeeper, Kafka 3.9 and kafkapy on it; and, for
the consumer group protocol, Kafka 3.9 in KRaft mode beside another kafkapy.

Started once per test session (package-scoped: stopped after this package's tests), each
ZooKeeper-mode broker in its own chroot (``/kafka``, ``/kafkapy``) with
``brokers.SHARED_SETTINGS``, then both get ``state.prepare``.  ``consumer_protocol_brokers``
starts only when a test asks for it: Kafka 3.9 as one KRaft node with the protocol's preview
(``brokers.kraft_kafka``) and a kafkapy of its own in chroot ``/kafkapy-consumer`` (so the
consumer groups its cases make never show in the ZooKeeper pair's group listings); both get
``state.prepare_consumer_protocol``.  Missing Java, Kafka or ZooKeeper skips the suite,
except with ``CI=true`` where it fails.

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
    KafkaProcess, find_kafka_home, kafkapy_process, kraft_kafka, wait_ready)
from tests.conformance.cases import Side
from tests.conformance.client import Connection
from tests.conformance.state import prepare, prepare_consumer_protocol
from tests.support.zookeeper_server import ZOOKEEPER_SKIP_REASON, ZooKeeperServer, zookeeper_classpath


def _missing(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"conformance suite needs it under CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="package")
def conformance_base():
    """(Kafka's install dir, the run's temporary dir); skips without Kafka, Java or ZooKeeper."""
    home = find_kafka_home()
    if home is None:
        _missing("no Kafka 3.9 (../shared/kafka_2.13-3.9.0 or $KAFKA_HOME) or no java")
    if zookeeper_classpath() is None:
        _missing(ZOOKEEPER_SKIP_REASON)
    base = Path(tempfile.mkdtemp(prefix="kafkapy-conformance-"))
    yield home, base
    if not os.environ.get("CONFORMANCE_KEEP"):     # keep logs for a post-mortem
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="package")
def conformance_zookeeper(conformance_base):
    _, base = conformance_base
    (base / "zk").mkdir()
    zk = ZooKeeperServer(base / "zk").start()
    yield zk.connect_string
    zk.stop()


@pytest.fixture(scope="package")
def conformance_brokers(conformance_base, conformance_zookeeper):
    """(kafka Side, kafkapy Side), prepared alike; stopped when the package's tests are done,
    so the JVMs do not outlive them in a whole-suite run."""
    home, base = conformance_base
    kafka = KafkaProcess(home, base / "kafka", f"{conformance_zookeeper}/kafka").start()
    ours = kafkapy_process(base / "kafkapy", f"{conformance_zookeeper}/kafkapy").start()
    try:
        wait_ready(kafka.port, kafka.proc, kafka.output)
        wait_ready(ours.port, ours.proc, ours.output)
        sides = (Side("kafka", Connection("127.0.0.1", kafka.port)),
                 Side("kafkapy", Connection("127.0.0.1", ours.port)))
        for side in sides:
            prepare(side)
        yield sides
    finally:
        ours.kill()
        kafka.stop()


@pytest.fixture(scope="package")
def consumer_protocol_brokers(conformance_base, conformance_zookeeper):
    """(kafka Side, kafkapy Side) for the consumer group protocol: Kafka 3.9 in KRaft mode
    and a kafkapy of its own, prepared alike."""
    _, base = conformance_base
    ours = kafkapy_process(base / "kafkapy-consumer",
                           f"{conformance_zookeeper}/kafkapy-consumer").start()
    kafka = None
    try:
        kafka = kraft_kafka(base / "kafka-kraft")
        wait_ready(ours.port, ours.proc, ours.output)
        sides = (Side("kafka", Connection("127.0.0.1", kafka.port)),
                 Side("kafkapy", Connection("127.0.0.1", ours.port)))
        for side in sides:
            prepare_consumer_protocol(side)
        yield sides
    finally:
        ours.kill()
        if kafka is not None:
            kafka.stop()


def _full_run() -> bool:
    from tests.conformance.catalogue import CASES
    return all(c.id in report.RESULTS for c in CASES)


def pytest_sessionfinish(session, exitstatus):
    if report.RESULTS:
        report.write(full=_full_run())


def pytest_terminal_summary(terminalreporter):
    if report.RESULTS:
        target = report.REPORT_PATH if _full_run() else report.PARTIAL_PATH
        terminalreporter.write_line(report.summary(target))
