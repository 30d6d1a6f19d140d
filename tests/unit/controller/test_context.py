"""ControllerContext: the controller's view and its queries."""
from __future__ import annotations

from kafkapy.controller.context import (
    ControllerContext, LiveBroker, PartitionStateName, ReplicaState)
from kafkapy.metadata.leader_and_isr import LeaderAndIsr
from kafkapy.metadata.paths import EndPoint


def _ctx() -> ControllerContext:
    ctx = ControllerContext(epoch=3, epoch_zk_version=3)
    for b in (1, 2, 3):
        ctx.add_live_broker(LiveBroker(b, (EndPoint("PLAINTEXT", "h", 9000 + b, "PLAINTEXT"),),
                                       None, 100 + b))
    ctx.add_topic("t", "id-t", {0: [1, 2], 1: [2, 3]})
    ctx.add_topic("u", None, {0: [3]})
    ctx.put_leadership(("t", 0), LeaderAndIsr(1, 0, (1, 2), 3, 0))
    ctx.put_leadership(("t", 1), LeaderAndIsr(2, 0, (2, 3), 3, 0))
    return ctx


def test_queries():
    ctx = _ctx()
    assert ctx.all_partitions() == [("t", 0), ("t", 1), ("u", 0)]
    assert ctx.partitions_on_broker(2) == [("t", 0), ("t", 1)]
    assert ctx.partitions_led_by(2) == [("t", 1)]
    assert ctx.replicas(("t", 1)) == [2, 3] and ctx.replicas(("x", 0)) == []
    assert ctx.replicas_on_brokers([3]) == [(("t", 1), 3), (("u", 0), 3)]
    assert ctx.broker_epoch(2) == 102 and ctx.broker_epoch(9) == -1
    assert ctx.live_brokers[1].endpoint("PLAINTEXT").port == 9001
    assert ctx.topic_ids == {"t": "id-t"}


def test_liveness_shutting_down_and_offline_dirs():
    ctx = _ctx()
    ctx.shutting_down_broker_ids.add(2)
    assert ctx.live_broker_ids() == {1, 3}
    assert ctx.live_or_shutting_down_broker_ids() == {1, 2, 3}
    assert not ctx.is_replica_online(2, ("t", 0))
    assert ctx.is_replica_online(2, ("t", 0), include_shutting_down=True)
    ctx.replicas_on_offline_dirs[1] = {("t", 0)}
    assert not ctx.is_replica_online(1, ("t", 0))
    online, offline = ctx.online_and_offline_replicas()
    assert (("t", 0), 1) in offline and (("t", 0), 2) in online
    ctx.remove_live_brokers([2])
    assert 2 not in ctx.shutting_down_broker_ids and not ctx.is_replica_online(2, ("t", 1), True)


def test_states_and_topic_removal():
    ctx = _ctx()
    assert ctx.partition_state(("t", 0)) is PartitionStateName.NON_EXISTENT
    ctx.put_partition_state(("t", 0), PartitionStateName.ONLINE)
    ctx.put_replica_state((("t", 0), 1), ReplicaState.ONLINE)
    ctx.put_replica_state((("t", 0), 2), ReplicaState.DELETION_STARTED)
    assert ctx.is_any_replica_in_state("t", ReplicaState.DELETION_STARTED)
    assert not ctx.are_all_replicas_in_state("t", ReplicaState.ONLINE)
    ctx.queue_topic_deletion(["t"])
    assert ctx.is_topic_queued_for_deletion("t") and ctx.is_partition_being_deleted(("t", 1))
    ctx.remove_topic("t")
    assert "t" not in ctx.assignments and ("t", 0) not in ctx.leadership
    assert not ctx.replica_states and not ctx.partition_states
    assert not ctx.topics_to_be_deleted


def test_leader_isr_helpers_and_clear():
    li = LeaderAndIsr(1, 4, (1, 2), 3, partition_epoch=7)
    moved = li.new_leader_and_isr(2, [2])
    assert (moved.leader, moved.leader_epoch, moved.isr, moved.partition_epoch) == (2, 5, (2,), 7)
    assert li.with_partition_epoch(8, 4).partition_epoch == 8
    ctx = _ctx()
    ctx.clear()
    assert ctx.epoch == 0 and ctx.epoch_zk_version == -1
    assert not ctx.live_brokers and not ctx.assignments and not ctx.leadership
