"""The replica fetcher against a real kafkapy broker acting as the leader.

One broker process (node 0) holds a topic assigned to replicas [0, 1]; this test
plays broker 1: a ``ReplicaFetcherManager`` over a local Partition (real Log in
tmp_path, real MetadataCache, real BrokerConnection) follows the leader, and its
log must become the leader's log byte for byte: segment file, offsets, epochs,
timestamps; then it keeps following new appends (long-polled follower fetches).
A diverged follower truncates (diverging epoch, or out of range); a partition the
leader does not host backs off.  In ZooKeeper mode, with broker 1 registered so that
the ISR is [0, 1], an acks=all produce completes only once the follower has fetched
past it (the leader's HW follows the follower's fetch offsets).
"""
from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from kafkapy.clock import SYSTEM_CLOCK
from kafkapy.log.log import Log
from kafkapy.metadata.cache import BrokerEndpoint, MetadataCache, PartitionState, TopicMetadata
from kafkapy.protocol.errors import ErrorCode
from kafkapy.records.record import build_batch
from kafkapy.replication.partition import Partition
from tests.support.broker_process import BrokerProcess, free_port
from tests.support.follower_fetch import follower_fetchers
from tests.support.request_fields import fields
from tests.support.wire import WireClient
from tests.support.zookeeper_server import zk, zk_connect, zookeeper_server  # noqa: F401  (fixtures)

TOPIC = "followed"
SEGMENT = "00000000000000000000.log"
FOLLOWER_CONFIG = {
    "replica.fetch.wait.max.ms": 500, "replica.fetch.min.bytes": 1,
    "replica.fetch.response.max.bytes": 10485760,
    "replica.fetch.max.bytes": 4096,   # small: several round trips for the first copy
    "replica.fetch.backoff.ms": 200, "replica.socket.timeout.ms": 30000,
}


# Broker 1 is never alive: a controlled shutdown could not move the leadership anyway.
LEADER_OVERRIDES = {"controlled.shutdown.enable": "false"}


@pytest.fixture
def leader(tmp_path):
    with BrokerProcess(tmp_path / "leader", overrides=LEADER_OVERRIDES).start() as broker:
        yield broker


def _create_topic(wire: WireClient) -> None:
    response = wire.request(19, 7, **fields(19, topics=[dict(
        name=TOPIC, num_partitions=-1, replication_factor=-1, configs=[],
        assignments=[dict(partition_index=0, broker_ids=[0, 1])])],
        timeout_ms=10000, validate_only=False))
    assert response.topics[0].error_code == 0, response


def _topic_state(wire: WireClient):
    """(topic id, leader epoch) from Metadata v12, once the partition has its leader."""
    for _ in range(300):
        response = wire.request(3, 12, **fields(3, topics=[dict(name=TOPIC, topic_id=None)],
                                               allow_auto_topic_creation=False,
                                               include_topic_authorized_operations=False))
        [topic] = response.topics
        if topic.error_code == 0 and topic.partitions and topic.partitions[0].leader_id == 0:
            return topic.topic_id, topic.partitions[0].leader_epoch
        time.sleep(0.1)
    raise AssertionError(f"no leader for {TOPIC}: {response}")


def _produce(wire: WireClient, count: int, first: int = 0) -> None:
    for i in range(first, first + count):
        records = [(b"k%d" % i, b"value-%d-" % i + b"x" * 300, [], 1_700_000_000_000 + i)]
        batch = build_batch(records, compression=1 if i % 3 == 0 else 0)
        response = wire.request(0, 9, **fields(0, transactional_id=None, acks=1,
                                               timeout_ms=5000, topic_data=[dict(
                                                   name=TOPIC, partition_data=[dict(
                                                       index=0, records=bytes(batch))])]))
        assert response.responses[0].partition_responses[0].error_code == 0


def _follower(tmp_path: Path, leader: BrokerProcess, topic_id, epoch: int):
    """Broker 1's side: its metadata cache (the leader's endpoint, the topic) and the
    partitions it hosts, the followed one made follower."""
    cache = MetadataCache("c", 1)
    endpoint = BrokerEndpoint(0, "127.0.0.1", leader.port)
    cache.put_broker(endpoint, {"PLAINTEXT": endpoint})
    state = PartitionState(0, [0, 1], 0, epoch, [0, 1])
    cache.put_topic(TopicMetadata(TOPIC, topic_id, {0: state}))
    log = Log.load(str(tmp_path / "follower" / f"{TOPIC}-0"), {}, SYSTEM_CLOCK)
    partition = Partition(TOPIC, 0, log, state, 1)
    assert partition.make_follower(state)
    return cache, {(TOPIC, 0): partition}


async def _until(predicate, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)


