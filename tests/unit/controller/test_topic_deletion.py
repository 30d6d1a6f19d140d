"""TopicDeletionManager over a real EmbeddedStore (Kafka 3.9's TopicDeletionManagerTest,
adapted): the deletion flow and its requests, halting on dead brokers and failed
replicas, resuming, znode removal, and delete.topic.enable=false."""
from __future__ import annotations

from kafkapy.controller.context import LiveBroker, PartitionStateName, ReplicaState
from kafkapy.metadata import paths
from kafkapy.metadata.leader_and_isr import LeaderAndIsr

from tests.support.sm_helpers import endpoints, make_cluster

LAI, STOP, UM = 4, 5, 6


def _setup(tmp_path, live=(0, 1, 2), **kw):
    c = make_cluster(tmp_path, live=live, **kw)
    c.add_topic("t", {0: [0, 1], 1: [1, 2]},
                states={0: LeaderAndIsr(0, 3, (0, 1), 2), 1: LeaderAndIsr(1, 5, (1, 2), 2)})
    c.add_topic("keep", {0: [0, 1]}, states={0: LeaderAndIsr(0, 0, (0, 1), 2)})
    c.store.create(paths.topic_config_path("t"), paths.encode_entity_config({"a": "b"}),
                   makepath=True)
    c.store.create(paths.delete_topic_path("t"), b"", makepath=True)
    c.rsm.startup()
    c.psm.startup()
    c.channel.clear()
    return c


def _stop_states(request):
    return {(ts.topic_name, ps.partition_index): (ps.leader_epoch, ps.delete_partition)
            for ts in request.topic_states for ps in ts.partition_states}


def _respond_all(c, error_code=0, partition_error=lambda broker, tp: 0):
    """Answer every StopReplica(delete) the way the brokers would."""
    for broker, req, _ in list(c.channel.sent):
        if req.API_KEY != STOP:
            continue
        deleted = {tp: partition_error(broker, tp) for tp, (_, d) in _stop_states(req).items() if d}
        if deleted:
            c.tdm.handle_stop_replica_response(broker, error_code, deleted)


def test_topic_deletion_flow(tmp_path):
    c = _setup(tmp_path)
    c.tdm.init(["t"])
    c.tdm.try_topic_deletion()
    assert c.ctx.topics_with_deletion_started == {"t"}
    assert c.ctx.partition_state(("t", 0)) is PartitionStateName.NON_EXISTENT
    # brokers hear the topic is going away (leader -2) ...
    um = c.channel.of(UM, 2)[0]
    leaders = {ps.partition_index: ps.leader for ts in um.topic_states
               for ps in ts.partition_states if ts.topic_name == "t"}
    assert leaders == {0: -2, 1: -2}
    # ... then every replica gets StopReplica(delete=false) and StopReplica(delete=true)
    stops = [(n, _stop_states(r)) for n, r, _ in c.channel.sent if r.API_KEY == STOP]
    assert (1, {("t", 0): (-2, False), ("t", 1): (-2, False)}) in stops
    assert (1, {("t", 0): (-2, True), ("t", 1): (-2, True)}) in stops
    assert (0, {("t", 0): (-2, True)}) in stops
    assert (2, {("t", 1): (-2, True)}) in stops
    assert c.ctx.replica_state((("t", 0), 0)) is ReplicaState.DELETION_STARTED
    assert c.store.exists(paths.topic_path("t")) is not None
    _respond_all(c)
    assert "t" not in c.ctx.assignments and "t" not in c.ctx.topics_to_be_deleted
    assert not any(k[0][0] == "t" for k in c.ctx.replica_states)
    for gone in (paths.topic_path("t"), paths.topic_config_path("t"),
                 paths.delete_topic_path("t")):
        assert c.store.exists(gone) is None
    assert c.store.exists(paths.topic_path("keep")) is not None
    assert c.muted == ["t"]


