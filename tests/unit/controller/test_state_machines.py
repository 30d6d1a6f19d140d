"""Partition and replica state machines over a real EmbeddedStore: transitions,
elections, znode payloads and versions, zk version conflicts, controller fencing and
the requests each change sends (Kafka 3.9's PartitionStateMachineTest /
ReplicaStateMachineTest, adapted to real znodes)."""
from __future__ import annotations

import pytest

from kafkapy.controller import zk_writes as zk_writes_mod
from kafkapy.controller.context import PartitionStateName, ReplicaState
from kafkapy.controller.leader_election import (
    CONTROLLED_SHUTDOWN, OFFLINE, OFFLINE_UNCLEAN, PREFERRED, REASSIGN)
from kafkapy.controller.partition_state_machine import PartitionStateMachine
from kafkapy.controller.zk_writes import ControllerMovedError, StateChangeFailedError
from kafkapy.metadata import paths
from kafkapy.metadata.leader_and_isr import LEADER_RECOVERING, LeaderAndIsr

from tests.support.sm_helpers import make_cluster

LAI, STOP, UM = 4, 5, 6
TP = ("t", 0)


def _li(leader, isr, epoch=0, controller_epoch=2, partition_epoch=0):
    return LeaderAndIsr(leader=leader, leader_epoch=epoch, isr=tuple(isr),
                     controller_epoch=controller_epoch, partition_epoch=partition_epoch)


def _lai_states(request):
    return {(ts.topic_name, ps.partition_index): ps
            for ts in request.topic_states for ps in ts.partition_states}


# --- partition state machine ---------------------------------------------------

def test_non_existent_to_new(tmp_path):
    c = make_cluster(tmp_path)
    c.add_topic("t", {0: [0, 1, 2]})
    c.psm.handle_state_changes([TP], PartitionStateName.NEW)
    assert c.ctx.partition_state(TP) is PartitionStateName.NEW
    assert c.channel.sent == []


def test_new_to_online_creates_state_znode_and_sends_leader_and_isr(tmp_path):
    c = make_cluster(tmp_path, live=(1, 2))
    c.add_topic("t", {0: [0, 1, 2], 1: [2, 0, 1]})
    parts = [("t", 0), ("t", 1)]
    c.psm.handle_state_changes(parts, PartitionStateName.NEW)
    c.psm.handle_state_changes(parts, PartitionStateName.ONLINE, OFFLINE)
    assert c.ctx.partition_state(("t", 0)) is PartitionStateName.ONLINE
    z = c.state_znode("t", 0)
    assert (z.leader, z.isr, z.leader_epoch, z.controller_epoch, z.partition_epoch) == \
        (1, (1, 2), 0, 2, 0)
    z1 = c.state_znode("t", 1)
    assert (z1.leader, z1.isr) == (2, (2, 1))
    assert c.ctx.partition_leadership(("t", 0)) == _li(1, [1, 2])
    # LeaderAndIsr (is_new) to the ISR = the live replicas; UpdateMetadata to all live.
    assert sorted(c.channel.targets(LAI)) == [1, 2]
    [req] = c.channel.of(LAI, 1)
    st = _lai_states(req)[("t", 0)]
    assert st.is_new and st.leader == 1 and st.isr == [1, 2] and st.replicas == [0, 1, 2]
    assert sorted(c.channel.targets(UM)) == [1, 2]


def test_new_to_online_without_live_replica_stays_new(tmp_path):
    c = make_cluster(tmp_path, live=(1,))
    c.add_topic("t", {0: [0, 2], 1: [1]})
    parts = [("t", 0), ("t", 1)]
    c.psm.handle_state_changes(parts, PartitionStateName.NEW)
    c.psm.handle_state_changes(parts, PartitionStateName.ONLINE, OFFLINE)
    assert c.ctx.partition_state(("t", 0)) is PartitionStateName.NEW
    assert c.store.exists(paths.partition_state_path("t", 0)) is None
    assert c.ctx.partition_state(("t", 1)) is PartitionStateName.ONLINE


def test_new_to_online_with_existing_state_znode_fails_only_that_partition(tmp_path):
    c = make_cluster(tmp_path)
    c.add_topic("t", {p: [0, 1] for p in range(5)})
    c.store.create(paths.partition_state_path("t", 2),
                   paths.encode_partition_state(1, 3, [1], 1), makepath=True)
    parts = [("t", p) for p in range(5)]
    c.psm.handle_state_changes(parts, PartitionStateName.NEW)
    c.psm.handle_state_changes(parts, PartitionStateName.ONLINE, OFFLINE)
    states = {tp: c.ctx.partition_state(tp) for tp in parts}
    assert states[("t", 2)] is PartitionStateName.NEW
    assert all(states[tp] is PartitionStateName.ONLINE for tp in parts if tp != ("t", 2))
    assert c.state_znode("t", 2).leader_epoch == 3       # untouched


