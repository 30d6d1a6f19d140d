"""kafkapy's replica fetcher following an Apache Kafka 3.9 leader (ZooKeeper mode).

A real ZooKeeper and a Kafka 3.9 broker (id 1); this test registers broker 2 in
ZooKeeper (its endpoint has no listener: the controller's requests to it just
wait) and plays it with kafkapy's ReplicaFetcherManager over local Partitions.
Kafka's leader must accept kafkapy's Fetch v17 (replica state with broker 2's
epoch, last fetched epoch, fetch session): the follower's logs become Kafka's byte
for byte, the session is incremental after the first fetch and, caught up, carries
only what changed; a follower log that holds records Kafka never had is truncated
by Kafka's diverging-epoch answer.  Skips without Java / Kafka 3.9.
"""
from __future__ import annotations

import asyncio
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from kafkapy.clock import SYSTEM_CLOCK
from kafkapy.log.log import Log
from kafkapy.metadata import paths
from kafkapy.metadata.cache import BrokerEndpoint, MetadataCache, PartitionState, TopicMetadata
from kafkapy.network.client import BrokerConnection
from kafkapy.records.record import build_batch
from kafkapy.replication.partition import Partition
from tests.support.broker_process import free_port
from tests.conformance.brokers import KafkaProcess, find_kafka_home, wait_ready
from tests.support.request_fields import fields
from tests.support.follower_fetch import (RecordingConnection, _answered, _sent,
                                          _setup_topic, _until, follower_fetchers)
from tests.support.wire import WireClient
from tests.support.zookeeper_server import zk_connect, zookeeper_server  # noqa: F401  (fixtures)

TOPIC = "from-kafka"
PARTITIONS = 2
SEGMENT = "00000000000000000000.log"
KAFKA_ID, FOLLOWER_ID = 1, 2


@pytest.fixture
def kafka(tmp_path, zk_connect):  # noqa: F811
    home = find_kafka_home()
    if home is None:
        pytest.skip("no Kafka 3.9 (../shared/kafka_2.13-3.9.0 or $KAFKA_HOME) or no java")
    from kazoo.client import KazooClient
    zk = KazooClient(zk_connect.split("/")[0])
    zk.start(timeout=15)
    chroot = "/" + zk_connect.split("/", 1)[1]
    zk.ensure_path(chroot + "/brokers/ids")
    payload = paths.encode_broker_registration(
        [paths.EndPoint("PLAINTEXT", "127.0.0.1", free_port(), "PLAINTEXT")],
        int(time.time() * 1000))
    zk.create(chroot + f"/brokers/ids/{FOLLOWER_ID}", payload, ephemeral=True)
    epoch = zk.exists(chroot + f"/brokers/ids/{FOLLOWER_ID}").czxid
    broker = KafkaProcess(home, tmp_path / "kafka", zk_connect).start()
    try:
        wait_ready(broker.port, broker.proc, broker.output)
        yield SimpleNamespace(process=broker, follower_epoch=epoch,
                              log_dir=tmp_path / "kafka" / "logs")
    finally:
        broker.stop()
        zk.stop()
        zk.close()


def _produce(wire: WireClient, partition: int, count: int, first: int = 0) -> None:
    for i in range(first, first + count):
        batch = build_batch([(b"k%d" % i, b"value-%d-%d" % (partition, i), [],
                              1_700_000_000_000 + i)])
        response = wire.request(0, 9, **fields(0, transactional_id=None, acks=1,
                                               timeout_ms=5000, topic_data=[dict(
                                                   name=TOPIC, partition_data=[dict(
                                                       index=partition,
                                                       records=bytes(batch))])]))
        assert response.responses[0].partition_responses[0].error_code == 0, response


