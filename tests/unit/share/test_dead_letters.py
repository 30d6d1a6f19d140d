"""Dead letters: the headers and how a dead-letter record names its source, which topics may
be dead-letter topics, and appends to a dead-letter partition led by another broker
(Produce over a BrokerConnection) including the check for an earlier copy (Fetch over one)
in a two-broker in-process cluster."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from kafkapy.coordinator.share.persister import StateBatch
from kafkapy.records.record import Record, build_batch
from kafkapy.replication.fetch_session import TopicIdPartition
from kafkapy.share.dead_letters import (DeadLetterSource, DeadLetterWriter,
                                        dead_letter_headers, named_source_offset,
                                        target_refusal)
from kafkapy.share.manager import ShareFetchParams, SharePartitionManager
from kafkapy.share.partition import AcknowledgementBatch, AcknowledgeType
from kafkapy.testing import cluster
from tests.support.share import InMemoryPersister
from tests.support.share_configs import StaticGroupConfigs

SOURCE = DeadLetterSource("g", "orders", 3)


def test_headers_name_the_source_record():
    headers = dead_letter_headers(SOURCE, 42, 5, "delivery_count_limit")
    assert headers == [("__dlq.errors.topic", b"orders"), ("__dlq.errors.partition", b"3"),
                       ("__dlq.errors.offset", b"42"), ("__dlq.errors.group", b"g"),
                       ("__dlq.errors.delivery.count", b"5"),
                       ("__dlq.errors.reason", b"delivery_count_limit")]
    record = Record(0, 0, b"k", b"v", [("app", b"x")] + headers)
    assert named_source_offset(record, SOURCE) == 42
    assert named_source_offset(record, SOURCE._replace(group_id="other")) is None
    assert named_source_offset(record, SOURCE._replace(partition=4)) is None
    assert named_source_offset(Record(0, 0, None, b"v", []), SOURCE) is None


def test_which_topics_may_take_dead_letters():
    enabled = {"errors.deadletterqueue.group.enable": True}
    assert target_refusal("dlq.orders", "dlq.", enabled) is None
    assert "prefix" in target_refusal("orders-dlq", "dlq.", enabled)
    assert target_refusal("dlq.orders", "dlq.", None) == "does not exist"
    assert "false" in target_refusal("dlq.orders", "dlq.", {})
    assert target_refusal("x.orders", "x.", enabled) is None


@dataclass
class _Data:
    index: int
    records: bytes


async def _settle(rounds: int = 200) -> None:
    for _ in range(rounds):
        await asyncio.sleep(0.005)


def _append(server, topic: str, index: int, batch: bytes) -> None:
    server.replica_manager.append_records(
        [(topic, _Data(index, batch))], [None], required_acks=1, timeout_ms=1000,
        produce_version=9, internal_topics_allowed=False, transactional_id=None,
        respond=lambda r: r)


async def _last_leader_left(server, persister, index: int) -> None:
    """The source partition ``orders``-``index`` (led by ``server``) holds k0..k2; the last
    share-partition leader left 0-1 pending (at the delivery count limit)."""
    topic_id = server.cache.topic("orders").topic_id
    await persister.initialize("g", topic_id, index, state_epoch=0, start_offset=0)
    now = server.clock.time_ms()
    _append(server, "orders", index, build_batch([(b"k%d" % i, b"v%d" % i, [], now)
                                                  for i in range(3)]))
    await persister.write("g", topic_id, index, state_epoch=0, leader_epoch=0,
                          start_offset=0, batches=[StateBatch(0, 1, 0, 5)])


def _copy_of_record_0(server, index: int) -> bytes:
    """The dead letter of source record 0 as the last leader appended it."""
    return build_batch([(b"k0", b"v0", dead_letter_headers(
        DeadLetterSource("g", "orders", index), 0, 5, "rejected"), server.clock.time_ms())])


def _manager(server, persister) -> SharePartitionManager:
    return SharePartitionManager(
        config=server.config, clock=server.clock, replica_manager=server.replica_manager,
        cache=server.cache, persister=persister,
        group_configs=StaticGroupConfigs(dead_letter_topic="dlq.orders"), timer=server.timer,
        dead_letters=DeadLetterWriter(
            replica_manager=server.replica_manager, cache=server.cache,
            config=server.config, clock=server.clock,
            topic_config_of=lambda n: server.topic_config(n) if server.cache.topic(n) else None,
            endpoint_of=server._inter_broker_endpoint))


async def _take_over(manager, server, index: int) -> tuple:
    """The new share-partition leader's first fetch (it loads the state and starts the
    pending dead letters); answers its acquired records."""
    tip = TopicIdPartition(server.cache.topic("orders").topic_id, "orders", index)
    params = ShareFetchParams(max_wait_ms=2000, min_bytes=1, max_bytes=1 << 20,
                              max_records=100, batch_size=100)
    answer = (await manager.fetch_messages("g", "m", params, [tip]))[tip]
    return tip, [tuple(a) for a in answer.acquired]


async def test_dead_letters_to_a_partition_led_by_another_broker():
    async with cluster(brokers=2) as c:
        await c.create_topic("orders", 2, 1)
        await c.create_topic("dlq.orders", 1, 1, **{"errors.deadletterqueue.group.enable": "true"})
        remote = await c.leader("dlq.orders", 0)
        leaders = [await c.leader("orders", p) for p in (0, 1)]
        index = next(p for p in (0, 1) if leaders[p] != remote)
        server = (await c.broker(await c.leader("orders", index))).server
        persister = InMemoryPersister()
        await _last_leader_left(server, persister, index)
        # ... and had appended 0 before it went away.
        _append((await c.broker(remote)).server, "dlq.orders", 0, _copy_of_record_0(server, index))

        manager = _manager(server, persister)
        tip, acquired = await _take_over(manager, server, index)
        assert acquired == [(2, 2, 1)]
        await _settle()
        letters = await (await c.broker(remote)).records("dlq.orders")
        assert [(r.value, dict(r.headers)["__dlq.errors.offset"]) for r in letters] == \
            [(b"v0", b"0"), (b"v1", b"1")]          # 1 appended, 0 found: not twice

        acked = await manager.acknowledge("g", "m", {tip: [AcknowledgementBatch(
            2, 2, (int(AcknowledgeType.REJECT),))]})
        assert acked[tip] == 0
        await _settle()
        letters = await (await c.broker(remote)).records("dlq.orders")
        assert [r.value for r in letters] == [b"v0", b"v1", b"v2"]
        assert dict(letters[-1].headers)["__dlq.errors.reason"] == b"rejected"
        topic_id = server.cache.topic("orders").topic_id
        assert persister.stored("g", topic_id, index).start_offset == 3
        manager.shutdown()


@pytest.mark.parametrize("where", ["led here", "led by another broker"])
async def test_a_copy_not_yet_committed_is_waited_for_not_appended_again(where):
    """The last leader's copy of record 0 sits in the dead-letter partition's leader
    uncommitted: its follower is cut off (as when the follower is the broker that died).
    The new share-partition leader waits until it commits and finds it there."""
    async with cluster(brokers=3) as c:
        await c.create_topic("orders", 3, 1)
        await c.create_topic("dlq.orders", 1, 2, **{"errors.deadletterqueue.group.enable": "true",
                                                   "min.insync.replicas": "1"})
        dlq_leader = await c.leader("dlq.orders", 0)
        [follower] = [b for b in await c.isr("dlq.orders", 0) if b != dlq_leader]
        leaders = [await c.leader("orders", p) for p in range(3)]
        index = next(p for p in range(3) if (leaders[p] == dlq_leader) == (where == "led here"))
        server = (await c.broker(leaders[index])).server
        dlq_server = (await c.broker(dlq_leader)).server
        persister = InMemoryPersister()
        await _last_leader_left(server, persister, index)
        await c.partition(dlq_leader, follower)
        _append(dlq_server, "dlq.orders", 0, _copy_of_record_0(server, index))
        dlq = dlq_server.replica_manager.partitions[("dlq.orders", 0)]
        assert (dlq.log.log_end_offset, dlq.high_watermark) == (1, 0)

        manager = _manager(server, persister)
        await _take_over(manager, server, index)
        await _settle(100)                  # the new leader looks while the copy waits
        assert dlq.log.log_end_offset == 1, "nothing appended before the copy commits"
        await c.heal()
        for _ in range(400):
            if dlq.high_watermark >= 2:
                break
            await asyncio.sleep(0.01)
        letters = await (await c.broker(dlq_leader)).records("dlq.orders")
        assert [(r.value, dict(r.headers)["__dlq.errors.offset"]) for r in letters] == \
            [(b"v0", b"0"), (b"v1", b"1")]          # 0 found once committed: not twice
        manager.shutdown()
