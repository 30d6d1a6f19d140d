"""Leader election algorithms: Kafka 3.9's PartitionLeaderElectionAlgorithmsTest cases,
and the elections over a controller context (new ISR, epochs, recipients)."""
from __future__ import annotations

from kafkapy.controller import leader_election as le
from kafkapy.controller.context import ControllerContext, LiveBroker
from kafkapy.metadata.leader_and_isr import LEADER_RECOVERED, LEADER_RECOVERING, LeaderAndIsr


# --- PartitionLeaderElectionAlgorithmsTest ---------------------------------------

def test_offline_partition_leader_election():
    assert le.offline_partition_leader_election([2, 4], [2, 4], {4}, False) == 4


def test_offline_last_isr_offline_unclean_disabled():
    assert le.offline_partition_leader_election([2, 4], [2], {4}, False) is None


def test_offline_last_isr_offline_unclean_enabled():
    assert le.offline_partition_leader_election([2, 4], [2], {4}, True) == 4


def test_offline_prefers_assignment_order_over_isr_order():
    assert le.offline_partition_leader_election([3, 1, 2], [2, 1, 3], {1, 2}, False) == 1


def test_offline_unclean_picks_first_live_in_assignment_order():
    assert le.offline_partition_leader_election([5, 3, 1], [9], {1, 3}, True) == 3


def test_reassign_partition_leader_election():
    assert le.reassign_partition_leader_election([2, 4], [2, 4], {2, 4}) == 2


def test_reassign_with_no_live_isr():
    assert le.reassign_partition_leader_election([2, 4], [2], set()) is None


def test_reassign_with_empty_isr():
    assert le.reassign_partition_leader_election([2], [], {2}) is None


def test_preferred_replica_partition_leader_election():
    assert le.preferred_replica_partition_leader_election([2, 4], [2, 4], {2, 4}) == 2


def test_preferred_replica_in_isr_not_live():
    assert le.preferred_replica_partition_leader_election([2], [2], set()) is None


def test_preferred_replica_not_in_isr_live():
    assert le.preferred_replica_partition_leader_election([2, 4], [4], {2, 4}) is None


def test_preferred_replica_not_in_isr_not_live():
    assert le.preferred_replica_partition_leader_election([2, 4], [], set()) is None


def test_controlled_shutdown_partition_leader_election():
    assert le.controlled_shutdown_partition_leader_election([2, 4], [2, 4], {2, 4}, {2}) == 4


def test_controlled_shutdown_last_isr_shutting_down():
    assert le.controlled_shutdown_partition_leader_election([2, 4], [2], {2, 4}, {2}) is None


def test_controlled_shutdown_all_isr_simultaneously_shutting_down():
    assert le.controlled_shutdown_partition_leader_election([2, 4], [2, 4], {2, 4},
                                                            {2, 4}) is None


# --- elections over the context ------------------------------------------------

def _ctx(live=(0, 1, 2), shutting_down=(), assignment=(0, 1, 2)) -> ControllerContext:
    ctx = ControllerContext(epoch=3, epoch_zk_version=2)
    for b in live:
        ctx.add_live_broker(LiveBroker(b, (), None, epoch=100 + b))
    ctx.shutting_down_broker_ids.update(shutting_down)
    ctx.add_topic("t", None, {0: list(assignment)})
    return ctx


def _li(leader, isr, epoch=5, partition_epoch=7):
    return LeaderAndIsr(leader=leader, leader_epoch=epoch, isr=tuple(isr), controller_epoch=2,
                     partition_epoch=partition_epoch)


def test_leader_for_offline_keeps_live_isr_and_bumps_epoch():
    ctx = _ctx(live=(1, 2))
    [r] = le.leader_for_offline(ctx, [(("t", 0), _li(0, [0, 1, 2]), False)])
    assert r.leader_isr.leader == 1
    assert r.leader_isr.isr == (1, 2)
    assert r.leader_isr.leader_epoch == 6
    assert r.leader_isr.partition_epoch == 7          # written conditionally on it
    assert r.leader_isr.leader_recovery_state == LEADER_RECOVERED
    assert r.live_replicas == [1, 2]


def test_leader_for_offline_unclean_marks_recovering():
    ctx = _ctx(live=(2,))
    [r] = le.leader_for_offline(ctx, [(("t", 0), _li(0, [0]), True)])
    assert r.leader_isr.leader == 2
    assert r.leader_isr.isr == (2,)
    assert r.leader_isr.leader_recovery_state == LEADER_RECOVERING
    [r] = le.leader_for_offline(ctx, [(("t", 0), _li(0, [0]), True)],
                                is_leader_recovery_supported=False)
    assert r.leader_isr.leader_recovery_state == LEADER_RECOVERED


def test_leader_for_offline_without_live_isr_and_clean_fails():
    ctx = _ctx(live=(2,))
    [r] = le.leader_for_offline(ctx, [(("t", 0), _li(0, [0, 1]), False)])
    assert r.leader_isr is None
    [r] = le.leader_for_offline(ctx, [(("t", 0), None, True)])
    assert r.leader_isr is None


def test_leader_for_offline_ignores_shutting_down_as_live():
    ctx = _ctx(live=(0, 1, 2), shutting_down=(0,))
    [r] = le.leader_for_offline(ctx, [(("t", 0), _li(0, [0, 1, 2]), False)])
    assert r.leader_isr.leader == 1 and r.leader_isr.isr == (1, 2)


def test_leader_for_preferred_replica_keeps_isr():
    ctx = _ctx()
    [r] = le.leader_for_preferred_replica(ctx, [(("t", 0), _li(1, [1, 0]))])
    assert r.leader_isr.leader == 0 and r.leader_isr.isr == (1, 0)
    assert r.leader_isr.leader_epoch == 6
    [r] = le.leader_for_preferred_replica(ctx, [(("t", 0), _li(1, [1, 2]))])
    assert r.leader_isr is None


def test_leader_for_controlled_shutdown_shrinks_isr():
    ctx = _ctx(shutting_down=(0,))
    [r] = le.leader_for_controlled_shutdown(ctx, [(("t", 0), _li(0, [0, 1, 2]))])
    assert r.leader_isr.leader == 1 and r.leader_isr.isr == (1, 2)
    assert r.live_replicas == [0, 1, 2]          # shutting down brokers still hear it


def test_leader_for_reassign_uses_target_replicas():
    ctx = _ctx()
    [r] = le.leader_for_reassign(ctx, [(("t", 0), _li(0, [0, 1, 2]))],
                                 target_replicas={("t", 0): [2, 1]})
    assert r.leader_isr.leader == 2 and r.leader_isr.isr == (0, 1, 2)
    assert r.live_replicas == [2, 1]
