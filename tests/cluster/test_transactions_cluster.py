"""Transactions whose partitions are led by other brokers than their coordinator.

The transaction coordinator (leader of the transactional id's ``__transaction_state``
partition) writes markers itself to the partitions it leads and sends WriteTxnMarkers to the
leader of every other partition (Kafka's TransactionMarkerChannelManager).  Checked with
confluent-kafka (librdkafka) on three kafkapy brokers:
- several committed and aborted transactions over partitions led by all three brokers: a
  read_committed consumer bootstrapped elsewhere reads exactly the committed records (and a
  read_uncommitted one reads the aborted ones too, so they were really written), and the
  producer goes on to its next transaction each time (a transaction stuck in PrepareCommit
  would answer CONCURRENT_TRANSACTIONS forever);
- consume-transform-produce (sendOffsetsToTransaction) with the group's
  ``__consumer_offsets`` partition led by another broker than the transaction coordinator:
  the group's offsets are committed by the COMMIT marker there, and an aborted
  transaction's offsets never are;
- a leader killed between the records and the commit: its markers go to the partition's
  new leader once the controller has moved it.
Every loop is bounded; nothing is timed.
"""
from __future__ import annotations

import time

from tests.support import cluster_clients as clients
from tests.support.cluster import FAILOVER_S, wait_for

TXN_TIMEOUT_S = 60


def find_coordinator(c, via: int, key: str, key_type: int) -> int:
    """FindCoordinator v3 (0 group, 1 transaction) at broker ``via``: the node id."""
    def ask():
        error, node = clients.find_coordinator(c, via, key, key_type)
        return error == 0 and node
    return wait_for(ask, 30, f"a coordinator for {key!r} (type {key_type})")


def transactional_producer(bootstrap: str, txn_id: str):
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id,
                         "transaction.timeout.ms": TXN_TIMEOUT_S * 1000, "linger.ms": 5})
    producer.init_transactions(TXN_TIMEOUT_S)
    return producer


def run_transaction(producer, topic: str, partitions: int, tag: str, commit: bool,
                    per_partition: int = 2) -> None:
    producer.begin_transaction()
    for p in range(partitions):
        for v in clients.record_values(topic, p, per_partition, tag):
            producer.produce(topic, v, partition=p)
    # Delivered before the end either way: librdkafka's abort purges what it has not sent.
    assert producer.flush(TXN_TIMEOUT_S) == 0
    if commit:
        producer.commit_transaction(TXN_TIMEOUT_S)
    else:
        producer.abort_transaction(TXN_TIMEOUT_S)


def test_commits_and_aborts_over_leaders_on_every_broker(shared_cluster, unique):
    c = shared_cluster
    topic = unique("txn-spread")
    clients.create_topic(c.bootstrap(1), topic, partitions=6, replication=1)
    leaders = c.wait_topic(topic, 6)
    assert set(leaders.values()) == {1, 2, 3}, leaders
    txn_id = unique("spread")
    producer = transactional_producer(c.bootstrap(2), txn_id)
    coordinator = find_coordinator(c, 1, txn_id, 1)
    # Whichever broker coordinates, some partitions are led by the two others.
    assert {l for l in leaders.values() if l != coordinator}

    plan = [("a", True), ("x", False), ("b", True), ("y", False), ("z", False), ("c", True)]
    for tag, commit in plan:
        run_transaction(producer, topic, 6, tag, commit)
    producer.flush(10)

    committed = {p: [v for tag, commit in plan if commit
                     for v in clients.record_values(topic, p, 2, tag)] for p in range(6)}
    everything = {p: [v for tag, _ in plan for v in clients.record_values(topic, p, 2, tag)]
                  for p in range(6)}
    got = clients.read_all(c.bootstrap(3), topic, 6, 6 * 6, "read_committed", unique("rc"))
    assert got == committed, (f"read_committed per partition "
                              f"{ {p: len(v) for p, v in got.items()} }, leaders {leaders}, "
                              f"coordinator {coordinator}")
    got = clients.read_all(c.bootstrap(1), topic, 6, 6 * 12, "read_uncommitted", unique("ru"))
    assert got == everything


def _group_on_another_broker(c, txn_coordinator: int, unique) -> tuple[str, int]:
    for i in range(60):
        group = unique(f"ctp{i}")
        node = find_coordinator(c, 1, group, 0)
        if node != txn_coordinator:
            return group, node
    raise AssertionError("no group id with its coordinator away from the transaction's")


def _committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False, "isolation.level": "read_committed"})
    try:
        tps = consumer.committed([TopicPartition(topic, p) for p in range(partitions)],
                                 timeout=10)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in tps}


