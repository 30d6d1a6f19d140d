"""Testing confluent-kafka code against real, in-process kafkapy brokers.

``kafka_broker`` is one broker; ``kafka_cluster`` is three brokers in this process (one
in-process metadata store, a real controller, replication between them), each on its own
127.0.0.1 port.  Both are started for the test and stopped after it.  ``kafka_cluster.fail(id)``
crashes a broker, ``kafka_cluster.restart(id)`` brings it back on the same log dir;
``kafka_cluster.pause(id)`` stops one without killing it (it answers nothing until
``resume(id)``), and with ``mock_clock=True`` its metadata session expires at
``kafka_cluster.advance(ms)``: a leader failover in milliseconds.
"""
from __future__ import annotations

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition


def consume(consumer: Consumer, count: int) -> list[bytes]:
    """Poll until ``count`` values arrived (at most 40 polls)."""
    values: list[bytes] = []
    for _ in range(40):
        message = consumer.poll(0.5)
        if message is None:
            continue
        assert message.error() is None, message.error()
        values.append(message.value())
        if len(values) == count:
            break
    return values


def produce(bootstrap: str, topic: str, values: list[bytes], **config) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, **config})
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(10) == 0


def test_produce_and_consume(kafka_broker):
    produce(kafka_broker.bootstrap, "greetings", [b"hello", b"world"])

    consumer = Consumer({"bootstrap.servers": kafka_broker.bootstrap, "group.id": "greeters",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe(["greetings"])
    try:
        assert consume(consumer, 2) == [b"hello", b"world"]
    finally:
        consumer.close()


@pytest.mark.kafka_broker(num_partitions=4)
def test_two_consumers_share_the_partitions(kafka_broker):
    kafka_broker.create_topic("tasks")        # num.partitions=4 from the marker
    config = {"bootstrap.servers": kafka_broker.bootstrap, "group.id": "workers",
              "auto.offset.reset": "earliest"}
    first, second = Consumer(config), Consumer(config)
    first.subscribe(["tasks"])
    second.subscribe(["tasks"])
    try:
        for _ in range(60):                   # both joined: the group split the partitions
            first.poll(0.1)
            second.poll(0.1)
            if first.assignment() and second.assignment():
                break
        mine = {tp.partition for tp in first.assignment()}
        theirs = {tp.partition for tp in second.assignment()}
        assert mine | theirs == {0, 1, 2, 3} and not mine & theirs
    finally:
        first.close()
        second.close()


@pytest.mark.kafka_cluster(brokers=3)
def test_consumer_carries_on_when_the_leader_crashes(kafka_cluster):
    kafka_cluster.create_topic("ledger", partitions=1, replication_factor=3,
                               **{"min.insync.replicas": 2})
    kafka_cluster.wait_isr("ledger", 0)       # all three replicas in sync
    produce(kafka_cluster.bootstrap, "ledger", [b"credit 10", b"debit 3"], acks="all")

    # Join the group while all three brokers run: as in Kafka, the first group creates
    # __consumer_offsets (replication factor 3 here), which needs three live brokers.
    consumer = Consumer({"bootstrap.servers": kafka_cluster.bootstrap, "group.id": "audit",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe(["ledger"])
    try:
        assert consume(consumer, 2) == [b"credit 10", b"debit 3"]

        old_leader = kafka_cluster.leader("ledger", 0)
        kafka_cluster.fail(old_leader)         # crash: no controlled shutdown
        new_leader = kafka_cluster.wait_leader("ledger", 0, other_than=old_leader)
        assert new_leader != old_leader

        produce(kafka_cluster.bootstrap, "ledger", [b"credit 5"], acks="all")
        assert consume(consumer, 1) == [b"credit 5"]
    finally:
        consumer.close()

    kafka_cluster.restart(old_leader)          # back on its log dir; it catches up
    assert sorted(kafka_cluster.wait_isr("ledger", 0)) == [1, 2, 3]


def deliver(cluster, producer: Producer) -> None:
    """Flush ``producer`` while moving the cluster's mock clock in small steps (bounded):
    the brokers' timers (a follower's fetch back-off, a delayed fetch) run on that clock."""
    for _ in range(300):
        if producer.flush(0.05) == 0:
            return
        cluster.advance(50)
    raise AssertionError("records still unacknowledged")


@pytest.mark.kafka_cluster(brokers=3, mock_clock=True, zookeeper_session_timeout_ms=6000,
                           replica_fetch_backoff_ms=10, fresh=True)
def test_producer_fails_over_when_the_leader_stalls(kafka_cluster):
    kafka_cluster.create_topic("shipments", partitions=1, replication_factor=3,
                               **{"min.insync.replicas": 2})
    # The application's producer: it gives up on a silent broker after a second.
    producer = Producer({"bootstrap.servers": kafka_cluster.bootstrap, "acks": "all",
                         "request.timeout.ms": 1000, "socket.timeout.ms": 1000,
                         "message.timeout.ms": 30000,
                         "retry.backoff.ms": 50, "topic.metadata.refresh.interval.ms": 500})
    producer.produce("shipments", b"parcel 1")
    deliver(kafka_cluster, producer)

    # The leader stops as a process stopped by SIGSTOP (or a long GC pause) would: it reads
    # and answers nothing, and no longer heartbeats to the metadata store.
    old_leader = kafka_cluster.leader("shipments", 0)
    kafka_cluster.pause(old_leader)
    kafka_cluster.advance(6_001)    # past zookeeper.session.timeout.ms, instantly
    new_leader = kafka_cluster.wait_leader("shipments", 0, other_than=old_leader)
    assert new_leader != old_leader

    producer.produce("shipments", b"parcel 2")  # times out on the old leader, then goes on
    deliver(kafka_cluster, producer)

    kafka_cluster.resume(old_leader)  # it learns its session expired and registers again
    kafka_cluster.wait_ready()
    consumer = Consumer({"bootstrap.servers": kafka_cluster.bootstrap, "group.id": "tracking",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition("shipments", 0, OFFSET_BEGINNING)])
    try:
        assert consume(consumer, 2) == [b"parcel 1", b"parcel 2"]
    finally:
        consumer.close()
