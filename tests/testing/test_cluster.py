"""``kafkapy.testing.cluster``: three real brokers in the test process.

With the shared embedded store (a session per broker) and with a real ZooKeeper: a topic
at replication factor 3 and ``min.insync.replicas=2``, acks=all records from stock clients
(confluent-kafka produces, kafka-python consumes), the leader failed (its session ends, the
controller moves leadership), more acks=all records, every acknowledged record consumed
back, then the failed broker restarted on its port and log dir and back in the ISR.
On the embedded store also: an idempotent producer whose leader fails mid-stream (exactly
once), controller failover, session expiry (the broker registers again), clean stops, and
one MockClock shared by the brokers.
"""
from __future__ import annotations

import time

from kafkapy.testing import MockClock, cluster
from tests.support.zookeeper_server import zookeeper_server  # noqa: F401 (fixture)

CLIENT_TIMEOUT_S = 60


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> list[bytes]:
    """acks=all with confluent-kafka; returns the values the cluster acknowledged."""
    from confluent_kafka import Producer
    acked: list[bytes] = []
    errors: list = []

    def report(err, msg) -> None:
        (errors.append(err) if err is not None else acked.append(msg.value()))
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                         "message.timeout.ms": CLIENT_TIMEOUT_S * 1000,
                         "retry.backoff.ms": 50, "topic.metadata.refresh.interval.ms": 500})
    for value in values:
        producer.produce(topic, value, partition=0, on_delivery=report)
        producer.poll(0)
    assert producer.flush(CLIENT_TIMEOUT_S) == 0, "records still unacknowledged"
    assert errors == []
    return acked


def _consume(bootstrap: str, topic: str, count: int) -> list[bytes]:
    """Partition 0 from the beginning with kafka-python until ``count`` records (bounded)."""
    from kafka import KafkaConsumer, TopicPartition
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             request_timeout_ms=30000, metadata_max_age_ms=500)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        got: list[bytes] = []
        deadline = time.monotonic() + CLIENT_TIMEOUT_S
        while len(got) < count and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                got.extend(r.value for r in records)
        return got
    finally:
        consumer.close()


def _acks_all_through_failover(c) -> None:
    topic = "orders"
    c.create_topic(topic, partitions=1, replication_factor=3, **{"min.insync.replicas": "2"})
    assert sorted(c.isr(topic, 0)) == [1, 2, 3]
    first = [f"before-{i}".encode() for i in range(50)]
    acked = _produce(c.bootstrap, topic, first)
    assert sorted(acked) == sorted(first)

    leader = c.leader(topic, 0)
    c.fail(leader)
    new_leader = c.wait_leader(topic, 0, other_than=leader)
    assert new_leader != leader
    assert leader not in c.isr(topic, 0)

    second = [f"after-{i}".encode() for i in range(50)]
    acked += _produce(c.bootstrap, topic, second)       # ISR of 2 >= min.insync.replicas
    consumed = _consume(c.bootstrap, topic, len(acked))
    assert set(acked) <= set(consumed), "acknowledged records lost"

    port = c.broker(leader).port
    c.restart(leader)
    assert c.broker(leader).port == port
    assert sorted(c.wait_isr(topic, 0)) == [1, 2, 3]
    # the restarted broker's own log holds every acknowledged record again
    restarted = [r.value for r in c.broker(leader).records(topic, 0)]
    assert set(acked) <= set(restarted)


def test_embedded_cluster_acks_all_through_leader_failure():
    with cluster(brokers=3) as c:
        assert len(c.brokers) == 3 and c.bootstrap.count(",") == 2
        assert c.zookeeper is None
        print(f"3-broker embedded cluster start-to-ready: {c.ready_ms:.0f} ms")
        _acks_all_through_failover(c)


def test_idempotent_producer_leader_failed_mid_stream():
    """The leader fails while records are in flight: every record is acknowledged once and
    read back exactly once (idempotence: retries to the new leader are not duplicated)."""
    from confluent_kafka import Producer
    with cluster(brokers=3) as c:
        c.create_topic("idem", partitions=1, replication_factor=3, **{"min.insync.replicas": "2"})
        acked: list[bytes] = []
        errors: list = []
        producer = Producer({"bootstrap.servers": c.bootstrap, "enable.idempotence": True,
                             "acks": "all", "message.timeout.ms": CLIENT_TIMEOUT_S * 1000,
                             "retry.backoff.ms": 50})

        def report(err, msg) -> None:
            (errors.append(err) if err is not None else acked.append(msg.value()))
        for i in range(200):
            producer.produce("idem", str(i).encode(), partition=0, on_delivery=report)
            producer.poll(0)
            if i == 100:
                c.fail(c.leader("idem", 0))
        assert producer.flush(CLIENT_TIMEOUT_S) == 0 and errors == []
        assert len(acked) == 200
        consumed = _consume(c.bootstrap, "idem", 200)
        assert sorted(consumed) == sorted(acked)        # none lost, none twice


