"""Testing kafka-python code against a real, in-process kafkapy broker.

``kafka_broker`` (from kafkapy's pytest plugin, installed with kafkapy) is a running broker on
a free 127.0.0.1 port with a temporary log dir, started for this test and stopped after it.
Settings go in the ``kafka_broker`` marker; ``mock_clock=True`` gives the broker a clock
that only ``kafka_broker.advance(ms)`` moves.

The last test cuts the links between a partition's leader and its followers
(``kafka_cluster.partition``): the producer's acks=all record waits (or is refused with
NOT_ENOUGH_REPLICAS and retried) until ``kafka_cluster.heal()``, then lands on every replica.
"""
from __future__ import annotations

import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition


def consume(consumer: KafkaConsumer, count: int) -> list[bytes]:
    """Poll until ``count`` values arrived (at most 20 polls)."""
    values: list[bytes] = []
    for _ in range(20):
        for records in consumer.poll(timeout_ms=500).values():
            values += [r.value for r in records]
        if len(values) >= count:
            break
    return values


def test_produce_and_consume(kafka_broker):
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap)
    for i in range(3):
        producer.send("orders", key=b"customer-1", value=f"order {i}".encode())
    producer.flush()
    producer.close()

    consumer = KafkaConsumer("orders", bootstrap_servers=kafka_broker.bootstrap,
                             auto_offset_reset="earliest")
    assert consume(consumer, 3) == [b"order 0", b"order 1", b"order 2"]
    consumer.close()

    # What is in the log, read on the broker itself (no client involved):
    assert [(r.offset, r.key) for r in kafka_broker.records("orders", 0)] == \
        [(0, b"customer-1"), (1, b"customer-1"), (2, b"customer-1")]


@pytest.mark.kafka_broker(num_partitions=2)
def test_consumer_group_resumes_from_committed_offset(kafka_broker):
    kafka_broker.create_topic("payments", partitions=2)
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap)
    for i in range(4):
        producer.send("payments", value=f"p{i}".encode(), partition=i % 2)
    producer.flush()

    first = KafkaConsumer("payments", bootstrap_servers=kafka_broker.bootstrap,
                          group_id="billing", auto_offset_reset="earliest",
                          enable_auto_commit=False)
    assert sorted(consume(first, 4)) == [b"p0", b"p1", b"p2", b"p3"]
    first.commit()
    first.close()

    producer.send("payments", value=b"p4", partition=0)
    producer.close()

    # A new member of the same group starts where the group left off.
    second = KafkaConsumer("payments", bootstrap_servers=kafka_broker.bootstrap,
                           group_id="billing", auto_offset_reset="earliest")
    assert consume(second, 1) == [b"p4"]
    assert second.committed(TopicPartition("payments", 0)) == 2
    second.close()


@pytest.mark.kafka_broker(mock_clock=True)
def test_retention_deletes_old_records_when_the_clock_moves(kafka_broker):
    kafka_broker.create_topic("audit", partitions=1, **{"retention.ms": 60_000})
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap)
    for i in range(3):
        producer.send("audit", value=f"event {i}".encode())
    producer.flush()
    producer.close()
    assert len(kafka_broker.records("audit", 0)) == 3

    kafka_broker.advance(61_000)  # a minute later, instantly

    assert kafka_broker.records("audit", 0) == []
    consumer = KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap)
    tp = TopicPartition("audit", 0)
    assert consumer.beginning_offsets([tp]) == {tp: 3}
    consumer.close()


def advance_until(cluster, done, step_ms: int = 100, rounds: int = 300) -> None:
    """Move the cluster's mock clock in small steps until ``done()`` (at most ``rounds``)."""
    for _ in range(rounds):
        if done():
            return
        time.sleep(0.005)       # the brokers and the client's threads take their turn
        cluster.advance(step_ms)
    raise AssertionError("condition not reached")


@pytest.mark.kafka_cluster(brokers=3, mock_clock=True, replica_lag_time_max_ms=1000,
                           replica_fetch_backoff_ms=10, fresh=True)
def test_producer_rides_out_a_network_partition(kafka_cluster):
    kafka_cluster.create_topic("invoices", partitions=1, replication_factor=3,
                               **{"min.insync.replicas": 2})
    producer = KafkaProducer(bootstrap_servers=kafka_cluster.bootstrap, acks="all",
                             retry_backoff_ms=20)
    first = producer.send("invoices", b"invoice 1")
    advance_until(kafka_cluster, lambda: first.is_done)
    assert first.get(0).offset == 0

    # The leader loses its links to both followers (clients still reach every broker).
    leader = kafka_cluster.leader("invoices", 0)
    followers = [b for b in (1, 2, 3) if b != leader]
    kafka_cluster.partition(leader, followers)
    second = producer.send("invoices", b"invoice 2")
    kafka_cluster.advance(2_000)    # past replica.lag.time.max.ms: the followers fall behind
    time.sleep(0.2)
    assert not second.is_done       # acks=all: not acknowledged while the partition lasts

    kafka_cluster.heal()            # the followers catch up; the producer's retry succeeds
    advance_until(kafka_cluster, lambda: second.is_done)
    assert second.get(0).offset == 1
    producer.close()
    advance_until(kafka_cluster, lambda: sorted(kafka_cluster.isr("invoices", 0)) == [1, 2, 3])
    follower = kafka_cluster.broker(followers[0])
    advance_until(kafka_cluster, lambda: [r.value for r in follower.records("invoices", 0)] ==
                  [b"invoice 1", b"invoice 2"])
