"""The replica fetcher's hand-encoded Fetch request gives kafka-python's bytes exactly,
for every version it is sent at, with and without topics, forgotten topics, long
arrays (multi-byte compact lengths) and non-ASCII names; the leader's ``decode`` reads
those bytes back as kafka-python reads them, and leaves anything a follower does not send
to kafka-python."""
from __future__ import annotations

import random
import uuid

import pytest

from kafkapy.protocol.messages import REQUESTS
from kafkapy.replication.fetch_request import (MAX_VERSION, MIN_VERSION, FetchPartition,
                                               FetchTopic, ForgottenTopic,
                                               ReplicaFetchRequest, ReplicaState, decode)

_Fetch = REQUESTS[1]


def _kafka_python(request: ReplicaFetchRequest):
    """The same request as kafka-python's message object."""
    return _Fetch[request.API_VERSION](
        replica_id=request.replica_id,
        replica_state=_Fetch.ReplicaState(replica_id=request.replica_state.replica_id,
                                          replica_epoch=request.replica_state.replica_epoch),
        max_wait_ms=request.max_wait_ms, min_bytes=request.min_bytes,
        max_bytes=request.max_bytes, isolation_level=request.isolation_level,
        session_id=request.session_id, session_epoch=request.session_epoch,
        topics=[_Fetch.FetchTopic(topic=t.topic, topic_id=t.topic_id, partitions=[
            _Fetch.FetchTopic.FetchPartition(
                partition=p.partition, current_leader_epoch=p.current_leader_epoch,
                fetch_offset=p.fetch_offset, last_fetched_epoch=p.last_fetched_epoch,
                log_start_offset=p.log_start_offset, partition_max_bytes=p.partition_max_bytes)
            for p in t.partitions]) for t in request.topics],
        forgotten_topics_data=[_Fetch.ForgottenTopic(topic=t.topic, topic_id=t.topic_id,
                                                     partitions=list(t.partitions))
                               for t in request.forgotten_topics_data],
        rack_id=request.rack_id)


def _random_request(rng: random.Random, version: int) -> ReplicaFetchRequest:
    def name() -> str:
        return rng.choice(["t", "topic-ä", "x" * rng.randint(1, 300)])

    topics = [FetchTopic(name(), uuid.UUID(int=rng.getrandbits(128)), [
        FetchPartition(rng.randint(0, 2**31 - 1), rng.randint(-1, 2**31 - 1),
                       rng.randint(0, 2**63 - 1), rng.randint(-1, 2**31 - 1),
                       rng.randint(-1, 2**63 - 1), rng.randint(0, 2**31 - 1))
        for _ in range(rng.choice([1, 2, 130]))]) for _ in range(rng.choice([0, 1, 3]))]
    forgotten = [ForgottenTopic(name(), uuid.UUID(int=rng.getrandbits(128)),
                                [rng.randint(0, 1000) for _ in range(rng.choice([1, 200]))])
                 for _ in range(rng.choice([0, 0, 1, 2]))]
    return ReplicaFetchRequest(
        version, ReplicaState(rng.randint(0, 2**31 - 1), rng.randint(-1, 2**63 - 1)),
        max_wait_ms=rng.randint(0, 2**31 - 1), min_bytes=rng.randint(0, 2**31 - 1),
        max_bytes=rng.randint(0, 2**31 - 1), isolation_level=rng.randint(0, 1),
        session_id=rng.randint(-1, 2**31 - 1), session_epoch=rng.randint(-1, 2**31 - 1),
        topics=topics, forgotten_topics_data=forgotten, rack_id=rng.choice(["", "rack-1"]))


@pytest.mark.parametrize("version", range(MIN_VERSION, MAX_VERSION + 1))
def test_bytes_are_kafka_pythons(version):
    rng = random.Random(version)
    for _ in range(40):
        request = _random_request(rng, version)
        assert request.encode() == bytes(_kafka_python(request).encode())