def _follow_leader(leader: BrokerProcess, records: int, follow) -> None:
    """Creates TOPIC on ``leader`` (replicas [0, 1]), writes ``records`` batches to it, then
    runs ``follow(wire, topic_id, epoch)`` (a coroutine function; ``wire`` writes more) for
    at most 60 s."""
    wire = WireClient(leader.bootstrap)
    try:
        _create_topic(wire)
        topic_id, epoch = _topic_state(wire)
        _produce(wire, records)
        asyncio.run(asyncio.wait_for(follow(wire, topic_id, epoch), 60))
    finally:
        wire.close()


def test_follower_copies_the_leaders_log_byte_for_byte(tmp_path, leader):
    leader_segment = leader.log_dir / f"{TOPIC}-0" / SEGMENT

    async def follow(wire: WireClient, topic_id, epoch: int) -> None:
        cache, partitions = _follower(tmp_path, leader, topic_id, epoch)
        partition = partitions[(TOPIC, 0)]
        fetchers = follower_fetchers(1, cache, partitions, FOLLOWER_CONFIG)
        fetchers.add_partitions({(TOPIC, 0): (0, partition.log.log_end_offset)})
        try:
            await _until(lambda: partition.log.log_end_offset == 30)
            follower_segment = Path(partition.log.dir) / SEGMENT
            assert follower_segment.read_bytes() == leader_segment.read_bytes()
            await _until(lambda: partition.high_watermark == 30)
            assert partition.log.leader_epoch_cache.entries == [(epoch, 0)]
            # Appends while the follower's fetch waits at the log end reach it too.
            await asyncio.get_running_loop().run_in_executor(None, _produce, wire, 5, 30)
            await _until(lambda: partition.log.log_end_offset == 35)
            await _until(lambda: partition.high_watermark == 35)
            assert follower_segment.read_bytes() == leader_segment.read_bytes()
            leader_id, state = fetchers.fetch_state((TOPIC, 0))
            assert (leader_id, state.fetch_offset) == (0, 35)
            fetchers.remove_partitions([(TOPIC, 0)])
            assert fetchers.fetch_state((TOPIC, 0)) is None
        finally:
            await fetchers.shutdown()
            partition.log.close()

    _follow_leader(leader, 30, follow)


def _diverged_follower_follows(tmp_path, leader, extra_epoch_delta: int) -> None:
    """A follower whose log holds the leader's 30 batches and 10 more the leader never
    had, written in the leader's epoch plus ``extra_epoch_delta``: it truncates to 30,
    then copies what the leader appends next, byte for byte."""
    leader_segment = leader.log_dir / f"{TOPIC}-0" / SEGMENT

    async def follow(wire: WireClient, topic_id, epoch: int) -> None:
        cache, partitions = _follower(tmp_path, leader, topic_id, epoch)
        partition = partitions[(TOPIC, 0)]
        partition.append_as_follower(leader_segment.read_bytes())
        for i in range(10):
            partition.append_as_follower(build_batch(
                [(None, b"lost-%d" % i, [], 1_700_000_000_000)], base_offset=30 + i,
                partition_leader_epoch=epoch + extra_epoch_delta))
        assert partition.log.log_end_offset == 40
        fetchers = follower_fetchers(1, cache, partitions, FOLLOWER_CONFIG)
        fetchers.add_partitions({(TOPIC, 0): (0, partition.log.log_end_offset)})
        try:
            await _until(lambda: partition.log.log_end_offset == 30)
            await asyncio.get_running_loop().run_in_executor(None, _produce, wire, 5, 30)
            await _until(lambda: partition.high_watermark == 35)
            follower_segment = Path(partition.log.dir) / SEGMENT
            assert follower_segment.read_bytes() == leader_segment.read_bytes()
            assert partition.log.leader_epoch_cache.entries == [(epoch, 0)]
        finally:
            await fetchers.shutdown()
            partition.log.close()

    _follow_leader(leader, 30, follow)


def test_diverging_epoch_truncates_the_follower(tmp_path, leader):
    """Same last epoch, longer log: the leader answers diverging_epoch (epoch, 30)."""
    _diverged_follower_follows(tmp_path, leader, 0)


def test_offset_out_of_range_truncates_the_follower(tmp_path, leader):
    """A last epoch the leader never had: OFFSET_OUT_OF_RANGE; the follower asks the
    leader's end offset (ListOffsets) and truncates to it."""
    _diverged_follower_follows(tmp_path, leader, 7)


