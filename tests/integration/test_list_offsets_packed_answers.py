"""ListOffsets packs its v1+ partition answers straight into bytes.

``handlers/list_offsets.py`` answers from v1 with rows packed into each topic's partition
array instead of one kafka-python object per partition.  Against a real in-process broker,
every version's answer (latest, earliest, max timestamp, by timestamp, duplicates, unknown
partitions, unknown topics, special timestamps below their version) must decode, and
re-encode through kafka-python's own objects to the very bytes that were sent; and the
values must be the log's.
"""
from __future__ import annotations

import pytest
from confluent_kafka import Producer

from kafkapy.protocol.messages import REQUESTS, RESPONSES
from kafkapy.testing import broker
from tests.support.wire import WireClient

TOPIC = "lo"
PARTITIONS = 5
BASE_TS = 1_700_000_000_000
VERSIONS = range(0, 10)


@pytest.fixture(scope="module")
def running():
    with broker() as b:
        b.create_topic(TOPIC, PARTITIONS, 1)
        producer = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0})
        for partition in range(PARTITIONS):
            for i in range(partition + 1):     # partition p holds p + 1 records
                producer.produce(TOPIC, b"v", partition=partition, timestamp=BASE_TS + i)
        assert producer.flush(30) == 0
        yield b


def _request(version: int, asks: list[tuple[str, int, int]]):
    req = REQUESTS[2]
    topic_cls, part_cls = req.ListOffsetsTopic, req.ListOffsetsTopic.ListOffsetsPartition
    topics: dict[str, list] = {}
    for name, index, timestamp in asks:
        fields = {"partition_index": index, "timestamp": timestamp}
        if version == 0:
            fields["max_num_offsets"] = 10
        if version >= 4:
            fields["current_leader_epoch"] = -1
        topics.setdefault(name, []).append(part_cls(**fields))
    fields = {"replica_id": -1,
              "topics": [topic_cls(name=n, partitions=p) for n, p in topics.items()]}
    if version >= 2:
        fields["isolation_level"] = 0
    return fields


def _ask(b, version: int, asks):
    client = WireClient(b.bootstrap)
    try:
        correlation, data = client.encode(2, version, **_request(version, asks))
        client.send_raw(data)
        frame = client.recv_frame()
    finally:
        client.close()
    response = RESPONSES[2].decode(frame, version=version, header=True)
    assert response.header.correlation_id == correlation
    # kafka-python's encoding of the decoded objects is the same bytes.
    response.with_header(correlation_id=correlation)
    assert bytes(response.encode(header=True)) == frame, f"v{version}"
    return {(t.name, p.partition_index, i): p for t in response.topics
            for i, p in enumerate(t.partitions)}


@pytest.mark.parametrize("version", VERSIONS)
def test_every_version_answers_the_bytes_kafka_python_would_encode(running, version):
    # Each partition asked once per request (a partition asked twice is a request error).
    answers = _ask(running, version, [(TOPIC, p, -1) for p in range(PARTITIONS)]
                   + [(TOPIC, 99, -1), ("no-such-topic", 0, -1)])
    latest = {key[1]: p for key, p in answers.items() if key[0] == TOPIC}
    if version == 0:
        assert [latest[p].old_style_offsets[0] for p in range(PARTITIONS)] == [
            p + 1 for p in range(PARTITIONS)]
    else:
        assert [(latest[p].error_code, latest[p].offset) for p in range(PARTITIONS)] == [
            (0, p + 1) for p in range(PARTITIONS)]
        assert latest[99].error_code == 3 and latest[99].offset == -1
    assert answers[("no-such-topic", 0, 0)].error_code == 3


@pytest.mark.parametrize("version", range(1, 10))
def test_special_timestamps_and_duplicates(running, version):
    asks = [(TOPIC, 0, -2), (TOPIC, 3, BASE_TS + 2), (TOPIC, 4, -3), (TOPIC, 1, -1),
            (TOPIC, 1, -1), (TOPIC, 2, -5)]
    answers = _ask(running, version, asks)
    by_index = {key[2]: p for key, p in answers.items()}
    assert (by_index[0].error_code, by_index[0].offset) == (0, 0)
    assert (by_index[1].error_code, by_index[1].offset, by_index[1].timestamp) == (
        0, 2, BASE_TS + 2)
    expected_max = (0, 4) if version >= 7 else (35, -1)     # UNSUPPORTED_VERSION below v7
    assert (by_index[2].error_code, by_index[2].offset) == expected_max
    assert by_index[3].error_code == by_index[4].error_code == 42   # INVALID_REQUEST
    assert by_index[5].error_code == (0 if version >= 9 else 35)
    if version >= 4:
        assert by_index[0].leader_epoch == 0