def test_new_to_online_in_small_multis(tmp_path, monkeypatch):
    monkeypatch.setattr(zk_writes_mod, "OPS_PER_MULTI", 3)
    c = make_cluster(tmp_path)
    c.add_topic("t", {p: [p % 3, (p + 1) % 3] for p in range(11)})
    c.store.create(paths.partition_state_path("t", 4), paths.encode_partition_state(0, 0, [0], 1),
                   makepath=True)
    parts = [("t", p) for p in range(11)]
    c.psm.handle_state_changes(parts, PartitionStateName.NEW)
    c.psm.handle_state_changes(parts, PartitionStateName.ONLINE, OFFLINE)
    online = [tp for tp in parts if c.ctx.partition_state(tp) is PartitionStateName.ONLINE]
    assert online == [tp for tp in parts if tp != ("t", 4)]
    for p in range(11):
        if p != 4:
            assert c.state_znode("t", p).leader == p % 3


def test_new_to_online_fenced_when_controller_moved(tmp_path):
    c = make_cluster(tmp_path)
    c.add_topic("t", {0: [0, 1]})
    c.psm.handle_state_changes([TP], PartitionStateName.NEW)
    c.bump_epoch()
    with pytest.raises(ControllerMovedError):
        c.psm.handle_state_changes([TP], PartitionStateName.ONLINE, OFFLINE)
    assert c.store.exists(paths.partition_state_path("t", 0)) is None
    assert c.ctx.partition_state(TP) is PartitionStateName.NEW
    assert c.channel.sent == []
    c.batch.new_batch()                                   # nothing left half-built


def test_offline_election_moves_leader_to_live_isr(tmp_path):
    c = make_cluster(tmp_path, live=(1, 2))
    c.add_topic("t", {0: [0, 1, 2]}, states={0: _li(0, [0, 1, 2], epoch=4, controller_epoch=1)})
    c.psm.initialize_partition_state()
    assert c.ctx.partition_state(TP) is PartitionStateName.OFFLINE
    result = c.psm.handle_state_changes([TP], PartitionStateName.ONLINE, OFFLINE)
    li = result[TP]
    assert (li.leader, li.isr, li.leader_epoch, li.partition_epoch, li.controller_epoch) == \
        (1, (1, 2), 5, 1, 2)
    z = c.state_znode("t", 0)
    assert (z.leader, z.isr, z.leader_epoch, z.controller_epoch, z.partition_epoch) == \
        (1, (1, 2), 5, 2, 1)
    assert c.ctx.partition_state(TP) is PartitionStateName.ONLINE
    assert c.ctx.partition_leadership(TP) == li
    assert sorted(c.channel.targets(LAI)) == [1, 2]
    st = _lai_states(c.channel.of(LAI, 2)[0])[TP]
    assert (st.leader, st.leader_epoch, st.partition_epoch, st.is_new) == (1, 5, 1, False)


def test_election_retries_after_zk_version_conflict(tmp_path, monkeypatch):
    c = make_cluster(tmp_path, live=(1, 2))
    c.add_topic("t", {0: [0, 1, 2]}, states={0: _li(0, [0, 1, 2], epoch=4)})
    c.ctx.put_partition_state(TP, PartitionStateName.OFFLINE)
    real_get = c.zk.get_partition_states
    calls = []

    def racing_get(partitions):
        read = real_get(partitions)
        if not calls:       # someone (an AlterPartition) writes between read and write
            c.store.set(paths.partition_state_path("t", 0),
                        paths.encode_partition_state(0, 4, [0, 2], 2))
        calls.append(list(partitions))
        return read

    monkeypatch.setattr(c.zk, "get_partition_states", racing_get)
    result = c.psm.handle_state_changes([TP], PartitionStateName.ONLINE, OFFLINE)
    assert len(calls) == 2
    assert (result[TP].leader, result[TP].isr, result[TP].partition_epoch) == (2, (2,), 2)
    z = c.state_znode("t", 0)
    assert (z.leader, z.isr, z.leader_epoch) == (2, (2,), 5)


