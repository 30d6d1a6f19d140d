"""The share coordinator in a real broker (``kafkapy.testing.broker``), asked over a socket
as another broker asks it: InitializeShareGroupState, ReadShareGroupState,
WriteShareGroupState, DeleteShareGroupState, ReadShareGroupStateSummary and FindCoordinator
with key type SHARE; ``__share_group_state`` as Kafka creates it; the state read back after
a restart (replayed from the log); pruning on the broker's clock."""
from __future__ import annotations

import asyncio
import uuid

import pytest

from kafkapy.coordinator.share.persister import StateBatch
from kafkapy.coordinator.share.state import ShareKey
from kafkapy.metadata.topics import SHARE_GROUP_STATE_TOPIC, topic_id_text
from kafkapy.network.client import BrokerConnection
from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.protocol.messages import REQUESTS
from kafkapy.protocol.share_group_apis import (
    DeleteShareGroupStateRequest,
    InitializeShareGroupStateRequest,
    ReadShareGroupStateRequest,
    ReadShareGroupStateSummaryRequest,
    WriteShareGroupStateRequest,
)
from kafkapy.testing import MockClock, broker

GROUP = "share-g"
TOPIC = "events"


def initialize(topic_id, partition, state_epoch, start_offset, group=GROUP):
    R = InitializeShareGroupStateRequest[0]
    return R(group_id=group, topics=[R.InitializeStateData(topic_id=topic_id, partitions=[
        R.InitializeStateData.PartitionData(partition=partition, state_epoch=state_epoch,
                                            start_offset=start_offset)])])


def read(topic_id, partitions, leader_epoch):
    R = ReadShareGroupStateRequest[0]
    return R(group_id=GROUP, topics=[R.ReadStateData(topic_id=topic_id, partitions=[
        R.ReadStateData.PartitionData(partition=p, leader_epoch=leader_epoch)
        for p in partitions])])


def write(topic_id, partition, *, state_epoch, leader_epoch, start_offset, batches,
          version=1, dcc=-1):
    R = WriteShareGroupStateRequest[version]
    data = R.WriteStateData.PartitionData
    fields = dict(partition=partition, state_epoch=state_epoch, leader_epoch=leader_epoch,
                  start_offset=start_offset, state_batches=[data.StateBatch(
                      first_offset=b.first_offset, last_offset=b.last_offset,
                      delivery_state=b.delivery_state, delivery_count=b.delivery_count)
                      for b in batches])
    if version >= 1:
        fields["delivery_complete_count"] = dcc
    return R(group_id=GROUP, topics=[R.WriteStateData(topic_id=topic_id,
                                                      partitions=[data(**fields)])])


def delete(topic_id, partition):
    R = DeleteShareGroupStateRequest[0]
    return R(group_id=GROUP, topics=[R.DeleteStateData(topic_id=topic_id, partitions=[
        R.DeleteStateData.PartitionData(partition=partition)])])


def summary(topic_id, partition, version=1):
    R = ReadShareGroupStateSummaryRequest[version]
    return R(group_id=GROUP, topics=[R.ReadStateSummaryData(topic_id=topic_id, partitions=[
        R.ReadStateSummaryData.PartitionData(partition=partition, leader_epoch=0)])])


def only(response):
    [topic] = response.results
    [partition] = topic.partitions
    return partition


async def connect(b) -> BrokerConnection:
    conn = BrokerConnection(client_id="share-test")
    await conn.connect(b.host, b.port)
    return conn