def test_kafkapy_follows_a_kafka_leader_in_a_session(tmp_path, kafka):
    port = kafka.process.port
    wire = WireClient(f"127.0.0.1:{port}")
    topic_id, epochs = _setup_topic(wire, TOPIC, PARTITIONS, (KAFKA_ID, FOLLOWER_ID),
                                    timeout_ms=30000, attempts=200)
    _produce(wire, 0, 20)
    _produce(wire, 1, 5)

    async def follow() -> None:
        cache = MetadataCache("c", FOLLOWER_ID)
        endpoint = BrokerEndpoint(KAFKA_ID, "127.0.0.1", port)
        cache.put_broker(endpoint, {"PLAINTEXT": endpoint})
        states = {p: PartitionState(p, [KAFKA_ID, FOLLOWER_ID], KAFKA_ID, epochs[p],
                                    [KAFKA_ID, FOLLOWER_ID]) for p in range(PARTITIONS)}
        cache.put_topic(TopicMetadata(TOPIC, topic_id, states))
        partitions = {}
        for p, state in states.items():
            log = Log.load(str(tmp_path / "follower" / f"{TOPIC}-{p}"), {}, SYSTEM_CLOCK)
            partition = partitions[(TOPIC, p)] = Partition(TOPIC, p, log, state, FOLLOWER_ID)
            partition.make_follower(state)
        # Partition 1 holds three records the leader never had, in the leader's epoch.
        kafka_p1 = (kafka.log_dir / f"{TOPIC}-1" / SEGMENT).read_bytes()
        partitions[(TOPIC, 1)].append_as_follower(kafka_p1)
        for i in range(3):
            partitions[(TOPIC, 1)].append_as_follower(build_batch(
                [(None, b"never-acked-%d" % i, [], 1_700_000_000_000)], base_offset=5 + i,
                partition_leader_epoch=epochs[1]))
        assert partitions[(TOPIC, 1)].log.log_end_offset == 8
        recorded: list[RecordingConnection] = []

        async def connect(leader_id: int) -> RecordingConnection:
            conn = BrokerConnection(f"broker-{FOLLOWER_ID}-fetcher-0", 30)
            await conn.connect("127.0.0.1", port, 30)
            recorded.append(RecordingConnection(conn))
            return recorded[-1]

        fetchers = follower_fetchers(FOLLOWER_ID, cache, partitions,
                                     broker_epoch=kafka.follower_epoch, connect=connect)
        fetchers.add_partitions({key: (KAFKA_ID, p.log.log_end_offset)
                                 for key, p in partitions.items()})
        try:
            await _until(lambda: partitions[(TOPIC, 0)].high_watermark == 20
                         and partitions[(TOPIC, 1)].log.log_end_offset == 5, 30)
            conn = recorded[-1]
            await _until(lambda: any(not _sent(q) and not _answered(r)
                                     for q, r in conn.exchanges[1:]), 30)
            quiet = len(conn.exchanges)
            await asyncio.get_running_loop().run_in_executor(None, _produce, wire, 1, 4, 5)
            await _until(lambda: partitions[(TOPIC, 1)].high_watermark == 9, 30)
            exchanges = list(conn.exchanges)
            for p in range(PARTITIONS):
                leader_bytes = (kafka.log_dir / f"{TOPIC}-{p}" / SEGMENT).read_bytes()
                follower_bytes = (Path(partitions[(TOPIC, p)].log.dir) / SEGMENT).read_bytes()
                assert follower_bytes == leader_bytes, f"partition {p}"
        finally:
            await fetchers.shutdown()
            for p in partitions.values():
                p.log.close()

        diverged = [p for _, r in exchanges for t in r.responses for p in t.partitions
                    if p.diverging_epoch is not None and p.diverging_epoch.end_offset >= 0]
        assert diverged and diverged[0].diverging_epoch.end_offset == 5
        session = exchanges[0][1].session_id
        assert session != 0, "Kafka created a session for the follower"
        later = exchanges[1:]
        assert all(q.session_id == session for q, _ in later)
        assert [q.session_epoch for q, _ in later] == list(range(1, len(later) + 1))
        after = exchanges[quiet:]
        assert all(_sent(q) <= {1} and _answered(r) <= {1} for q, r in after), \
            [(_sent(q), _answered(r)) for q, r in after]
        assert any(_sent(q) == {1} for q, _ in after)

    try:
        asyncio.run(asyncio.wait_for(follow(), 90))
    finally:
        wire.close()
