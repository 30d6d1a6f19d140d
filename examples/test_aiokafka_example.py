"""Testing aiokafka (asyncio) code against a real, in-process kafkapy broker.

``async_kafka_broker`` starts the broker in the test's own event loop, so its helpers are
coroutines (``await async_kafka_broker.create_topic(...)``).  The sync ``kafka_broker`` works
in async tests too (it runs in a thread of its own); its helpers then block.

The second test moves the broker's mock clock past the consumer's ``session.timeout.ms``: the
group coordinator expires the member and the group rebalances at once, without waiting 10
seconds of real time.
"""
from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener


async def test_produce_and_consume(async_kafka_broker):
    await async_kafka_broker.create_topic("clicks", partitions=1)

    producer = AIOKafkaProducer(bootstrap_servers=async_kafka_broker.bootstrap)
    await producer.start()
    try:
        for page in ("home", "cart", "checkout"):
            await producer.send_and_wait("clicks", page.encode())
    finally:
        await producer.stop()

    consumer = AIOKafkaConsumer("clicks", bootstrap_servers=async_kafka_broker.bootstrap,
                                group_id="analytics", auto_offset_reset="earliest")
    await consumer.start()
    try:
        values = []
        async with asyncio.timeout(20):
            async for message in consumer:
                values.append(message.value)
                if len(values) == 3:
                    break
        await consumer.commit()
    finally:
        await consumer.stop()
    assert values == [b"home", b"cart", b"checkout"]


class Rebalances(ConsumerRebalanceListener):
    """Counts assignments; each rebalance ends in one."""

    def __init__(self) -> None:
        self.assigned = 0
        self.changed = asyncio.Event()

    async def on_partitions_revoked(self, revoked):
        pass

    async def on_partitions_assigned(self, assigned):
        self.assigned += 1
        self.changed.set()


@pytest.mark.kafka_broker(mock_clock=True)
async def test_session_timeout_rebalances_the_group(async_kafka_broker):
    await async_kafka_broker.create_topic("jobs", partitions=2)
    listener = Rebalances()
    consumer = AIOKafkaConsumer(bootstrap_servers=async_kafka_broker.bootstrap,
                                group_id="workers", session_timeout_ms=30_000,
                                heartbeat_interval_ms=100)
    consumer.subscribe(["jobs"], listener=listener)
    await consumer.start()
    try:
        async with asyncio.timeout(20):
            while not consumer.assignment():
                await consumer.getmany(timeout_ms=100)
        assert listener.assigned == 1
        listener.changed.clear()

        # 30 s of broker time pass at once: the member's session expires and the
        # coordinator rebalances; the consumer notices on its next heartbeat and rejoins.
        await async_kafka_broker.advance(30_001)

        async with asyncio.timeout(20):
            while not listener.changed.is_set():
                await consumer.getmany(timeout_ms=100)
        assert listener.assigned == 2
        assert {tp.partition for tp in consumer.assignment()} == {0, 1}
    finally:
        await consumer.stop()