def test_deletion_waits_for_a_dead_broker_and_resumes(tmp_path):
    c = _setup(tmp_path, live=(0, 1))
    c.tdm.init(["t"])
    c.tdm.try_topic_deletion()
    assert "t" in c.ctx.topics_ineligible_for_deletion
    assert c.ctx.replica_state((("t", 1), 2)) is ReplicaState.DELETION_INELIGIBLE
    _respond_all(c)
    # the live replicas are deleted, the topic waits for broker 2
    assert "t" in c.ctx.assignments
    assert c.ctx.replica_state((("t", 0), 0)) is ReplicaState.DELETION_SUCCESSFUL
    c.channel.clear()
    # broker 2 comes back (the controller's onBrokerStartup)
    c.ctx.add_live_broker(LiveBroker(2, endpoints(2), None, epoch=3000))
    c.tdm.resume_deletion_for_topics(["t"])
    assert c.ctx.replica_state((("t", 1), 2)) is ReplicaState.DELETION_STARTED
    assert c.channel.targets(STOP) == [2, 2]           # delete=false, then delete=true
    _respond_all(c)
    assert "t" not in c.ctx.assignments
    assert c.store.exists(paths.topic_path("t")) is None


def test_failed_replica_deletion_halts_then_retries(tmp_path):
    c = _setup(tmp_path)
    c.tdm.enqueue_topics_for_deletion(["t"])
    _respond_all(c, partition_error=lambda b, tp: 56 if (b, tp) == (1, ("t", 1)) else 0)
    assert "t" in c.ctx.topics_ineligible_for_deletion
    # once no replica is still deleting, the failed one is reset to Offline for a retry
    # (Kafka's retryDeletionForIneligibleReplicas); the topic stays halted
    assert c.ctx.replica_state((("t", 1), 1)) is ReplicaState.OFFLINE
    assert c.ctx.replica_state((("t", 0), 1)) is ReplicaState.DELETION_SUCCESSFUL
    assert c.ctx.replica_state((("t", 1), 2)) is ReplicaState.DELETION_SUCCESSFUL
    c.channel.clear()
    c.tdm.resume_deletion_for_topics(["t"])
    stops = [(n, _stop_states(r)) for n, r, _ in c.channel.sent if r.API_KEY == STOP]
    assert stops == [(1, {("t", 1): (-2, False)}), (1, {("t", 1): (-2, True)})]
    _respond_all(c)
    assert "t" not in c.ctx.assignments


def test_request_level_error_fails_every_partition(tmp_path):
    c = _setup(tmp_path)
    c.tdm.enqueue_topics_for_deletion(["t"])
    c.tdm.handle_stop_replica_response(1, 7, {("t", 0): 0, ("t", 1): 0})
    assert c.ctx.replica_state((("t", 0), 1)) is ReplicaState.DELETION_INELIGIBLE
    assert c.ctx.replica_state((("t", 1), 1)) is ReplicaState.DELETION_INELIGIBLE
    assert "t" in c.ctx.topics_ineligible_for_deletion


def test_delete_topic_disabled_removes_markers_only(tmp_path):
    c = _setup(tmp_path, delete_topic_enable=False)
    c.tdm.init(["t"])
    assert c.store.exists(paths.delete_topic_path("t")) is None
    c.tdm.enqueue_topics_for_deletion(["t"])
    c.tdm.try_topic_deletion()
    assert c.ctx.topics_to_be_deleted == set()
    assert c.store.exists(paths.topic_path("t")) is not None
    assert c.channel.sent == []


def test_reset_forgets_deletions(tmp_path):
    c = _setup(tmp_path, live=(0, 1))
    c.tdm.enqueue_topics_for_deletion(["t"])
    c.tdm.reset()
    assert not (c.ctx.topics_to_be_deleted or c.ctx.topics_with_deletion_started
                or c.ctx.topics_ineligible_for_deletion)