def test_a_partition_the_leader_does_not_host_backs_off(tmp_path, leader):
    """UNKNOWN_TOPIC_OR_PARTITION (the leader may not have had its LeaderAndIsr yet):
    the fetcher keeps the partition, retries after replica.fetch.backoff.ms, and the
    other partitions of the same leader keep being fetched."""
    async def follow(wire: WireClient, topic_id, epoch: int) -> None:
        cache, partitions = _follower(tmp_path, leader, topic_id, epoch)
        partition = partitions[(TOPIC, 0)]
        state = PartitionState(5, [0, 1], 0, epoch, [0, 1])
        cache.topics[TOPIC].partitions[5] = state
        log = Log.load(str(tmp_path / "follower" / f"{TOPIC}-5"), {}, SYSTEM_CLOCK)
        missing = Partition(TOPIC, 5, log, state, 1)
        missing.make_follower(state)
        partitions[(TOPIC, 5)] = missing
        fetchers = follower_fetchers(1, cache, partitions, FOLLOWER_CONFIG)
        fetchers.add_partitions({(TOPIC, 0): (0, 0), (TOPIC, 5): (0, 0)})
        try:
            await _until(lambda: fetchers.fetch_state((TOPIC, 5))[1].delayed_until_ms > 0)
            await _until(lambda: partition.high_watermark == 3)
            assert fetchers.fetch_state((TOPIC, 5))[0] == 0
            assert missing.log.log_end_offset == 0
        finally:
            await fetchers.shutdown()
            partition.log.close()
            missing.log.close()

    _follow_leader(leader, 3, follow)


# -- the leader's side: its high watermark follows the follower's fetches -----------------

def _register_broker_1(zk) -> int:
    """Broker 1's registration (ephemeral, this test's session): the controller sees it
    live, so a new partition on [0, 1] gets the ISR [0, 1].  Its endpoint has no
    listener; the controller's requests to it just wait.  Returns its broker epoch."""
    from kafkapy.metadata import paths
    payload = paths.encode_broker_registration(
        [paths.EndPoint("PLAINTEXT", "127.0.0.1", free_port(), "PLAINTEXT")],
        int(time.time() * 1000))
    zk.ensure_path("/brokers/ids")
    zk.create("/brokers/ids/1", payload, ephemeral=True)
    return zk.exists("/brokers/ids/1").czxid


def _write_topic_with_isr_0_1(zk) -> None:
    """The topic's znodes as a controller leaves them: replicas and ISR [0, 1], leader 0."""
    from kafkapy.metadata import paths
    from kafkapy.metadata.topics import new_topic_id, topic_id_text
    zk.create(paths.topic_path(TOPIC), paths.encode_topic_assignment(
        {0: [0, 1]}, topic_id_text(new_topic_id())), makepath=True)
    zk.create(paths.partition_state_path(TOPIC, 0),
              paths.encode_partition_state(0, 0, [0, 1], 1), makepath=True)


def _isr(zk) -> list[int]:
    from kafkapy.metadata import paths
    data, stat = zk.get(paths.partition_state_path(TOPIC, 0))
    return list(paths.decode_partition_state(data, stat).isr)


def _produce_all(wire: WireClient, value: bytes, timeout_ms: int) -> int:
    batch = build_batch([(None, value, [], int(time.time() * 1000))])
    response = wire.request(0, 9, **fields(0, transactional_id=None, acks=-1,
                                           timeout_ms=timeout_ms, topic_data=[dict(
                                               name=TOPIC, partition_data=[dict(
                                                   index=0, records=bytes(batch))])]))
    return response.responses[0].partition_responses[0].error_code


def test_acks_all_completes_when_the_follower_has_fetched(tmp_path, zk, zk_connect):  # noqa: F811
    broker_epoch = _register_broker_1(zk)
    _write_topic_with_isr_0_1(zk)
    leader = BrokerProcess(tmp_path / "leader", overrides={**LEADER_OVERRIDES,
                                                             "zookeeper.connect": zk_connect})
    leader.start()
    wire = WireClient(leader.bootstrap)
    try:
        topic_id, epoch = _topic_state(wire)
        assert _isr(zk) == [0, 1], "broker 1 is registered: it stays in the ISR"
        # Nobody fetches for broker 1 yet: the HW cannot pass the append.
        assert _produce_all(wire, b"waits", 1000) == ErrorCode.REQUEST_TIMED_OUT

        async def follow() -> None:
            cache, partitions = _follower(tmp_path, leader, topic_id, epoch)
            partition = partitions[(TOPIC, 0)]
            fetchers = follower_fetchers(1, cache, partitions, FOLLOWER_CONFIG,
                                         broker_epoch=broker_epoch)
            fetchers.add_partitions({(TOPIC, 0): (0, 0)})
            try:
                loop = asyncio.get_running_loop()
                code = await loop.run_in_executor(None, _produce_all, wire, b"done", 20000)
                assert code == 0
                await _until(lambda: partition.log.log_end_offset == 2)
                await _until(lambda: partition.high_watermark == 2)
            finally:
                await fetchers.shutdown()
                partition.log.close()

        asyncio.run(asyncio.wait_for(follow(), 60))
    finally:
        wire.close()
        leader.kill()   # (a clean stop waits for the controller's requests to broker 1)
