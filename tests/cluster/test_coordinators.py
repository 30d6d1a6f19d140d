"""Group and transaction coordinators in a 3-broker cluster.

``__consumer_offsets`` is created with ``offsets.topic.replication.factor`` (3) replicas, and
only once that many brokers are alive (before that FindCoordinator answers
COORDINATOR_NOT_AVAILABLE, as Kafka 3.9 does).  The group coordinator is the leader of the
group's ``__consumer_offsets`` partition: when that broker is killed, the partition's new
leader loads the group, its members and its committed offsets: a member whose session outlasts
the move commits under the generation it had, and the group resumes where it committed.
A transaction that writes to leaders on all three brokers commits and aborts everywhere (the
transaction coordinator sends its markers to every leader), so a read_committed consumer
bootstrapped elsewhere sees exactly the committed records.
"""
from __future__ import annotations

import time

import pytest

from tests.support import cluster_clients as clients
from tests.support.cluster_clients import find_coordinator
from tests.support.cluster import FAILOVER_S, wait_for

COORDINATOR_NOT_AVAILABLE = 15


def _group_read(bootstrap: str, topic: str, group: str, count: int, timeout: float = 60.0):
    from confluent_kafka import Consumer
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    got = []
    deadline = time.monotonic() + timeout
    try:
        while len(got) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append((msg.partition(), msg.value()))
        if got:
            consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return got


def test_offsets_topic_waits_for_enough_brokers(cluster, unique):
    c = cluster
    c.kill(3)
    wait_for(lambda: 3 not in c.registered() and all(
        3 not in c.metadata(i).brokers for i in (1, 2)), FAILOVER_S, "broker 3 to be gone")
    group = unique("early")
    for via in (1, 2):
        assert find_coordinator(c, via, group)[0] == COORDINATOR_NOT_AVAILABLE
    assert not c.zk.exists("/brokers/topics/__consumer_offsets")

    c.restart(3)
    c.wait_ready()
    error, node = wait_for(lambda: (r := find_coordinator(c, 1, group))[0] == 0 and r,
                           30, "a coordinator once 3 brokers are alive")
    assert node in (1, 2, 3)
    assignment = c.assignment("__consumer_offsets")
    assert sorted(assignment) == [0, 1, 2]
    assert all(sorted(r) == [1, 2, 3] for r in assignment.values()), assignment


def test_group_coordinator_moves_with_leadership(cluster, unique):
    c = cluster
    topic = unique("grouped")
    clients.create_topic(c.bootstrap(1), topic, partitions=3, replication=3)
    c.wait_topic(topic, 3)
    clients.produce_confluent(c.bootstrap(1), topic,
                              {p: clients.record_values(topic, p, 5) for p in range(3)})
    group = unique("movers")
    assert len(_group_read(c.bootstrap(2), topic, group, 15)) == 15
    _, coordinator = find_coordinator(c, 1, group)
    assert coordinator in (1, 2, 3)
    survivors = [i for i in (1, 2, 3) if i != coordinator]

    c.kill(coordinator)

    def moved():
        error, node = find_coordinator(c, survivors[0], group)
        return error == 0 and node in survivors and node
    new = wait_for(moved, FAILOVER_S + 10,
                   lambda: f"a new coordinator for {group} after killing {coordinator}\n"
                           f"{c.summary()}")
    # The other survivor learns of the move by its own UpdateMetadata, a moment apart.
    wait_for(lambda: find_coordinator(c, survivors[1], group) == (0, new), FAILOVER_S,
             lambda: f"broker {survivors[1]} naming coordinator {new} for {group}")

    # The committed offsets survived the move: the group reads only what came after.
    clients.produce_confluent(c.bootstrap(survivors[0]), topic,
                              {p: clients.record_values(topic, p, 1, "late") for p in range(3)})
    got = _group_read(c.bootstrap(survivors[1]), topic, group, 3)
    assert sorted(got) == sorted((p, clients.record_values(topic, p, 1, "late")[0])
                                 for p in range(3)), got


