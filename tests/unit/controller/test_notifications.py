"""The controller's notification znodes (Kafka's processIsrChangeNotification and
processLogDirEventNotification) over a real embedded store and the controller's own
reads and fenced writes: what the notifications name is handled once, in the order
first named; an unreadable notification is skipped; every notification read is deleted,
also when handling it failed.  The capabilities the notifications hand their work to
(reassignments, the replica state machine) are recorders."""
from __future__ import annotations

import pytest

from kafkapy.controller import notifications
from kafkapy.controller.context import ReplicaState
from kafkapy.controller.machinery import ControllerMachinery
from kafkapy.controller.watches import ControllerWatches
from kafkapy.controller.zk_reads import ZkReads
from kafkapy.metadata import paths
from kafkapy.metadata.leader_and_isr import LeaderAndIsr
from kafkapy.protocol.topic_partition import TopicPartition as TP

from tests.support.sm_helpers import make_cluster

UM = 6


class Reassignments:
    """Records the partitions whose ISR changed (``PartitionReassignments.on_isr_changed``)."""

    def __init__(self, fail: bool = False) -> None:
        self.isr_changed: list[list] = []
        self._fail = fail

    def on_isr_changed(self, partitions) -> None:
        self.isr_changed.append(list(partitions))
        if self._fail:
            raise RuntimeError("reassignment check failed")


class ReplicaStates:
    """Records ``ReplicaStateMachine.handle_state_changes``."""

    def __init__(self) -> None:
        self.changes: list = []

    def handle_state_changes(self, replicas, target) -> None:
        self.changes.append((list(replicas), target))


def _machinery(c, reassign=None, rsm=None) -> ControllerMachinery:
    watches = ControllerWatches(lambda event: None)
    return ControllerMachinery(
        c.ctx, "PLAINTEXT", channel=None, batch=c.batch, zk=c.zk,
        reads=ZkReads(c.store, c.ctx, watches, c.zk), rsm=rsm or ReplicaStates(), psm=c.psm,
        deletion=c.tdm, reassign=reassign or Reassignments())


def _li(leader, isr) -> LeaderAndIsr:
    return LeaderAndIsr(leader=leader, leader_epoch=0, isr=tuple(isr), controller_epoch=2)


def _notify(store, seq_path: str, data: bytes) -> None:
    store.create(seq_path, data, sequence=True, makepath=True)


@pytest.fixture
def cluster(tmp_path):
    c = make_cluster(tmp_path)
    yield c
    c.store.close()


def test_isr_changes_are_handled_once_each_in_order_then_deleted(cluster):
    c = cluster
    c.add_topic("a", {0: [0, 1], 1: [0, 1]}, states={0: _li(0, [0, 1]), 1: _li(0, [0, 1])})
    c.add_topic("b", {0: [1, 2]}, states={0: _li(1, [1, 2])})
    for topic, p, isr in (("a", 0, [0]), ("a", 1, [0]), ("b", 0, [1])):   # the leaders' writes
        c.store.set(paths.partition_state_path(topic, p),
                    paths.encode_partition_state(isr[0], 0, isr, 2))
    _notify(c.store, paths.ISR_CHANGE_SEQ_PATH, paths.encode_isr_change([("b", 0), ("a", 1)]))
    _notify(c.store, paths.ISR_CHANGE_SEQ_PATH, b"not json")
    _notify(c.store, paths.ISR_CHANGE_SEQ_PATH, paths.encode_isr_change(
        [("a", 1), ("gone", 0), ("b", 0), ("a", 0)]))
    reassign = Reassignments()

    notifications.process_isr_change_notification(_machinery(c, reassign))

    assert reassign.isr_changed == [[TP("b", 0), TP("a", 1), TP("a", 0)]]
    assert {tp: li.isr for tp, li in c.ctx.leadership.items()} == {
        ("a", 0): (0,), ("a", 1): (0,), ("b", 0): (1,)}
    told = {(t.topic_name, p.partition_index) for r in c.channel.of(UM)
            for t in r.topic_states for p in t.partition_states}
    assert told == {("a", 0), ("a", 1), ("b", 0)}
    assert c.store.get_children(paths.ISR_CHANGE_NOTIFICATION) == []


def test_isr_notifications_are_deleted_when_handling_fails(cluster):
    c = cluster
    c.add_topic("a", {0: [0, 1]}, states={0: _li(0, [0, 1])})
    _notify(c.store, paths.ISR_CHANGE_SEQ_PATH, paths.encode_isr_change([("a", 0)]))
    reassign = Reassignments(fail=True)

    with pytest.raises(RuntimeError):
        notifications.process_isr_change_notification(_machinery(c, reassign))

    assert reassign.isr_changed == [[TP("a", 0)]]
    assert c.store.get_children(paths.ISR_CHANGE_NOTIFICATION) == []


def test_log_dir_events_bring_each_broker_online_once(cluster):
    c = cluster
    c.add_topic("a", {0: [0, 1], 1: [2, 1]})
    for broker_id in (2, 1, 2):
        _notify(c.store, paths.LOG_DIR_EVENT_SEQ_PATH, paths.encode_log_dir_event(broker_id))
    _notify(c.store, paths.LOG_DIR_EVENT_SEQ_PATH, b"{}")
    rsm = ReplicaStates()

    notifications.process_log_dir_event_notification(_machinery(c, rsm=rsm))

    assert rsm.changes == [(c.ctx.replicas_on_brokers([2, 1]), ReplicaState.ONLINE)]
    assert c.store.get_children(paths.LOG_DIR_EVENT_NOTIFICATION) == []


def test_nothing_named_nothing_done(cluster):
    c = cluster
    reassign, rsm = Reassignments(), ReplicaStates()
    m = _machinery(c, reassign, rsm)
    notifications.process_isr_change_notification(m)
    notifications.process_log_dir_event_notification(m)
    assert reassign.isr_changed == [] and rsm.changes == [] and c.channel.sent == []
