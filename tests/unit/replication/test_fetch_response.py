"""The leader's hand-encoded Fetch response to a follower gives kafka-python's bytes
exactly, for every version it is sent at: no topics, many partitions (multi-byte compact
lengths), null, empty and listed aborted transactions, null, empty and long records,
errors, and non-ASCII topic names (v12's names).  The follower's ``decode`` reads those
bytes as kafka-python reads them, and leaves what it does not write (tagged fields, a
preferred read replica) to kafka-python."""
from __future__ import annotations

import os
import random
import uuid

import pytest

from kafkapy.protocol.messages import RESPONSES
from kafkapy.replication.fetch_response import (MAX_VERSION, MIN_VERSION,
                                                ReplicaFetchResponse, ReplicaPartition,
                                                ReplicaTopic, decode)

_Fetch = RESPONSES[1]
_Topic = _Fetch.FetchableTopicResponse
_Partition = _Topic.PartitionData


def _kafka_python(response: ReplicaFetchResponse):
    """The same response as kafka-python's message object."""
    def aborted(pairs):
        if pairs is None:
            return None
        return [_Partition.AbortedTransaction(producer_id=producer_id, first_offset=first)
                for producer_id, first in pairs]

    return _Fetch[response.version](
        throttle_time_ms=response.throttle_time_ms, error_code=response.error_code,
        session_id=response.session_id, node_endpoints=[],
        responses=[_Topic(topic=t.topic, topic_id=t.topic_id, partitions=[
            _Partition(partition_index=p.partition_index, error_code=p.error_code,
                       high_watermark=p.high_watermark,
                       last_stable_offset=p.last_stable_offset,
                       log_start_offset=p.log_start_offset,
                       aborted_transactions=aborted(p.aborted), preferred_read_replica=-1,
                       records=p.records)
            for p in t.partitions]) for t in response.responses])


def _random_response(rng: random.Random, version: int) -> ReplicaFetchResponse:
    def partition() -> ReplicaPartition:
        aborted = rng.choice([None, [], [(rng.randint(0, 2**63 - 1), rng.randint(0, 2**63 - 1))
                                         for _ in range(rng.choice([1, 3, 130]))]])
        records = rng.choice([None, b"", rng.randbytes(16), rng.randbytes(rng.randint(1, 70_000))])
        return ReplicaPartition(rng.randint(0, 2**31 - 1), rng.choice([0, 0, 6, 74]),
                                rng.randint(-1, 2**63 - 1), rng.randint(-1, 2**63 - 1),
                                rng.randint(-1, 2**63 - 1), aborted, records)

    topics = [ReplicaTopic(rng.choice(["t", "topic-ä", "x" * rng.randint(1, 300)]),
                           uuid.UUID(int=rng.getrandbits(128)),
                           [partition() for _ in range(rng.choice([1, 2, 130]))])
              for _ in range(rng.choice([0, 1, 3]))]
    return ReplicaFetchResponse(version, rng.choice([0, 0, 70]), rng.randint(-1, 2**31 - 1),
                                topics, throttle_time_ms=rng.choice([0, 0, 1000]))


@pytest.mark.parametrize("version", range(MIN_VERSION, MAX_VERSION + 1))
def test_bytes_are_kafka_pythons(version):
    rng = random.Random(version)
    for _ in range(30):
        response = _random_response(rng, version)
        assert response.encode() == bytes(_kafka_python(response).encode())


@pytest.mark.parametrize("version", [12, 17])
def test_decodes_to_the_same_fields(version):
    response = _random_response(random.Random(3), version)
    decoded = _Fetch[version].decode(response.encode())
    assert (decoded.error_code, decoded.session_id) == (response.error_code,
                                                        response.session_id)
    assert [[(p.high_watermark, p.records) for p in t.partitions]
            for t in decoded.responses] == \
        [[(p.high_watermark, p.records) for p in t.partitions] for t in response.responses]


def test_versions_outside_its_range_are_refused():
    with pytest.raises(ValueError):
        ReplicaFetchResponse(11, 0, 0, [])


def _fields(response, version: int) -> tuple:
    """What the replica fetcher reads of an answer, kafka-python's or this one."""
    by_id = version >= 13
    return (response.error_code, response.session_id, response.throttle_time_ms, [
        (t.topic_id if by_id else t.topic, [
            (p.partition_index, p.error_code, p.high_watermark, p.last_stable_offset,
             p.log_start_offset, _aborted(p), p.records, p.diverging_epoch, p.current_leader,
             p.preferred_read_replica) for p in t.partitions])
        for t in response.responses])


def _aborted(partition):
    if isinstance(partition, ReplicaPartition):
        return partition.aborted
    listed = partition.aborted_transactions
    return None if listed is None else [(t.producer_id, t.first_offset) for t in listed]