def test_election_aborted_when_znode_written_by_newer_controller(tmp_path):
    c = make_cluster(tmp_path, live=(1, 2))
    c.add_topic("t", {0: [0, 1, 2]}, states={0: _li(0, [0, 1, 2], controller_epoch=3)})
    c.ctx.put_partition_state(TP, PartitionStateName.OFFLINE)
    result = c.psm.handle_state_changes([TP], PartitionStateName.ONLINE, OFFLINE)
    assert isinstance(result[TP], StateChangeFailedError)
    assert "another controller" in str(result[TP])
    assert c.ctx.partition_state(TP) is PartitionStateName.OFFLINE
    assert c.channel.sent == []


def test_election_without_state_znode_fails(tmp_path):
    c = make_cluster(tmp_path)
    c.add_topic("t", {0: [0, 1]})
    c.ctx.put_partition_state(TP, PartitionStateName.OFFLINE)
    result = c.psm.handle_state_changes([TP], PartitionStateName.ONLINE, OFFLINE)
    assert "doesn't exist" in str(result[TP])


def test_offline_election_clean_fails_without_live_isr(tmp_path):
    c = make_cluster(tmp_path, live=(1, 2))
    c.add_topic("t", {0: [0, 1, 2]}, states={0: _li(0, [0], epoch=4)})
    c.ctx.put_partition_state(TP, PartitionStateName.OFFLINE)
    result = c.psm.handle_state_changes([TP], PartitionStateName.ONLINE, OFFLINE)
    assert isinstance(result[TP], StateChangeFailedError)
    assert "OfflinePartitionLeaderElectionStrategy(false)" in str(result[TP])
    assert c.ctx.partition_state(TP) is PartitionStateName.OFFLINE
    assert c.state_znode("t", 0).leader == 0


@pytest.mark.parametrize("how", ["topic_config", "strategy"])
def test_offline_election_unclean(tmp_path, how):
    c = make_cluster(tmp_path, live=(1, 2))
    c.add_topic("t", {0: [0, 2, 1]}, states={0: _li(0, [0], epoch=4)})
    c.ctx.put_partition_state(TP, PartitionStateName.OFFLINE)
    if how == "topic_config":
        c.topic_configs["t"] = {"unclean.leader.election.enable": "true"}
        result = c.psm.handle_state_changes([TP], PartitionStateName.ONLINE, OFFLINE)
    else:
        result = c.psm.handle_state_changes([TP], PartitionStateName.ONLINE, OFFLINE_UNCLEAN)
    assert (result[TP].leader, result[TP].isr) == (2, (2,))
    z = c.state_znode("t", 0)
    assert (z.leader, z.isr, z.leader_epoch, z.leader_recovery_state) == \
        (2, (2,), 5, LEADER_RECOVERING)


def test_preferred_replica_election(tmp_path):
    c = make_cluster(tmp_path)
    c.add_topic("t", {0: [0, 1, 2], 1: [1, 2, 0]},
                states={0: _li(1, [1, 0, 2], epoch=2), 1: _li(1, [1, 2, 0])})
    c.psm.initialize_partition_state()
    result = c.psm.handle_state_changes([("t", 0), ("t", 1)], PartitionStateName.ONLINE, PREFERRED)
    assert (result[("t", 0)].leader, result[("t", 0)].isr) == (0, (1, 0, 2))
    assert c.state_znode("t", 0).leader_epoch == 3
    # already led by its preferred replica: "elected" again with a new epoch, as Kafka
    # (the ElectLeaders path filters those out before calling the state machine)
    assert result[("t", 1)].leader == 1


def test_controlled_shutdown_election(tmp_path):
    c = make_cluster(tmp_path)
    c.ctx.shutting_down_broker_ids.add(0)
    c.add_topic("t", {0: [0, 1, 2]}, states={0: _li(0, [0, 1, 2])})
    c.ctx.put_partition_state(TP, PartitionStateName.ONLINE)
    result = c.psm.handle_state_changes([TP], PartitionStateName.ONLINE, CONTROLLED_SHUTDOWN)
    assert (result[TP].leader, result[TP].isr) == (1, (1, 2))
    # the shutting-down broker still gets the LeaderAndIsr (it becomes a follower)
    assert sorted(c.channel.targets(LAI)) == [0, 1, 2]