@pytest.mark.parametrize("rf", [1, 3])
def test_transaction_across_three_leaders(shared_cluster, unique, rf):
    from confluent_kafka import Producer
    c = shared_cluster
    topic = unique(f"txn-rf{rf}")
    clients.create_topic(c.bootstrap(1), topic, partitions=6, replication=rf)
    leaders = c.wait_topic(topic, 6)
    assert set(leaders.values()) == {1, 2, 3}
    txn_id = unique("tx")
    producer = Producer({"bootstrap.servers": c.bootstrap(2), "transactional.id": txn_id,
                         "transaction.timeout.ms": 60000})
    producer.init_transactions(30)

    def txn(tag: str, commit: bool) -> None:
        producer.begin_transaction()
        for p in range(6):
            for v in clients.record_values(topic, p, 3, tag):
                producer.produce(topic, v, partition=p)
        if commit:
            producer.commit_transaction(30)
        else:
            # The aborted records are written first (delivered, so their partitions are in
            # the transaction): the read_committed read below must skip them.  Without it,
            # an AddPartitionsToTxn refused with CONCURRENT_TRANSACTIONS (the previous
            # commit's markers still on their way) counts as registered in librdkafka,
            # whose abort then sends EndTxn for a transaction the coordinator never began:
            # INVALID_TXN_STATE, as Kafka answers it, and a fatal error in the client.
            assert producer.flush(30) == 0
            producer.abort_transaction(30)
    txn("a", True)
    txn("x", False)
    txn("b", True)

    got = clients.read_all(c.bootstrap(3), topic, 6, 36, "read_committed", unique("rc"))
    expected = {p: clients.record_values(topic, p, 3, "a") + clients.record_values(
        topic, p, 3, "b") for p in range(6)}
    coordinator = find_coordinator(c, 1, txn_id, key_type=1)
    assert got == expected, (
        f"read_committed got {dict((p, len(v)) for p, v in got.items())} records per partition,"
        f" expected 6 each; leaders {leaders}, transaction coordinator {coordinator}")
    assignment = c.assignment("__transaction_state")
    assert all(sorted(r) == [1, 2, 3] for r in assignment.values()), assignment


def test_members_keep_their_membership_when_the_coordinator_is_killed(cluster, unique):
    """The new coordinator loads the group's members with the group: a member's commit
    after the move is accepted under the generation it had, without a rejoin."""
    from confluent_kafka import Consumer, TopicPartition
    c = cluster
    topic = unique("kept")
    clients.create_topic(c.bootstrap(1), topic, partitions=1, replication=3)
    c.wait_topic(topic, 1)
    clients.produce_confluent(c.bootstrap(1), topic, {0: clients.record_values(topic, 0, 5)})
    group = unique("keepers")
    consumer = Consumer({"bootstrap.servers": ",".join(c.bootstrap(i) for i in (1, 2, 3)),
                         "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "session.timeout.ms": 30000, "heartbeat.interval.ms": 1000})
    try:
        consumer.subscribe([topic])
        wait_for(lambda: (m := consumer.poll(0.5)) is not None and m.error() is None, 30,
                 "the first record")
        consumer.commit(asynchronous=False)
        member = consumer.memberid()
        _, coordinator = find_coordinator(c, 1, group)
        survivor = next(i for i in (1, 2, 3) if i != coordinator)

        c.kill(coordinator)
        wait_for(lambda: find_coordinator(c, survivor, group)[1] not in (coordinator, -1),
                 FAILOVER_S + 10, lambda: f"a new coordinator after killing {coordinator}")
        committed = consumer.commit(offsets=[TopicPartition(topic, 0, 3)], asynchronous=False)
        assert [(p.partition, p.offset, p.error) for p in committed] == [(0, 3, None)]
        assert consumer.memberid() == member
    finally:
        consumer.close()
