"""Apache Kafka Java client (kafka-clients 3.9.0 and 4.3.0) end to end.

Runs tests/java/ClientE2E.java (compiled by the ``java_clients`` fixture) against
the broker: per codec it creates a topic, produces 10,000 records with the Java
producer's defaults (idempotence, acks=all), consumes them back with assign +
seekToBeginning (and through a consumer group when the broker advertises the
group APIs), and checks Consumer/Admin offset look-ups. Then the topics the
Java client wrote are re-read here with kafka-python and checked against
tests/support/client_common.py, so the two generators cannot drift apart unnoticed.
"""
from __future__ import annotations

import json
import subprocess

import pytest
from kafka import KafkaConsumer, TopicPartition

from tests.support import client_common as common

pytestmark = [pytest.mark.java, pytest.mark.timeout(900)]


def _reread(bootstrap: str, topic: str) -> list[common.Got]:
    tp = TopicPartition(topic, 0)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="none", client_id="e2e-java-reread")
    got: list[common.Got] = []
    try:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        empty_polls = 0
        while len(got) < common.N_RECORDS and empty_polls < 60:
            batches = consumer.poll(timeout_ms=1000)
            records = batches.get(tp, [])
            empty_polls = 0 if records else empty_polls + 1
            got += [common.Got(r.offset, r.key, r.value, [(k, bytes(v)) for k, v in r.headers or []],
                               r.timestamp, r.timestamp_type) for r in records]
    finally:
        consumer.close()
    return got


@pytest.mark.parametrize("version", ["3.9.0", "4.3.0"])
def test_java_client(broker, java_clients, version):
    client = java_clients[version]
    mode = "assign+group" if common.broker_has_groups(broker.bootstrap) else "assign"
    prefix = f"e2e-java-{version}{common.TOPIC_SUFFIX}"
    proc = subprocess.run(client.command("ClientE2E", broker.bootstrap, prefix, mode),
                          capture_output=True, text=True, timeout=840)
    report = (f"ClientE2E (kafka-clients {version}, mode {mode}) exited {proc.returncode}\n"
              f"--- stdout ---\n{proc.stdout[-5000:]}\n--- stderr ---\n{proc.stderr[-15000:]}")
    assert proc.returncode == 0, report
    lines = [line for line in proc.stdout.splitlines() if line.startswith('{"ok"')]
    assert len(lines) == 1, report
    summary = json.loads(lines[0])
    assert summary["ok"] is True, report
    assert summary["client_version"] == version, summary
    assert summary["records"] == common.N_RECORDS, summary
    assert summary["group"] is (mode == "assign+group"), summary
    topics = [f"{prefix}-{codec}" for codec in common.CODECS]
    assert summary["topics"] == topics, summary

    base = summary["base_timestamp"]
    for codec, topic in zip(common.CODECS, topics):
        got = _reread(broker.bootstrap, topic)
        common.check_records(got, common.expected_records(codec, base),
                             what=f"kafka-python re-reading {topic}")
        common.check_stored_codec(broker.log_dir, topic, codec)


@pytest.mark.parametrize("version", ["3.9.0", "4.3.0"])
def test_java_consumer_validates_its_position_with_offset_for_leader_epoch(broker, java_clients,
                                                                           version):
    """tests/java/EpochValidation.java: a seek with a leader epoch is validated
    (KIP-320) before fetching; a position past the epoch's end is reported as
    log truncation at the offset the broker names."""
    client = java_clients[version]
    topic = f"epoch-validate-{version}{common.TOPIC_SUFFIX}"
    proc = subprocess.run(client.command("EpochValidation", broker.bootstrap, topic),
                          capture_output=True, text=True, timeout=300)
    report = f"exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-8000:]}"
    assert proc.returncode == 0, report
    (line,) = [line for line in proc.stdout.splitlines() if line.startswith('{"ok"')]
    summary = json.loads(line)
    assert summary == {"ok": True, "offsets": [5, 6, 7, 8, 9],
                       "truncation": "LogTruncationException", "divergent_offset": 10}, report
