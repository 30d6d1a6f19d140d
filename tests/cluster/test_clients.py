"""Stock clients bootstrapped from ONE broker produce to and consume from leaders on all three.

For each client (kafka-python, confluent-kafka, the Java client through Kafka's console
scripts) and replication factor (1 and 3): a 6-partition topic whose leaders are spread over
brokers 1, 2 and 3 (two each); the client knows only one broker's address, so it must learn
the other brokers and every leader from that broker's Metadata.  Every partition gets known
records (acks=all), and every partition is read back exactly, in order, from offset 0.  With
RF 3, acks=all needs the followers to have fetched the records (the high watermark moves only
then).  A consumer group on the cluster finds its coordinator (``__consumer_offsets`` RF 3)
and its committed offsets are read back through another broker.
"""
from __future__ import annotations

import pytest

from tests.support import cluster_clients as clients

PARTITIONS = 6
PER_PARTITION = 20


def _spread_topic(cluster, unique, name: str, rf: int, via: int) -> tuple[str, dict[int, int]]:
    topic = unique(name)
    clients.create_topic(cluster.bootstrap(via), topic, partitions=PARTITIONS, replication=rf)
    leaders = cluster.wait_topic(topic, PARTITIONS)
    assert sorted(leaders.values()) == [1, 1, 2, 2, 3, 3], leaders
    return topic, leaders


@pytest.mark.parametrize("rf", [1, 3])
@pytest.mark.parametrize("client,via", [("kafka-python", 1), ("confluent-kafka", 2)])
def test_python_clients_reach_every_leader_from_one_broker(shared_cluster, unique, client, via,
                                                           rf):
    c = shared_cluster
    topic, _ = _spread_topic(c, unique, f"{client}-rf{rf}", rf, via)
    values = {p: clients.record_values(topic, p, PER_PARTITION) for p in range(PARTITIONS)}
    produce, consume = {
        "kafka-python": (clients.produce_kafka_python, clients.consume_kafka_python),
        "confluent-kafka": (clients.produce_confluent, clients.consume_confluent)}[client]
    offsets = produce(c.bootstrap(via), topic, values)
    assert offsets == {p: list(range(PER_PARTITION)) for p in range(PARTITIONS)}
    got = consume(c.bootstrap(via), topic, {p: PER_PARTITION for p in range(PARTITIONS)})
    assert got == values
    # Each partition's log lives on its replicas only.
    for p in range(PARTITIONS):
        hosts = {i for i in c.running_ids() if (c.nodes[i].log_dir / f"{topic}-{p}").is_dir()}
        assert hosts == set(c.assignment(topic)[p]), (p, hosts)


@pytest.mark.java
@pytest.mark.parametrize("rf", [1, 3])
def test_java_client_reaches_every_leader_from_one_broker(shared_cluster, unique, rf):
    c = shared_cluster
    via = 3
    topic, _ = _spread_topic(c, unique, f"java-rf{rf}", rf, via)
    keyed = [(f"key-{i}", f"value-{i}") for i in range(60)]
    expected = {p: [] for p in range(PARTITIONS)}
    for k, v in keyed:
        expected[clients.java_partition(k.encode(), PARTITIONS)].append((k, v))
    assert all(expected.values()), "60 keys should hit all 6 partitions"
    clients.produce_java(c.bootstrap(via), topic, keyed)
    rows = clients.consume_java(c.bootstrap(via), topic, len(keyed))
    got = {p: [] for p in range(PARTITIONS)}
    for p, offset, k, v in sorted(rows):
        assert offset == len(got[p]), (p, offset)
        got[p].append((k, v))
    assert got == expected
    # And kafka-python, bootstrapped elsewhere, reads the same records where Java's
    # partitioner put them.
    back = clients.consume_kafka_python(c.bootstrap(1), topic,
                                        {p: len(r) for p, r in expected.items()})
    assert {p: [v.decode() for v in vals] for p, vals in back.items()} == {
        p: [v for _, v in r] for p, r in expected.items()}


def test_consumer_group_commits_through_the_cluster(shared_cluster, unique):
    """A group consumer (confluent-kafka, bootstrapped from broker 1) finds its coordinator,
    reads all partitions and commits; the committed offsets are read back through broker 3."""
    from confluent_kafka import Consumer, TopicPartition
    c = shared_cluster
    topic, _ = _spread_topic(c, unique, "grouped", 3, 1)
    values = {p: clients.record_values(topic, p, 5) for p in range(PARTITIONS)}
    clients.produce_confluent(c.bootstrap(2), topic, values)
    group = unique("group")
    consumer = Consumer({"bootstrap.servers": c.bootstrap(1), "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    got = 0
    import time
    deadline = time.monotonic() + 60
    try:
        while got < 5 * PARTITIONS and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got += 1
        assert got == 5 * PARTITIONS
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    reader = Consumer({"bootstrap.servers": c.bootstrap(3), "group.id": group})
    try:
        committed = reader.committed([TopicPartition(topic, p) for p in range(PARTITIONS)],
                                     timeout=30)
    finally:
        reader.close()
    assert {tp.partition: tp.offset for tp in committed} == {p: 5 for p in range(PARTITIONS)}
