"""Differential conformance of the consumer group protocol (KIP-848), against Kafka 3.9 in
KRaft mode with the protocol's preview (its ZooKeeper mode does not serve it).

``test_consumer_protocol``: every case of ``cases/consumer_groups.py`` (ConsumerGroupHeartbeat
and ConsumerGroupDescribe, each version kafkapy advertises; v1 goes to Kafka at v0) sent to
both, compared field by field as the rest of the suite (``runner.run_case``), with random
member ids as labels and multi-member assignments as counts plus coverage
(``consumer_shape``); where kafkapy follows Kafka 4.x, ``known.KAFKA_4`` says so.

``test_java_consumer_session``: the stock Java consumer (kafka-clients 4.3,
``group.protocol=consumer``, ``ConsumerSession.java``) joins a group on ``cgp-four`` and
``cgp-two``, reads all their records, commits and leaves, once against each broker; what it
saw (the partitions its rebalance callbacks were given, records, member epoch, committed
offsets, assignment) must be the same line for line, and so must what each broker then holds
(ConsumerGroupDescribe of the group, its offsets through OffsetFetch).
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conformance import report
from tests.conformance.cases import KRAFT, Case
from tests.conformance.catalogue import KRAFT_CASES
from tests.conformance.consumer_shape import shaped
from tests.conformance.known import KNOWN_DIFFERENCES
from tests.conformance.runner import run_case
from tests.conformance.state import CGP_FOUR, CGP_TWO, KRAFT_RECORDS, KRAFT_TOPICS
from tests.support.java_clients import client_jars, compiled


def _param(case: Case):
    reason = KNOWN_DIFFERENCES.get(case.id)
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(case, id=case.id, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in KRAFT_CASES])
def test_consumer_protocol(case, consumer_protocol_brokers):
    differences, kafka_tree = run_case(case, consumer_protocol_brokers)
    report.record(case, differences, kafka_tree)
    assert not differences, f"{case.id} differs from Kafka 3.9 (KRaft):\n" + "\n".join(
        f"  {d}" for d in differences)


# -- the Java consumer (kafka-clients 4.3, group.protocol=consumer) against both -------------

SESSION_SOURCE = Path(__file__).with_name("ConsumerSession.java")
SESSION_CLIENT = "4.3.0"
SESSION_GROUP = "cgp-java-session"
SESSION_TOPICS = (CGP_FOUR, CGP_TWO)
SESSION_TIMEOUT_S = 60
_SESSION_LINES = ("EVENT ", "RECORDS ", "EPOCH ", "COMMITTED ", "ASSIGNMENT ", "CLOSED", "ERROR ")


@pytest.fixture(scope="module")
def consumer_session(tmp_path_factory):
    """ConsumerSession.java compiled against kafka-clients 4.3 (skips without a JDK)."""
    client_jars((SESSION_CLIENT,))
    return compiled(SESSION_CLIENT, [SESSION_SOURCE], tmp_path_factory.mktemp("session"))


def _session(client, side) -> list[str]:
    host, port = side.conn.address
    records = sum(KRAFT_TOPICS[t] for t in SESSION_TOPICS) * KRAFT_RECORDS
    proc = subprocess.run(
        client.command("ConsumerSession", f"{host}:{port}", SESSION_GROUP,
                       ",".join(SESSION_TOPICS), str(records), str(SESSION_TIMEOUT_S * 1000)),
        capture_output=True, text=True, timeout=SESSION_TIMEOUT_S * 2)
    lines = [line for line in proc.stdout.splitlines() if line.startswith(_SESSION_LINES)]
    assert proc.returncode == 0 and lines[-1:] == ["CLOSED"], (
        f"{side.name}: the session failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr[-3000:]}")
    return lines


def _observed(lines: list[str]) -> list[str]:
    """The session's lines with its rebalance callbacks summed up per kind (the partitions
    ever assigned, revoked, lost): whether the client learns of two topics' partitions in one
    callback or two depends on when its metadata arrives, not on the broker."""
    events: dict[str, set] = {"ASSIGNED": set(), "REVOKED": set(), "LOST": set()}
    for line in lines:
        if line.startswith("EVENT "):
            _, kind, *parts = line.split(" ")
            events[kind].update(p for p in "".join(parts).split(",") if p)
    summary = [f"{kind} {','.join(sorted(ps))}" for kind, ps in events.items()]
    return summary + [line for line in lines if not line.startswith("EVENT ")]


def _after_session() -> list[Case]:
    """What each broker holds once the member left: the group, its committed offsets."""
    describe = Case("java-session-group", lambda s: {
        "group_ids": [SESSION_GROUP], "include_authorized_operations": False},
        reference=KRAFT, shape=shaped(), api_key=69, version=0)
    offsets = Case("java-session-offsets", lambda s: {"groups": [
        {"group_id": SESSION_GROUP, "member_id": None, "member_epoch": -1, "topics": None}],
        "require_stable": True}, reference=KRAFT, api_key=9, version=8)
    return [describe, offsets]


def test_java_consumer_session(consumer_protocol_brokers, consumer_session):
    """The same session (join, consume all, commit, leave) against Kafka and kafkapy: what
    the client saw, line for line, then the group and offsets each broker kept."""
    raw = [_session(consumer_session, side) for side in consumer_protocol_brokers]
    if os.environ.get("CONFORMANCE_VERBOSE"):
        print("\n kafka:   " + "\n          ".join(raw[0]) + "\n kafkapy: "
              + "\n          ".join(raw[1]))
    kafka, ours = (_observed(lines) for lines in raw)
    partitions = ",".join(sorted(f"{t}:{p}" for t in SESSION_TOPICS
                                 for p in range(KRAFT_TOPICS[t])))
    assert f"ASSIGNED {partitions}" in kafka and f"ASSIGNMENT {partitions}" in kafka, kafka
    assert ours == kafka, "the Java consumer saw kafkapy differently:\n" + "\n".join(
        f"  kafka:   {k}\n  kafkapy: {o}" for k, o in zip(kafka, ours) if k != o) + (
        f"\n  kafka {len(kafka)} lines, kafkapy {len(ours)}" if len(kafka) != len(ours) else "")
    for case in _after_session():
        differences, kafka_tree = run_case(case, consumer_protocol_brokers)
        report.record(case, differences, kafka_tree)
        assert not differences, f"{case.name} differs from Kafka 3.9 (KRaft):\n" + "\n".join(
            f"  {d}" for d in differences)