def test_reassign_election_picks_from_the_target_replicas(tmp_path):
    c = make_cluster(tmp_path)
    c.add_topic("t", {0: [0, 1, 2]}, states={0: _li(0, [0, 1, 2], epoch=1)})
    c.ctx.put_partition_state(TP, PartitionStateName.ONLINE)
    psm = PartitionStateMachine(c.ctx, c.zk, c.batch, target_replicas=lambda tp: [2, 1])
    result = psm.handle_state_changes([TP], PartitionStateName.ONLINE, REASSIGN)
    assert (result[TP].leader, result[TP].isr, result[TP].leader_epoch) == (2, (0, 1, 2), 2)
    assert sorted(c.channel.targets(LAI)) == [1, 2]
    # without targets the current assignment is the target: its first live ISR member
    result = c.psm.handle_state_changes([TP], PartitionStateName.ONLINE, REASSIGN)
    assert result[TP].leader == 0


def test_invalid_transitions_are_skipped(tmp_path):
    c = make_cluster(tmp_path)
    c.add_topic("t", {0: [0]})
    assert c.psm.handle_state_changes([TP], PartitionStateName.ONLINE, OFFLINE) == {}
    assert c.ctx.partition_state(TP) is PartitionStateName.NON_EXISTENT
    c.psm.handle_state_changes([TP], PartitionStateName.OFFLINE)
    assert c.ctx.partition_state(TP) is PartitionStateName.NON_EXISTENT
    c.psm.handle_state_changes([TP], PartitionStateName.NEW)
    c.psm.handle_state_changes([TP], PartitionStateName.NON_EXISTENT)
    assert c.ctx.partition_state(TP) is PartitionStateName.NEW
    c.psm.handle_state_changes([TP], PartitionStateName.OFFLINE)
    c.psm.handle_state_changes([TP], PartitionStateName.NON_EXISTENT)
    assert c.ctx.partition_state(TP) is PartitionStateName.NON_EXISTENT


def test_startup_initializes_states_and_brings_partitions_online(tmp_path):
    c = make_cluster(tmp_path, live=(1, 2))
    c.add_topic("t", {0: [0, 1], 1: [1, 2], 2: [2, 0]},
                states={0: _li(0, [0, 1]), 1: _li(1, [1, 2])})
    c.add_topic("gone", {0: [0, 1]}, states={0: _li(0, [0, 1])})
    c.ctx.queue_topic_deletion(["gone"])
    c.psm.startup()
    assert c.ctx.partition_state(("t", 0)) is PartitionStateName.ONLINE
    assert c.state_znode("t", 0).leader == 1
    assert c.ctx.partition_state(("t", 1)) is PartitionStateName.ONLINE
    assert c.state_znode("t", 1).leader_epoch == 0          # leader was live: untouched
    assert c.ctx.partition_state(("t", 2)) is PartitionStateName.ONLINE
    assert c.state_znode("t", 2).leader == 2                # New: first live replica
    assert c.ctx.partition_state(("gone", 0)) is PartitionStateName.OFFLINE
    assert c.state_znode("gone", 0).leader == 0


def test_election_fenced_when_controller_moved(tmp_path):
    c = make_cluster(tmp_path, live=(1, 2))
    c.add_topic("t", {0: [0, 1, 2]}, states={0: _li(0, [0, 1, 2])})
    c.ctx.put_partition_state(TP, PartitionStateName.OFFLINE)
    c.bump_epoch()
    with pytest.raises(ControllerMovedError):
        c.psm.handle_state_changes([TP], PartitionStateName.ONLINE, OFFLINE)
    assert c.state_znode("t", 0).leader == 0
    assert c.ctx.partition_leadership(TP).leader == 0
    assert c.channel.sent == []


# --- replica state machine -----------------------------------------------------

def test_replica_non_existent_to_new_without_leadership(tmp_path):
    c = make_cluster(tmp_path)
    c.add_topic("t", {0: [0, 1]})
    c.rsm.handle_state_changes([(TP, 1)], ReplicaState.NEW)
    assert c.ctx.replica_state((TP, 1)) is ReplicaState.NEW
    assert c.channel.sent == []


def test_replica_non_existent_to_new_with_leadership(tmp_path):
    c = make_cluster(tmp_path)
    c.add_topic("t", {0: [0, 1]}, states={0: _li(0, [0])})
    c.rsm.handle_state_changes([(TP, 1), (TP, 0)], ReplicaState.NEW)
    assert c.ctx.replica_state((TP, 1)) is ReplicaState.NEW
    # the leader cannot become a New replica
    assert c.ctx.replica_state((TP, 0)) is ReplicaState.NON_EXISTENT
    assert c.channel.targets(LAI) == [1]
    assert _lai_states(c.channel.of(LAI, 1)[0])[TP].is_new


