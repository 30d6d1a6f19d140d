"""Follower fetch sessions (KIP-227) against a real kafkapy broker acting as the leader.

One broker process (node 0) leads four partitions assigned to [0, 1]; this test plays
broker 1 with a ReplicaFetcherManager over local Partitions (real logs in tmp_path,
real BrokerConnection, recorded).  After the first full fetch, every request is
incremental in one session (same id, epochs 1, 2, ...); once the follower has caught
up, requests carry no partition at all, and after a produce to one partition only
that partition appears, in the leader's answer (its records) and then in the
follower's next request (its new fetch offset).
"""
from __future__ import annotations

import asyncio

import pytest

from kafkapy.clock import SYSTEM_CLOCK
from kafkapy.log.log import Log
from kafkapy.metadata.cache import BrokerEndpoint, MetadataCache, PartitionState, TopicMetadata
from kafkapy.network.client import BrokerConnection
from kafkapy.records.record import build_batch
from kafkapy.replication.partition import Partition
from tests.support.broker_process import BrokerProcess
from tests.support.follower_fetch import (PARTITIONS, TOPIC, RecordingConnection, _answered,
                                          _sent, _setup_topic, _until, follower_fetchers)
from tests.support.request_fields import fields
from tests.support.wire import WireClient


@pytest.fixture
def leader(tmp_path):
    with BrokerProcess(tmp_path / "leader",
                       overrides={"controlled.shutdown.enable": "false"}).start() as broker:
        yield broker


def _produce(wire: WireClient, partition: int, count: int) -> None:
    for i in range(count):
        batch = build_batch([(None, b"v-%d-%d" % (partition, i), [], 1_700_000_000_000)])
        response = wire.request(0, 9, **fields(0, transactional_id=None, acks=1,
                                               timeout_ms=5000, topic_data=[dict(
                                                   name=TOPIC, partition_data=[dict(
                                                       index=partition,
                                                       records=bytes(batch))])]))
        assert response.responses[0].partition_responses[0].error_code == 0


def test_incremental_sessions_carry_only_changed_partitions(tmp_path, leader):
    wire = WireClient(leader.bootstrap)
    topic_id, epochs = _setup_topic(wire)
    for p in range(PARTITIONS):
        _produce(wire, p, 3)

    async def follow() -> None:
        cache = MetadataCache("c", 1)
        endpoint = BrokerEndpoint(0, "127.0.0.1", leader.port)
        cache.put_broker(endpoint, {"PLAINTEXT": endpoint})
        states = {p: PartitionState(p, [0, 1], 0, epochs[p], [0, 1]) for p in range(PARTITIONS)}
        cache.put_topic(TopicMetadata(TOPIC, topic_id, states))
        partitions = {}
        for p, state in states.items():
            log = Log.load(str(tmp_path / "follower" / f"{TOPIC}-{p}"), {}, SYSTEM_CLOCK)
            partitions[(TOPIC, p)] = Partition(TOPIC, p, log, state, 1)
            partitions[(TOPIC, p)].make_follower(state)
        recorded: list[RecordingConnection] = []

        async def connect(leader_id: int) -> RecordingConnection:
            conn = BrokerConnection("broker-1-fetcher-0", 30)
            await conn.connect("127.0.0.1", leader.port, 30)
            recorded.append(RecordingConnection(conn))
            return recorded[-1]

        fetchers = follower_fetchers(1, cache, partitions, connect=connect)
        fetchers.add_partitions({key: (0, 0) for key in partitions})
        try:
            def caught_up() -> bool:
                return all(p.high_watermark == 3 for p in partitions.values())
            await _until(caught_up)
            [conn] = recorded
            # Steady state: a request that carries nothing and is answered with nothing.
            await _until(lambda: any(not _sent(q) and not _answered(r)
                                     for q, r in conn.exchanges[1:]))
            quiet = len(conn.exchanges)
            await asyncio.get_running_loop().run_in_executor(None, _produce, wire, 2, 2)
            await _until(lambda: partitions[(TOPIC, 2)].high_watermark == 5)
            await _until(lambda: len(conn.exchanges) > quiet + 2)
            exchanges = list(conn.exchanges)
        finally:
            await fetchers.shutdown()
            for p in partitions.values():
                p.log.close()

        first, _ = exchanges[0]
        assert (first.session_id, first.session_epoch) == (0, 0)
        assert _sent(first) == set(range(PARTITIONS))
        session = exchanges[0][1].session_id
        assert session != 0, "the leader created a session for the follower"
        later = exchanges[1:]
        assert [q.session_id for q, _ in later] == [session] * len(later)
        assert [q.session_epoch for q, _ in later] == list(range(1, len(later) + 1))
        assert all(r.error_code == 0 and r.session_id == session for _, r in later)
        after = exchanges[quiet:]
        assert all(_sent(q) <= {2} and _answered(r) <= {2} for q, r in after), \
            [(_sent(q), _answered(r)) for q, r in after]
        assert any(_answered(r) == {2} for _, r in after), "the leader sent partition 2's news"
        assert any(_sent(q) == {2} for q, _ in after), "the follower sent its new offset"
        assert [p.log.log_end_offset for p in partitions.values()] == [3, 3, 5, 3]

    try:
        asyncio.run(asyncio.wait_for(follow(), 60))
    finally:
        wire.close()