@pytest.mark.parametrize("version", range(MIN_VERSION, MAX_VERSION + 1))
def test_decode_reads_what_kafka_python_reads(version):
    rng = random.Random(200 + version)
    for _ in range(30):
        response = _random_response(rng, version)
        wire = response.encode()
        ours = decode(memoryview(wire), version)
        assert ours is not None
        assert _fields(ours, version) == _fields(_Fetch[version].decode(wire), version)
        assert ours.encode() == wire


def test_decoded_records_are_a_view_of_the_answer_not_a_copy():
    wire = ReplicaFetchResponse(MAX_VERSION, 0, 1, [ReplicaTopic("t", uuid.UUID(int=5), [
        ReplicaPartition(0, 0, 10, 10, 0, None, b"records")])]).encode()
    records = decode(memoryview(wire), MAX_VERSION).responses[0].partitions[0].records
    assert isinstance(records, memoryview) and records.obj is wire
    assert records == b"records"


def _one(version: int):
    return _kafka_python(ReplicaFetchResponse(version, 0, 1, [ReplicaTopic(
        "t", uuid.UUID(int=5), [ReplicaPartition(0, 0, 10, 10, 0, None, b"records")])]))


@pytest.mark.parametrize("version", [12, 15, 16, 17])
def test_decode_leaves_what_it_does_not_write_to_kafka_python(version):
    """None for: a diverging epoch, a current leader, a snapshot id, node endpoints
    (v16+), a preferred read replica, a byte left over, a body cut short, a version
    outside 12-17."""
    plain = bytes(_one(version).encode())
    assert decode(memoryview(plain), version) is not None
    variants = []
    for name, value in (
            ("diverging_epoch", _Partition.EpochEndOffset(epoch=3, end_offset=7)),
            ("current_leader", _Partition.LeaderIdAndEpoch(leader_id=2, leader_epoch=4)),
            ("snapshot_id", _Partition.SnapshotId(end_offset=1, epoch=1)),
            ("preferred_read_replica", 2)):
        message = _one(version)
        setattr(message.responses[0].partitions[0], name, value)
        variants.append(bytes(message.encode()))
    if version >= 16:
        message = _one(version)
        message.node_endpoints = [_Fetch.NodeEndpoint(node_id=2, host="h", port=1, rack=None)]
        variants.append(bytes(message.encode()))
    for wire in variants:
        assert wire != plain
        assert decode(memoryview(wire), version) is None
    assert decode(memoryview(plain + b"\x00"), version) is None
    for cut in (1, 3, 8, len(plain) // 2):
        assert decode(memoryview(plain[:-cut]), version) is None
    assert decode(memoryview(plain), 11) is None


class _FileSlice:
    """What the log's read finds: a range of a file (the answer sends it with sendfile)."""

    def __init__(self, fd: int, position: int, size: int) -> None:
        self.fd, self.position, self.size = fd, position, size


@pytest.mark.parametrize("version", range(MIN_VERSION, MAX_VERSION + 1))
def test_records_given_as_file_slices_frame_as_the_bytes_would(tmp_path, version):
    from kafkapy.network.zero_copy import FileRange, framed_parts, materialize
    rng = random.Random(version)
    data = rng.randbytes(300_000)
    path = tmp_path / "segment.log"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        response = _random_response(rng, version)
        with_bytes = []
        for topic in response.responses:
            for i, p in enumerate(topic.partitions):
                if rng.random() < 0.5:
                    continue
                cuts = sorted(rng.sample(range(300_000), 4))
                slices = [_FileSlice(fd, cuts[0], cuts[1] - cuts[0]),
                          _FileSlice(fd, cuts[1], 0),
                          _FileSlice(fd, cuts[2], cuts[3] - cuts[2])]
                topic.partitions[i] = p._replace(records=slices)
                with_bytes.append((topic, i, data[cuts[0]:cuts[1]] + data[cuts[2]:cuts[3]]))
        parts = framed_parts(7, True, response.encode_parts())
        whole = materialize(parts) if isinstance(parts, list) else parts
        for topic, i, raw in with_bytes:
            topic.partitions[i] = topic.partitions[i]._replace(records=raw)
        body = response.encode()
        assert whole == (len(body) + 5).to_bytes(4, "big") + (7).to_bytes(4, "big") + b"\x00" + body
        if with_bytes:
            assert any(isinstance(part, FileRange) for part in parts)
            with pytest.raises(TypeError):
                topic, i, _ = with_bytes[0]
                topic.partitions[i] = topic.partitions[i]._replace(records=[_FileSlice(fd, 0, 1)])
                response.encode()
    finally:
        os.close(fd)