def test_replica_new_to_online_and_online_to_online(tmp_path):
    c = make_cluster(tmp_path)
    c.add_topic("t", {0: [0, 1]}, states={0: _li(0, [0, 1])})
    c.rsm.handle_state_changes([(TP, 1)], ReplicaState.NEW)
    c.channel.clear()
    c.rsm.handle_state_changes([(TP, 1)], ReplicaState.ONLINE)
    assert c.ctx.replica_state((TP, 1)) is ReplicaState.ONLINE
    assert c.channel.sent == []
    c.rsm.handle_state_changes([(TP, 1)], ReplicaState.ONLINE)
    assert c.channel.targets(LAI) == [1]
    assert not _lai_states(c.channel.of(LAI, 1)[0])[TP].is_new


def test_replica_online_to_offline_shrinks_isr(tmp_path):
    c = make_cluster(tmp_path)
    c.add_topic("t", {0: [0, 1, 2]}, states={0: _li(0, [0, 1, 2], epoch=3)})
    c.rsm.initialize_replica_state()
    c.rsm.handle_state_changes([(TP, 1)], ReplicaState.OFFLINE)
    assert c.ctx.replica_state((TP, 1)) is ReplicaState.OFFLINE
    z = c.state_znode("t", 0)
    assert (z.leader, z.isr, z.leader_epoch, z.partition_epoch) == (0, (0, 2), 4, 1)
    assert c.ctx.partition_leadership(TP).isr == (0, 2)
    [stop] = c.channel.of(STOP, 1)
    ps = stop.topic_states[0].partition_states[0]
    # added before the ISR removal, as Kafka does: the epoch the replica knew
    assert (ps.partition_index, ps.delete_partition, ps.leader_epoch) == (0, False, 3)
    assert sorted(c.channel.targets(LAI)) == [0, 2]
    assert sorted(c.channel.targets(UM)) == [0, 1, 2]
    # per broker: LeaderAndIsr before UpdateMetadata before StopReplica
    assert [r.API_KEY for n, r, _ in c.channel.sent if n == 1] == [UM, STOP]


def test_replica_offline_of_the_leader_and_of_the_last_isr_member(tmp_path):
    c = make_cluster(tmp_path, live=(1, 2))
    c.add_topic("t", {0: [0, 1], 1: [0, 2]},
                states={0: _li(0, [0, 1], epoch=3), 1: _li(0, [0], epoch=7)})
    c.rsm.initialize_replica_state()
    c.rsm.handle_state_changes([(("t", 0), 0), (("t", 1), 0)], ReplicaState.OFFLINE)
    z0, z1 = c.state_znode("t", 0), c.state_znode("t", 1)
    assert (z0.leader, z0.isr, z0.leader_epoch) == (-1, (1,), 4)
    assert (z1.leader, z1.isr, z1.leader_epoch) == (-1, (0,), 8)   # last ISR member stays
    assert c.channel.of(STOP, 0) == []                             # broker 0 is dead
    assert sorted(c.channel.targets(LAI)) == [1, 2]


def test_replica_offline_retries_after_zk_version_conflict(tmp_path, monkeypatch):
    c = make_cluster(tmp_path)
    c.add_topic("t", {0: [0, 1, 2]}, states={0: _li(0, [0, 1, 2])})
    real_get = c.zk.get_partition_states
    calls = []

    def racing_get(partitions):
        read = real_get(partitions)
        if not calls:
            c.store.set(paths.partition_state_path("t", 0),
                        paths.encode_partition_state(0, 0, [0, 1], 2))
        calls.append(1)
        return read

    monkeypatch.setattr(c.zk, "get_partition_states", racing_get)
    c.ctx.put_replica_state((TP, 1), ReplicaState.ONLINE)
    c.rsm.handle_state_changes([(TP, 1)], ReplicaState.OFFLINE)
    assert len(calls) == 2
    z = c.state_znode("t", 0)
    assert (z.isr, z.partition_epoch) == ((0,), 2)
    assert c.ctx.replica_state((TP, 1)) is ReplicaState.OFFLINE


def test_replica_offline_fenced(tmp_path):
    c = make_cluster(tmp_path)
    c.add_topic("t", {0: [0, 1]}, states={0: _li(0, [0, 1])})
    c.ctx.put_replica_state((TP, 1), ReplicaState.ONLINE)
    c.bump_epoch()
    with pytest.raises(ControllerMovedError):
        c.rsm.handle_state_changes([(TP, 1)], ReplicaState.OFFLINE)
    assert c.state_znode("t", 0).isr == (0, 1)
    assert c.channel.sent == []
    assert c.ctx.replica_state((TP, 1)) is ReplicaState.ONLINE


