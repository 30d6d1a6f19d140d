"""ListOffsets' own request decoder reads what kafka-python's does.

``handlers/list_offsets.FastDecode`` leaves each topic's partitions of a v1+ request as
``Rows`` of (index, current leader epoch, timestamp) tuples instead of one object each.
For every version the values must be those kafka-python decodes; anything it does not
read itself (v0, a bad or truncated body, bytes left over, tagged fields) goes to
kafka-python, so accepting and refusing stay kafka-python's.
"""
from __future__ import annotations

import pytest

from kafkapy.handlers import list_offsets
from kafkapy.protocol.messages import REQUESTS, RESPONSES
from tests.support.services import context, services

_R = REQUESTS[2]
_Topic = _R.ListOffsetsTopic
_Part = _Topic.ListOffsetsPartition


def _encoded(version: int) -> bytes:
    topics = []
    for name, count in (("a", 3), ("ü-topic", 0), ("b" * 200, 130)):
        parts = []
        for i in range(count):
            fields = {"partition_index": i * 7 - 1, "timestamp": -1 - (i % 5)}
            if version == 0:
                fields["max_num_offsets"] = 3
            if version >= 4:
                fields["current_leader_epoch"] = i - 2
            parts.append(_Part(version=version, **fields))
        topics.append(_Topic(version=version, name=name, partitions=parts))
    fields = {"replica_id": -1, "topics": topics}
    if version >= 2:
        fields["isolation_level"] = 1
    return bytes(_R(version=version, **fields).encode())


def _outcome(data: bytes, version: int, decode):
    try:
        return decode(data, version=version)
    except Exception:   # noqa: BLE001 - only whether it raised matters
        return None


@pytest.mark.parametrize("version", range(0, 10))
def test_the_fast_decoder_reads_what_kafka_python_reads(version):
    data = _encoded(version)
    slow = _R.decode(data, version=version)
    fast = list_offsets.FastDecode.decode(data, version=version)
    assert fast.replica_id == slow.replica_id
    assert fast.isolation_level == slow.isolation_level
    assert [t.name for t in fast.topics] == [t.name for t in slow.topics]
    for got, want in zip(fast.topics, slow.topics):
        if version == 0:
            assert got.partitions == want.partitions
            continue
        assert type(got.partitions) is list_offsets.Rows
        assert len(got.partitions) == len(want.partitions)
        assert list(got.partitions) == [
            (p.partition_index, p.current_leader_epoch, p.timestamp) if version >= 4
            else (p.partition_index, p.timestamp) for p in want.partitions]


@pytest.mark.parametrize("version", range(1, 10))
def test_what_the_fast_decoder_does_not_read_is_kafka_pythons_to_accept_or_refuse(version):
    data = _encoded(version)
    for bad in (data + b"\x00", data[:-1], data[:7]):
        fast = _outcome(bad, version, list_offsets.FastDecode.decode)
        slow = _outcome(bad, version, _R.decode)
        assert (fast is None) == (slow is None)
        if fast is not None:
            assert all(type(t.partitions) is not list_offsets.Rows for t in fast.topics)


def test_a_partition_with_tagged_fields_goes_to_kafka_python():
    data = bytearray(_encoded(6))
    # The first topic "a": replica id, isolation level, topics count, name, partitions
    # count, then its first partition (16 bytes) and that partition's tag count.
    tags_at = 4 + 1 + 1 + 2 + 1 + 16
    assert data[tags_at] == 0
    data[tags_at] = 1
    data[tags_at + 1:tags_at + 1] = bytes([5, 1, 0x2A])    # tag 5, 1 byte: unknown
    request = list_offsets.FastDecode.decode(bytes(data), version=6)
    assert type(request.topics[0].partitions) is not list_offsets.Rows
    assert request.topics[0].partitions[0].partition_index == -1


def _ctx(version: int):
    """A ListOffsets context on a broker with an authorizer (it refuses every topic)."""
    return context(services(authorizer=object()), 2, version)


@pytest.mark.parametrize("version", range(0, 10))
def test_a_topic_refused_describe_answers_each_partition_authorization_failed(
        version, monkeypatch):
    monkeypatch.setattr(list_offsets.authz, "filter_allowed", lambda *args: set())
    request = list_offsets.FastDecode.decode(_encoded(version), version=version)
    answer = list_offsets.handle(_ctx(version), request)
    decoded = RESPONSES[2].decode(bytes(answer.encode(version=version)), version=version)
    asked = {t.name: t for t in _R.decode(_encoded(version), version=version).topics}
    for topic in decoded.topics:
        assert [p.partition_index for p in topic.partitions] == [
            p.partition_index for p in asked[topic.name].partitions]
        assert {p.error_code for p in topic.partitions} <= {29}   # TOPIC_AUTHORIZATION_FAILED
