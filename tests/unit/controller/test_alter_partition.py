"""The controller's AlterPartition (Kafka 3.9's KafkaController.processAlterPartition, ZK
mode) against a real ZooKeeper: the broker-epoch, leader-epoch and partition-epoch checks,
ineligible ISR members, the idempotent retry, the conditional znode write, the context and
the UpdateMetadata that follow; NOT_CONTROLLER from a broker that is not active.

Brokers are the stand-ins of ``tests.support.controller`` (FakeBroker / FakeChannel)."""
from __future__ import annotations

import uuid

from kafkapy.protocol.errors import ErrorCode
from tests.support.alter_partition import TOPIC_ID, request
from tests.support.controller import (FakeBroker, create_topic, eventually,  # noqa: F401 (zk)
                                      state, zk)
from tests.support.zookeeper_server import zk_connect, zookeeper_server  # noqa: F401 (fixtures)


def answers(response) -> dict:
    return {p.partition_index: p for t in response.topics for p in t.partitions}


async def three_brokers(zk):
    network: dict = {}
    brokers = [FakeBroker(i, zk(), network) for i in (1, 2, 3)]
    for b in brokers:
        b.register()
    create_topic(brokers[0].store, "t", {0: [1, 2, 3], 1: [1, 2, 3], 2: [2, 1, 3]},
                 topic_id=TOPIC_ID)
    controller = brokers[0].start_controller()
    await controller.startup()
    return brokers, controller


async def test_alter_partition_checks_writes_and_tells_everyone(zk):
    (b1, b2, b3), c1 = await three_brokers(zk)
    try:
        store = b1.store
        assert state(store, "t", 0).isr == (1, 2, 3)
        # unknown broker, stale broker epoch: top-level STALE_BROKER_EPOCH
        got = await c1.alter_partition(request(9, -1, [(0, 0, [1, 2], 0)]), 3)
        assert (got.error_code, got.topics) == (ErrorCode.STALE_BROKER_EPOCH, [])
        got = await c1.alter_partition(request(1, b1.broker_epoch - 1, [(0, 0, [1, 2], 0)]), 3)
        assert got.error_code == ErrorCode.STALE_BROKER_EPOCH
        # shrink t-0 to [1, 2]: written at zk version 1, UpdateMetadata to all
        got = await c1.alter_partition(request(1, b1.broker_epoch, [(0, 0, [1, 2], 0)]), 3)
        assert got.error_code == 0
        a = answers(got)[0]
        assert (a.error_code, a.leader_id, a.leader_epoch, list(a.isr), a.partition_epoch) == (
            0, 1, 0, [1, 2], 1)
        s0 = state(store, "t", 0)
        assert (s0.leader, s0.leader_epoch, s0.isr, s0.controller_epoch) == (1, 0, (1, 2), 1)
        assert c1.ctx.leadership[("t", 0)].isr == (1, 2)
        assert c1.ctx.leadership[("t", 0)].partition_epoch == 1
        for b in (b1, b2, b3):
            await eventually(lambda b=b: list(b.metadata().get(("t", 0)).isr) == [1, 2],
                             f"UpdateMetadata to {b.node_id}")
        assert b2.metadata()[("t", 0)].zk_version == 1
        # the same request again (a retry after a lost answer): the current state
        got = await c1.alter_partition(request(1, b1.broker_epoch, [(0, 0, [1, 2], 0)]), 3)
        assert (answers(got)[0].error_code, answers(got)[0].partition_epoch) == (0, 1)
        # an old partition epoch, an old leader epoch, a newer one, unknown partition
        got = await c1.alter_partition(request(1, b1.broker_epoch, [
            (0, 0, [1], 0), (1, -1, [1], 0), (2, 3, [2], 0), (7, 0, [1], 0)]), 3)
        codes = {p: a.error_code for p, a in answers(got).items()}
        assert codes == {0: ErrorCode.INVALID_UPDATE_VERSION,
                         1: ErrorCode.FENCED_LEADER_EPOCH,
                         2: ErrorCode.NOT_CONTROLLER,
                         7: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        # expand back with a member that is shutting down / gone: INELIGIBLE_REPLICA
        c1.ctx.shutting_down_broker_ids.add(3)
        got = await c1.alter_partition(request(1, b1.broker_epoch, [(0, 0, [1, 2, 3], 1)]), 3)
        assert answers(got)[0].error_code == ErrorCode.INELIGIBLE_REPLICA
        got = await c1.alter_partition(request(1, b1.broker_epoch, [(0, 0, [1, 2, 3], 1)],
                                               version=1), 1)
        assert answers(got)[0].error_code == ErrorCode.OPERATION_NOT_ATTEMPTED
        c1.ctx.shutting_down_broker_ids.discard(3)
        got = await c1.alter_partition(request(1, b1.broker_epoch, [(0, 0, [1, 2, 3], 1)]), 3)
        assert (answers(got)[0].error_code, answers(got)[0].partition_epoch) == (0, 2)
        assert state(store, "t", 0).isr == (1, 2, 3)
        # an unknown topic id
        got = await c1.alter_partition(request(1, b1.broker_epoch, [(0, 0, [1], 2)],
                                               topic_id=uuid.uuid4()), 3)
        assert answers(got)[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID
    finally:
        await c1.shutdown()


async def test_someone_else_wrote_the_znode_meanwhile(zk):
    """The context's zk version is behind the znode: BadVersion -> INVALID_UPDATE_VERSION."""
    (b1, b2, b3), c1 = await three_brokers(zk)
    try:
        from kafkapy.metadata import paths
        path = paths.partition_state_path("t", 1)
        data, stat = b1.store.get(path)
        b1.store.set(path, data, version=stat.version)      # zk version 1, context has 0
        got = await c1.alter_partition(request(1, b1.broker_epoch, [(1, 0, [1, 2], 0)]), 3)
        assert answers(got)[1].error_code == ErrorCode.INVALID_UPDATE_VERSION
        assert state(b1.store, "t", 1).isr == (1, 2, 3)
    finally:
        await c1.shutdown()


async def test_not_active_answers_not_controller(zk):
    (b1, b2, b3), c1 = await three_brokers(zk)
    try:
        c2 = b2.start_controller()
        await c2.startup()
        assert not c2.is_active
        got = await c2.alter_partition(request(1, b1.broker_epoch, [(0, 0, [1, 2], 0)]), 3)
        assert (got.error_code, got.topics) == (ErrorCode.NOT_CONTROLLER, [])
        await c2.shutdown()
    finally:
        await c1.shutdown()