def test_replica_offline_without_leadership_sends_update_metadata(tmp_path):
    c = make_cluster(tmp_path)
    c.add_topic("t", {0: [0, 1]})
    c.ctx.put_replica_state((TP, 1), ReplicaState.NEW)
    c.rsm.handle_state_changes([(TP, 1)], ReplicaState.OFFLINE)
    assert c.ctx.replica_state((TP, 1)) is ReplicaState.OFFLINE
    assert c.channel.targets(STOP) == [1]
    assert sorted(c.channel.targets(UM)) == [0, 1, 2]


def test_replica_deletion_states(tmp_path):
    c = make_cluster(tmp_path)
    c.add_topic("t", {0: [0, 1]}, states={0: _li(0, [0, 1], epoch=6)})
    c.ctx.queue_topic_deletion(["t"])
    r = (TP, 1)
    c.ctx.put_replica_state(r, ReplicaState.ONLINE)
    c.rsm.handle_state_changes([r], ReplicaState.DELETION_STARTED)     # invalid
    assert c.ctx.replica_state(r) is ReplicaState.ONLINE
    c.rsm.handle_state_changes([r], ReplicaState.OFFLINE)
    c.channel.clear()
    c.rsm.handle_state_changes([r], ReplicaState.DELETION_STARTED)
    [stop] = c.channel.of(STOP, 1)
    ps = stop.topic_states[0].partition_states[0]
    assert (ps.delete_partition, ps.leader_epoch) == (True, -2)
    c.rsm.handle_state_changes([r], ReplicaState.DELETION_SUCCESSFUL)
    c.rsm.handle_state_changes([r], ReplicaState.NON_EXISTENT)
    assert r not in c.ctx.replica_states
    assert c.ctx.replicas(TP) == [0]


def test_replica_startup(tmp_path):
    c = make_cluster(tmp_path, live=(0, 1))
    c.add_topic("t", {0: [0, 1, 2]}, states={0: _li(0, [0, 1, 2])})
    c.rsm.startup()
    assert c.ctx.replica_state((TP, 0)) is ReplicaState.ONLINE
    assert c.ctx.replica_state((TP, 2)) is ReplicaState.OFFLINE
    assert c.state_znode("t", 0).isr == (0, 1)
    assert sorted(set(c.channel.targets(LAI))) == [0, 1]


def test_broker_failure_sequence(tmp_path):
    """KafkaController.onBrokerFailure's use of both machines: the dead leader's
    partitions go Offline and are re-elected, then its replicas go Offline."""
    c = make_cluster(tmp_path)
    c.add_topic("t", {0: [0, 1, 2], 1: [1, 2, 0], 2: [2, 0, 1]},
                states={p: _li(p, [p, (p + 1) % 3, (p + 2) % 3], epoch=1) for p in range(3)})
    c.rsm.startup()
    c.psm.startup()
    c.channel.clear()
    c.ctx.remove_live_brokers([0])
    led = [tp for tp in c.ctx.partitions_led_by(0)]
    c.psm.handle_state_changes(led, PartitionStateName.OFFLINE)
    c.psm.trigger_online_partition_state_change()
    c.rsm.handle_state_changes(c.ctx.replicas_on_brokers([0]), ReplicaState.OFFLINE)
    z = {p: c.state_znode("t", p) for p in range(3)}
    assert (z[0].leader, z[0].isr, z[0].leader_epoch) == (1, (1, 2), 2)
    assert (z[1].leader, z[1].isr, z[1].leader_epoch) == (1, (1, 2), 2)
    assert (z[2].leader, z[2].isr, z[2].leader_epoch) == (2, (2, 1), 2)
    assert all(c.ctx.partition_state(("t", p)) is PartitionStateName.ONLINE for p in range(3))
    assert all(c.ctx.replica_state((("t", p), 0)) is ReplicaState.OFFLINE for p in range(3))
    assert 0 not in c.channel.targets(LAI) + c.channel.targets(UM) + c.channel.targets(STOP)
    last_um = c.channel.of(UM, 1)[-1]
    offline = {ps.partition_index: ps.offline_replicas
               for ts in last_um.topic_states for ps in ts.partition_states}
    assert offline == {0: [0], 1: [0], 2: [0]}