async def find_coordinator(conn, key: str, timeout_s: float = 30.0):
    """FindCoordinator v6 for a share key until it names a coordinator (the first one
    creates ``__share_group_state``, whose leaders take a moment)."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        [answer] = (await conn.send(REQUESTS[10][6](key_type=2,
                                                    coordinator_keys=[key]))).coordinators
        if answer.error_code != E.COORDINATOR_NOT_AVAILABLE:
            return answer
        assert asyncio.get_running_loop().time() < deadline, "no share coordinator"
        await asyncio.sleep(0.05)


async def state_topic_ready(b, topic_id) -> None:
    """As another broker would: find the coordinator, then wait until it has loaded."""
    conn = await connect(b)
    await find_coordinator(conn, ShareKey(GROUP, topic_id, 0).coordinator_key())
    conn.close()
    coordinator = b.server.share_coordinator.coordinator
    for _ in range(600):
        if all(coordinator.loaded(i) for i in range(coordinator.settings.num_partitions)):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the share coordinator did not load")


@pytest.fixture
async def node():
    async with broker() as b:
        await b.create_topic(TOPIC, 2)
        await state_topic_ready(b, b.server.cache.topic(TOPIC).topic_id)
        yield b


async def test_state_written_over_the_wire_is_read_back_after_a_restart(node):
    topic_id = node.server.cache.topic(TOPIC).topic_id
    conn = await connect(node)
    assert only(await conn.send(initialize(topic_id, 0, 1, -1))).error_code == 0
    assert only(await conn.send(read(topic_id, [0], 4))).error_code == 0
    batches = [StateBatch(10, 19, 2, 1), StateBatch(20, 24, 0, 2)]
    answer = only(await conn.send(write(topic_id, 0, state_epoch=1, leader_epoch=4,
                                        start_offset=10, batches=batches, dcc=10)))
    assert (answer.error_code, answer.error_message) == (0, None)
    conn.close()

    await node.stop()
    await node.start()
    await state_topic_ready(node, topic_id)
    conn = await connect(node)
    got = await conn.send(read(topic_id, [0, 1], 4))
    first, second = got.results[0].partitions
    assert (first.error_code, first.state_epoch, first.start_offset) == (0, 1, 10)
    assert [(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
            for b in first.state_batches] == [(10, 19, 2, 1), (20, 24, 0, 2)]
    assert second.error_code == E.INVALID_REQUEST          # never initialized
    s = only(await conn.send(summary(topic_id, 0)))
    assert (s.error_code, s.state_epoch, s.leader_epoch, s.start_offset,
            s.delivery_complete_count) == (0, 1, 4, 10, 10)
    # the leader epoch survived the restart: an older leader is fenced
    fenced = only(await conn.send(write(topic_id, 0, state_epoch=1, leader_epoch=3,
                                        start_offset=12, batches=[])))
    assert fenced.error_code == E.FENCED_LEADER_EPOCH
    conn.close()


async def test_fencing_delete_and_unknown_topics_over_the_wire(node):
    topic_id = node.server.cache.topic(TOPIC).topic_id
    conn = await connect(node)
    assert only(await conn.send(initialize(topic_id, 1, 5, 0))).error_code == 0
    assert only(await conn.send(initialize(topic_id, 1, 4, 0))).error_code == \
        E.FENCED_STATE_EPOCH
    w0 = only(await conn.send(write(topic_id, 1, state_epoch=5, leader_epoch=0,
                                    start_offset=0, batches=[], version=0)))
    assert w0.error_code == 0
    assert only(await conn.send(write(topic_id, 1, state_epoch=4, leader_epoch=0,
                                      start_offset=0, batches=[]))).error_code == \
        E.FENCED_STATE_EPOCH
    assert only(await conn.send(delete(topic_id, 1))).error_code == 0
    assert only(await conn.send(read(topic_id, [1], 0))).error_code == E.INVALID_REQUEST
    assert only(await conn.send(delete(topic_id, 1))).error_code == 0   # again: no error
    unknown = uuid.uuid4()
    assert only(await conn.send(initialize(unknown, 0, 0, 0))).error_code == \
        E.UNKNOWN_TOPIC_OR_PARTITION
    assert only(await conn.send(summary(topic_id, 9, version=0))).error_code == \
        E.UNKNOWN_TOPIC_OR_PARTITION
    # an empty group id: no results, as Kafka's service answers it
    assert (await conn.send(initialize(topic_id, 0, 0, 0, group=""))).results == []
    conn.close()


async def test_find_coordinator_names_the_leader_of_the_keys_partition(node):
    topic_id = node.server.cache.topic(TOPIC).topic_id
    key = ShareKey(GROUP, topic_id, 1).coordinator_key()
    assert key == f"{GROUP}:{topic_id_text(topic_id)}:1"
    conn = await connect(node)
    await find_coordinator(conn, key)
    answer = await conn.send(REQUESTS[10][6](key_type=2, coordinator_keys=[key, "x:y"]))
    good, bad = answer.coordinators
    assert (good.error_code, good.node_id, good.port) == (0, node.broker_id, node.port)
    assert (bad.error_code, bad.node_id) == (E.INVALID_REQUEST, -1)
    old = await conn.send(REQUESTS[10][5](key_type=2, coordinator_keys=[key]))
    assert old.coordinators[0].error_code == E.INVALID_REQUEST
    conn.close()


async def test_the_state_topic_is_created_as_kafka_creates_it(node):
    topic_id = node.server.cache.topic(TOPIC).topic_id
    assert await node.server.share_persister.initialize(GROUP, topic_id, 0, state_epoch=0,
                                                        start_offset=0) == 0
    server = node.server
    topic = server.cache.topic(SHARE_GROUP_STATE_TOPIC)
    assert topic is not None and topic.internal and len(topic.partitions) == 5
    config = server.topic_config(SHARE_GROUP_STATE_TOPIC)
    assert (config["cleanup.policy"], config["retention.ms"], config["compression.type"],
            config["min.insync.replicas"], config["segment.bytes"]) == (
        ["delete"], -1, "producer", 1, 104857600)


async def test_pruning_moves_the_log_start_to_the_last_redundant_offset():
    clock = MockClock()
    async with broker(clock=clock, settings={
            "share.coordinator.state.topic.num.partitions": "1",
            "share.coordinator.snapshot.update.records.per.snapshot": "0",
            "share.coordinator.cold.partition.snapshot.interval.ms": "3600000"}) as b:
        await b.create_topic(TOPIC, 2)
        topic_id = b.server.cache.topic(TOPIC).topic_id
        persister = b.server.share_persister
        for partition in (0, 1):
            assert await persister.initialize(GROUP, topic_id, partition, state_epoch=0,
                                              start_offset=0) == 0
        for start in range(1, 4):   # every write a snapshot: older snapshots are superseded
            for partition in (0, 1):
                assert await persister.write(GROUP, topic_id, partition, state_epoch=0,
                                             leader_epoch=0, start_offset=start,
                                             batches=[]) == 0
        log = b.server.log_manager.get_log(SHARE_GROUP_STATE_TOPIC, 0)
        assert log.log_start_offset == 0
        await b.advance(300_000)
        assert log.log_start_offset == 6      # the two latest snapshots are at 6 and 7
        await b.stop()
        await b.start()
        state = await b.server.share_persister.read(GROUP, topic_id, 0, leader_epoch=0)
        assert (state.error, state.start_offset) == (0, 3)
