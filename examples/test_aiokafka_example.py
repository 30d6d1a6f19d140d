"""Testing aiokafka (asyncio) code against a real, in-process kafkapy broker.

``async_kafka_broker`` starts the broker in the test's own event loop, so its helpers are
coroutines (``await async_kafka_broker.create_topic(...)``).  The sync ``kafka_broker`` works
in async tests too (it runs in a thread of its own); its helpers then block.

The second test moves the broker's mock clock past the consumer's ``session.timeout.ms``: the
group coordinator expires the member and the group rebalances at once, without waiting 10
seconds of real time.

The last test pauses a partition's leader (``async_kafka_cluster.pause``: a stopped process)
and moves the clock past the session timeout: the leadership moves at once, the producer's
next record goes to the new leader, and the old leader rejoins on ``resume``.
"""
from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, TopicPartition
from aiokafka.errors import RequestTimedOutError


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


async def send(cluster, producer: AIOKafkaProducer, topic: str, value: bytes, *,
               attempts: int = 5):
    """The application's send: retried when a broker stays silent (aiokafka gives a record up
    after ``request_timeout_ms``).  Moves the cluster's mock clock in small steps while it
    waits, since the brokers' timers run on that clock."""
    for _ in range(attempts):
        sent = await producer.send(topic, value)
        for _ in range(1000):
            if sent.done():
                break
            await asyncio.sleep(0.01)   # the client and the brokers take their turn
            await cluster.advance(10)
        try:
            return sent.result()
        except RequestTimedOutError:
            continue
    raise AssertionError(f"{value!r} not acknowledged after {attempts} attempts")


@pytest.mark.kafka_cluster(brokers=3, mock_clock=True, zookeeper_session_timeout_ms=6000,
                           replica_fetch_backoff_ms=10)
async def test_producer_survives_a_leader_failover(async_kafka_cluster):
    cluster = async_kafka_cluster
    await cluster.create_topic("payments", partitions=1, replication_factor=3,
                               **{"min.insync.replicas": 2})
    # The application's producer: a silent broker is given up on after a second.
    producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all",
                                request_timeout_ms=1000, metadata_max_age_ms=500,
                                retry_backoff_ms=50)
    await producer.start()
    try:
        first = await send(cluster, producer, "payments", b"paid 1")

        # The leader stalls (SIGSTOP, a long GC pause): no answers, no session heartbeats.
        old_leader = await cluster.leader("payments", 0)
        await cluster.pause(old_leader)
        await cluster.advance(6_001)    # past the session timeout: the controller moves on
        await cluster.wait_leader("payments", 0, other_than=old_leader)

        second = await send(cluster, producer, "payments", b"paid 2")
        assert (first.offset, second.offset) == (0, 1)
    finally:
        await producer.stop()

    await cluster.resume(old_leader)    # it registers again and follows the new leader
    await cluster.wait_ready()
    consumer = AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap)
    await consumer.start()
    try:
        tp = TopicPartition("payments", 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        batches = await consumer.getmany(tp, timeout_ms=5000)
        assert [m.value for m in batches.get(tp, [])] == [b"paid 1", b"paid 2"]
    finally:
        await consumer.stop()