@pytest.mark.parametrize("version", [12, 17])
def test_decodes_to_the_same_fields(version):
    request = _random_request(random.Random(7), version)
    decoded = _Fetch[version].decode(request.encode())
    assert (decoded.session_id, decoded.session_epoch) == (request.session_id,
                                                           request.session_epoch)
    assert [[p.fetch_offset for p in t.partitions] for t in decoded.topics] == \
        [[p.fetch_offset for p in t.partitions] for t in request.topics]
    if version >= 15:
        assert decoded.replica_state.replica_epoch == request.replica_state.replica_epoch
    else:
        assert decoded.replica_id == request.replica_id


def test_other_versions_are_refused():
    with pytest.raises(ValueError):
        ReplicaFetchRequest(11, ReplicaState(1, 1), 0, 0, 0, 0, 0, 0, [], [])


def _fields(request) -> tuple:
    """What the leader's Fetch handler reads of a request, kafka-python's or this one."""
    version = request.API_VERSION if hasattr(request, "API_VERSION") else request.version
    state = request.replica_state if version >= 15 else None
    return (request.replica_id if version < 15 else (state.replica_id, state.replica_epoch),
            request.max_wait_ms, request.min_bytes, request.max_bytes,
            request.isolation_level, request.session_id, request.session_epoch,
            [(t.topic if version < 13 else t.topic_id,
              [(p.partition, p.current_leader_epoch, p.fetch_offset, p.last_fetched_epoch,
                p.log_start_offset, p.partition_max_bytes) for p in t.partitions])
             for t in request.topics],
            [(t.topic if version < 13 else t.topic_id, list(t.partitions))
             for t in request.forgotten_topics_data],
            request.rack_id)


@pytest.mark.parametrize("version", range(MIN_VERSION, MAX_VERSION + 1))
def test_decode_reads_what_kafka_python_reads(version):
    rng = random.Random(100 + version)
    for _ in range(40):
        wire = _random_request(rng, version).encode()
        ours = decode(memoryview(wire), version)
        assert ours is not None
        assert _fields(ours) == _fields(_Fetch[version].decode(wire))
        assert ours.encode() == wire


def test_decode_reads_the_zero_topic_id_as_none():
    request = ReplicaFetchRequest(17, ReplicaState(2, 9), 500, 1, 100, 0, 0, -1,
                                  [FetchTopic("", None, [FetchPartition(0, 1, 2, 3, 4, 5)])],
                                  [], "")
    wire = request.encode()
    assert decode(memoryview(wire), 17).topics[0].topic_id is None
    assert _Fetch[17].decode(wire).topics[0].topic_id is None


@pytest.mark.parametrize("version", [12, 14, 15, 17])
def test_decode_leaves_what_a_follower_does_not_send_to_kafka_python(version):
    """None for: a consumer's Fetch, a ClusterId tag, a partition's tagged field, a byte
    left over, a body cut short, a version outside 12-17."""
    request = _random_request(random.Random(5), version)
    wire = request.encode()
    consumer = _kafka_python(request)
    if version >= 15:
        consumer.replica_state = None
    else:
        consumer.replica_id = -1
    assert decode(memoryview(bytes(consumer.encode())), version) is None
    kafka = _kafka_python(request)
    kafka.cluster_id = "cluster"
    assert decode(memoryview(bytes(kafka.encode())), version) is None
    partition = FetchPartition(0, 1, 2, 3, 4, 5)
    one = ReplicaFetchRequest(version, ReplicaState(1, 0), 500, 1, 100, 0, 0, -1,
                              [FetchTopic("t", uuid.UUID(int=7), [partition])], [], "")
    tagged = _kafka_python(one)
    tagged.topics[0].partitions[0].replica_directory_id = uuid.UUID(int=9)
    if version >= 17:
        assert decode(memoryview(bytes(tagged.encode())), version) is None
    assert decode(memoryview(wire + b"\x00"), version) is None
    for cut in (1, 5, len(wire) // 2):
        assert decode(memoryview(wire[:-cut]), version) is None
    assert decode(memoryview(wire), 11) is None
