"""The replica fetcher's hand-encoded Fetch request gives kafka-python's bytes exactly,
for every version it is sent at, with and without topics, forgotten topics, long
arrays (multi-byte compact lengths) and non-ASCII names."""
from __future__ import annotations

import random
import uuid

import pytest

from kafkapy.protocol.messages import REQUESTS
from kafkapy.replication.fetch_request import (MAX_VERSION, MIN_VERSION, FetchPartition,
                                               FetchTopic, ForgottenTopic,
                                               ReplicaFetchRequest, ReplicaState)

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