def test_zookeeper_cluster_acks_all_through_leader_failure(zookeeper_server):  # noqa: F811
    from kazoo.client import KazooClient
    connect = zookeeper_server.connect_string
    with cluster(brokers=3, zookeeper=connect, zookeeper_session_timeout_ms=6000) as c:
        print(f"3-broker ZooKeeper cluster start-to-ready: {c.ready_ms:.0f} ms")
        chroot = "/" + c.zookeeper.split("/", 1)[1]
        zk = KazooClient(connect)
        zk.start(timeout=15)
        try:
            assert sorted(zk.get_children(chroot + "/brokers/ids")) == ["1", "2", "3"]
            _acks_all_through_failover(c)
            broker = c.brokers[1]
            epoch = broker.server.broker_epoch
            c.expire_session(broker.broker_id)      # registers again under a new session
            assert broker.server.broker_epoch > epoch
            assert sorted(zk.get_children(chroot + "/brokers/ids")) == ["1", "2", "3"]
        finally:
            zk.stop()
            zk.close()
    zk = KazooClient(connect)
    zk.start(timeout=15)
    try:
        assert zk.exists(chroot) is None        # the cluster's chroot is gone
    finally:
        zk.stop()
        zk.close()


async def test_controller_failover_and_sessions():
    async with cluster(brokers=3) as c:
        ctl = c.controller
        store = ctl.server.store
        assert sorted(store.get_children("/brokers/ids")) == ["1", "2", "3"]
        sessions = {h.server.store.session_id for h in c.brokers}
        assert len(sessions) == 3               # one metadata session per broker
        owner = store.get("/controller")[1].ephemeral_owner
        assert owner == ctl.server.store.session_id
        epoch_before = ctl.server.broker_epoch

        await c.create_topic("t", partitions=3, replication_factor=3)
        await c.fail(ctl.broker_id)
        await c.wait_ready()
        new_ctl = c.controller
        assert new_ctl is not None and new_ctl.broker_id != ctl.broker_id
        assert new_ctl.server.store.get_children("/brokers/ids") == sorted(
            str(h.broker_id) for h in c.running)
        for p in range(3):
            assert await c.wait_leader("t", p, other_than=ctl.broker_id) != ctl.broker_id

        await c.restart(ctl.broker_id)
        assert ctl.server.broker_epoch > epoch_before     # a new registration
        for p in range(3):
            assert sorted(await c.wait_isr("t", p)) == [1, 2, 3]


async def test_session_expiry_reregisters():
    async with cluster(brokers=3) as c:
        await c.create_topic("s", partitions=2, replication_factor=3)
        ctl = c.controller
        other = next(h for h in c.brokers if h is not ctl)
        epoch = other.server.broker_epoch
        await c.expire_session(other.broker_id)
        assert other.server.broker_epoch > epoch and other.running
        owner = ctl.server.store.get(f"/brokers/ids/{other.broker_id}")[1].ephemeral_owner
        assert owner == other.server.store.session_id
        # the controller's own session: /controller goes, someone is elected again
        await c.expire_session(ctl.broker_id)
        assert c.controller is not None
        for p in range(2):
            assert sorted(await c.wait_isr("s", p)) == [1, 2, 3]


async def test_records_replicated_and_clean_stop():
    async with cluster(brokers=2, num_partitions=2) as c:
        await c.create_topic("two", replication_factor=2)
        assert [await c.leader("two", p) >= 1 for p in range(2)] == [True, True]
        await c.stop(1)                         # a clean stop (not fail)
        await c.wait_ready()
        assert [h.broker_id for h in c.running] == [2]
        await c.restart(1)
        assert sorted(h.broker_id for h in c.running) == [1, 2]


async def test_shared_mock_clock_advances_once():
    clock = MockClock()
    async with cluster(brokers=2, clock=clock) as c:
        assert all(h.clock is clock for h in c.brokers)
        before = clock.time_ms()
        await c.advance(1000)
        assert clock.time_ms() == before + 1000
        await c.create_topic("clocked", partitions=1, replication_factor=2)


def test_unique_chroot_per_cluster_object():
    from kafkapy.testing._cluster import _ZooKeeperChroot
    a, b = _ZooKeeperChroot("127.0.0.1:2181"), _ZooKeeperChroot("127.0.0.1:2181/base/")
    assert a.chroot != b.chroot and a.connect.startswith("127.0.0.1:2181/kafkapy-test-")
    assert b.connect.startswith("127.0.0.1:2181/base/kafkapy-test-")
