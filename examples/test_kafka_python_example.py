"""Testing kafka-python code against a real, in-process kafkapy broker.

``kafka_broker`` (from kafkapy's pytest plugin, installed with kafkapy) is a running broker on
a free 127.0.0.1 port with a temporary log dir, started for this test and stopped after it.
Settings go in the ``kafka_broker`` marker; ``mock_clock=True`` gives the broker a clock
that only ``kafka_broker.advance(ms)`` moves.
"""
from __future__ import annotations

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
