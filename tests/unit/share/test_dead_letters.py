"""Dead letters: the headers and how a dead-letter record names its source, which topics may
be dead-letter topics, and appends to a dead-letter partition led by another broker
(Produce over a BrokerConnection) including the check for an earlier copy (Fetch over one)
in a two-broker in-process cluster."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass

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


async def test_dead_letters_to_a_partition_led_by_another_broker():
    async with cluster(brokers=2) as c:
        await c.create_topic("orders", 2, 1)
        await c.create_topic("dlq.orders", 1, 1, **{"errors.deadletterqueue.group.enable": "true"})
        remote = await c.leader("dlq.orders", 0)
        leaders = [await c.leader("orders", p) for p in (0, 1)]
        index = next(p for p in (0, 1) if leaders[p] != remote)
        local = await c.broker(await c.leader("orders", index))
        server = local.server
        configs = StaticGroupConfigs(dead_letter_topic="dlq.orders")
        persister = InMemoryPersister()
        topic_id = server.cache.topic("orders").topic_id
        await persister.initialize("g", topic_id, index, state_epoch=0, start_offset=0)
        now = server.clock.time_ms()
        server.replica_manager.append_records(
            [("orders", _Data(index, build_batch([(b"k%d" % i, b"v%d" % i, [], now)
                                                  for i in range(3)])))],
            [None], required_acks=1, timeout_ms=1000, produce_version=9,
            internal_topics_allowed=False, transactional_id=None, respond=lambda r: r)
        # The last leader left 0-1 pending and had appended 0 before it went away.
        await persister.write("g", topic_id, index, state_epoch=0, leader_epoch=0,
                              start_offset=0, batches=[StateBatch(0, 1, 0, 5)])
        copy = build_batch([(b"k0", b"v0", dead_letter_headers(
            DeadLetterSource("g", "orders", index), 0, 5, "rejected"), now)])
        other = (await c.broker(remote)).server
        other.replica_manager.append_records(
            [("dlq.orders", _Data(0, copy))], [None], required_acks=1, timeout_ms=1000,
            produce_version=9, internal_topics_allowed=False, transactional_id=None,
            respond=lambda r: r)

        manager = SharePartitionManager(
            config=server.config, clock=server.clock, replica_manager=server.replica_manager,
            cache=server.cache, persister=persister, group_configs=configs, timer=server.timer,
            dead_letters=DeadLetterWriter(
                replica_manager=server.replica_manager, cache=server.cache,
                config=server.config, clock=server.clock,
                topic_config_of=lambda n: server.topic_config(n) if server.cache.topic(n) else None,
                endpoint_of=server._inter_broker_endpoint))
        tip = TopicIdPartition(topic_id, "orders", index)
        params = ShareFetchParams(max_wait_ms=2000, min_bytes=1, max_bytes=1 << 20,
                                  max_records=100, batch_size=100)
        answer = (await manager.fetch_messages("g", "m", params, [tip]))[tip]
        assert [tuple(a) for a in answer.acquired] == [(2, 2, 1)]
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
        assert persister.stored("g", topic_id, index).start_offset == 3
        manager.shutdown()