def test_send_offsets_to_transaction_with_group_coordinator_elsewhere(shared_cluster, unique):
    from confluent_kafka import Consumer, TopicPartition
    c = shared_cluster
    source, sink = unique("ctp-in"), unique("ctp-out")
    for name in (source, sink):
        clients.create_topic(c.bootstrap(1), name, partitions=3, replication=1)
        assert set(c.wait_topic(name, 3).values()) == {1, 2, 3}
    clients.produce_confluent(c.bootstrap(1), source,
                              {p: clients.record_values(source, p, 4) for p in range(3)})

    txn_id = unique("ctp")
    producer = transactional_producer(c.bootstrap(3), txn_id)
    txn_coordinator = find_coordinator(c, 1, txn_id, 1)
    group, group_coordinator = _group_on_another_broker(c, txn_coordinator, unique)
    assert group_coordinator != txn_coordinator

    consumer = Consumer({"bootstrap.servers": c.bootstrap(2), "group.id": group,
                         "enable.auto.commit": False, "isolation.level": "read_committed",
                         "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(source, p, 0) for p in range(3)])

    def consume(count: int) -> list:
        got = []
        deadline = time.monotonic() + 60
        while len(got) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg)
        assert len(got) == count, f"consumed {len(got)} of {count}"
        return got

    def transform(msgs, commit: bool, offsets=None) -> None:
        producer.begin_transaction()
        for m in msgs:
            producer.produce(sink, m.value().upper(), partition=m.partition())
        producer.send_offsets_to_transaction(
            offsets if offsets is not None else consumer.position(consumer.assignment()),
            consumer.consumer_group_metadata(), TXN_TIMEOUT_S)
        if commit:
            producer.commit_transaction(TXN_TIMEOUT_S)
        else:
            producer.abort_transaction(TXN_TIMEOUT_S)

    try:
        first = consume(6)
        transform(first, commit=True)
        after_first = {tp.partition: tp.offset for tp in consumer.position(consumer.assignment())}
        wait_for(lambda: _committed(c.bootstrap(1), group, source, 3) == after_first, 30,
                 lambda: f"offsets {after_first} committed by the first transaction")

        # An aborted transaction: its records and its (bogus, far ahead) offsets vanish.
        transform([], commit=False,
                  offsets=[TopicPartition(source, p, 1000) for p in range(3)])
        assert _committed(c.bootstrap(2), group, source, 3) == after_first

        rest = consume(6)
        transform(rest, commit=True)
    finally:
        consumer.close()
    wait_for(lambda: _committed(c.bootstrap(3), group, source, 3) == {0: 4, 1: 4, 2: 4}, 30,
             "every source record's offset committed")
    expected = {p: [v.upper() for v in clients.record_values(source, p, 4)] for p in range(3)}
    got = clients.read_all(c.bootstrap(1), sink, 3, 12, "read_committed", unique("sink"))
    assert {p: sorted(v) for p, v in got.items()} == {p: sorted(v) for p, v in expected.items()}


def test_markers_follow_a_leader_that_moved(cluster, unique):
    c = cluster
    topic = unique("txn-moved")
    clients.create_topic(c.bootstrap(1), topic, partitions=3, replication=3)
    c.wait_topic(topic, 3)
    txn_id = unique("moved")
    producer = transactional_producer(c.bootstrap(1), txn_id)
    coordinator = find_coordinator(c, 1, txn_id, 1)
    run_transaction(producer, topic, 3, "a", True)
    leaders = c.leaders(topic, coordinator)
    # Placement spreads the 3 leaders over the 3 brokers: two are not the coordinator.
    victim = next(l for l in leaders.values() if l != coordinator)
    survivors = [i for i in (1, 2, 3) if i != victim]

    producer.begin_transaction()
    for p in range(3):
        for v in clients.record_values(topic, p, 2, "b"):
            producer.produce(topic, v, partition=p)
    assert producer.flush(30) == 0
    c.kill(victim)
    producer.commit_transaction(TXN_TIMEOUT_S)
    # The next transaction can start only once the last one completed everywhere.
    wait_for(lambda: all(l in survivors for l in c.leaders(topic, coordinator).values()),
             FAILOVER_S, f"{topic}'s leaders moved off broker {victim}")
    run_transaction(producer, topic, 3, "c", True)
    producer.flush(10)

    expected = {p: [v for tag in "abc" for v in clients.record_values(topic, p, 2, tag)]
                for p in range(3)}
    got = clients.read_all(c.bootstrap(survivors[0]), topic, 3, 18, "read_committed", unique("rc"))
    assert got == expected
