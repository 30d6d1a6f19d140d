"""ControllerBrokerRequestBatch: the LeaderAndIsr v7 / UpdateMetadata v8 / StopReplica v4
requests built from the controller's context (Kafka 3.9's
ControllerChannelManagerTest, adapted), and that they encode and decode."""
from __future__ import annotations

import pytest

from kafkapy.controller.context import LiveBroker
from kafkapy.controller.request_batch import BatchStateError
from kafkapy.metadata.leader_and_isr import LEADER_RECOVERING, LeaderAndIsr
from kafkapy.metadata.topics import parse_topic_id
from kafkapy.protocol.inter_broker import (
    LeaderAndIsrRequest, StopReplicaRequest, StopReplicaResponse, UpdateMetadataRequest)

from tests.support.sm_helpers import CONTROLLER_ID, endpoints, make_cluster

LAI, STOP, UM = 4, 5, 6


def _li(leader, isr, epoch=1, partition_epoch=3, controller_epoch=2, lrs=0):
    return LeaderAndIsr(leader=leader, leader_epoch=epoch, isr=tuple(isr),
                     controller_epoch=controller_epoch, partition_epoch=partition_epoch,
                     leader_recovery_state=lrs)


def _roundtrip(request):
    return type(request).decode(request.encode(), version=request.version)


def test_leader_and_isr_request_contents(tmp_path):
    c = make_cluster(tmp_path)
    tid = c.add_topic("t", {0: [0, 1, 2], 1: [1, 2, 0]})
    c.ctx.put_leadership(("t", 0), _li(0, [0, 1, 2]))
    c.ctx.put_leadership(("t", 1), _li(1, [1, 2], lrs=LEADER_RECOVERING))
    c.batch.new_batch()
    c.batch.add_leader_and_isr([1, 2], ("t", 0), c.ctx.leadership[("t", 0)], [0, 1, 2], True)
    c.batch.add_leader_and_isr([1], ("t", 1), c.ctx.leadership[("t", 1)], [1, 2, 0], False)
    c.batch.send()
    [req] = c.channel.of(LAI, 1)
    assert req.version == 7
    assert (req.controller_id, req.controller_epoch, req.broker_epoch, req.type) == \
        (CONTROLLER_ID, 2, 1001, 0)
    assert not req.is_k_raft_controller
    [ts] = req.topic_states
    assert ts.topic_name == "t" and ts.topic_id == parse_topic_id(tid)
    p0, p1 = ts.partition_states
    assert (p0.partition_index, p0.controller_epoch, p0.leader, p0.leader_epoch, p0.isr,
            p0.partition_epoch, p0.replicas, p0.is_new, p0.leader_recovery_state) == \
        (0, 2, 0, 1, [0, 1, 2], 3, [0, 1, 2], True, 0)
    assert (p1.leader, p1.is_new, p1.leader_recovery_state) == (1, False, LEADER_RECOVERING)
    # live leaders on the inter-broker listener
    assert sorted((l.broker_id, l.host_name, l.port) for l in req.live_leaders) == \
        [(0, "host0", 9092), (1, "host1", 9093)]
    [req2] = c.channel.of(LAI, 2)
    assert req2.broker_epoch == 1002
    assert [l.broker_id for l in req2.live_leaders] == [0]
    decoded = _roundtrip(req)
    assert decoded.topic_states[0].partition_states[0].isr == [0, 1, 2]
    # LeaderAndIsr implies UpdateMetadata to every live broker for those partitions
    assert sorted(c.channel.targets(UM)) == [0, 1, 2]
    # per broker: LeaderAndIsr first
    assert [r.API_KEY for n, r, _ in c.channel.sent if n == 1] == [LAI, UM]


def test_leader_and_isr_is_new_sticks_and_dead_brokers_are_skipped(tmp_path):
    c = make_cluster(tmp_path, live=(0, 1))
    c.add_topic("t", {0: [0, 1, 5]})
    li = _li(0, [0, 1])
    c.ctx.put_leadership(("t", 0), li)
    c.batch.new_batch()
    c.batch.add_leader_and_isr([1, 5, -1], ("t", 0), li, [0, 1, 5], True)
    c.batch.add_leader_and_isr([1], ("t", 0), li, [0, 1, 5], False)
    c.batch.send()
    assert c.channel.targets(LAI) == [1]
    assert c.channel.of(LAI, 1)[0].topic_states[0].partition_states[0].is_new


def test_update_metadata_request_contents(tmp_path):
    c = make_cluster(tmp_path, live=(0, 1))
    c.ctx.live_brokers[1].rack = None
    tid = c.add_topic("t", {0: [0, 1, 2], 1: [1, 0]})
    c.ctx.put_leadership(("t", 0), _li(0, [0, 1], epoch=4, partition_epoch=6))
    c.batch.new_batch()
    c.batch.add_update_metadata([0, 1, 2], [("t", 0), ("t", 1)])   # t-1 has no leader yet
    c.batch.send()
    assert sorted(c.channel.targets(UM)) == [0, 1]                 # 2 is not live
    req = c.channel.of(UM, 1)[0]
    assert req.version == 8
    assert (req.controller_id, req.controller_epoch, req.broker_epoch) == (CONTROLLER_ID, 2, 1001)
    [ts] = req.topic_states
    assert ts.topic_name == "t" and ts.topic_id == parse_topic_id(tid)
    [ps] = ts.partition_states
    assert (ps.partition_index, ps.controller_epoch, ps.leader, ps.leader_epoch, ps.isr,
            ps.zk_version, ps.replicas, ps.offline_replicas) == \
        (0, 2, 0, 4, [0, 1], 6, [0, 1, 2], [2])
    brokers = {b.id: b for b in req.live_brokers}
    assert sorted(brokers) == [0, 1]
    assert brokers[0].rack == "rack0" and brokers[1].rack is None
    assert [(e.listener, e.host, e.port, e.security_protocol) for e in brokers[0].endpoints] == \
        [("PLAINTEXT", "host0", 9092, 0), ("SSL", "host0", 9192, 1)]
    decoded = _roundtrip(req)
    assert decoded.live_brokers[0].endpoints[1].listener == "SSL"
    assert decoded.topic_states[0].partition_states[0].offline_replicas == [2]


def test_update_metadata_without_partitions_still_sent(tmp_path):
    c = make_cluster(tmp_path)
    c.batch.new_batch()
    c.batch.add_update_metadata([0, 1, 2])
    c.batch.send()
    assert sorted(c.channel.targets(UM)) == [0, 1, 2]
    assert all(r.topic_states == [] and len(r.live_brokers) == 3 for r in c.channel.of(UM))


def test_update_metadata_for_topic_being_deleted(tmp_path):
    c = make_cluster(tmp_path)
    c.add_topic("t", {0: [0, 1]})
    c.ctx.put_leadership(("t", 0), _li(0, [0, 1], epoch=4, partition_epoch=6))
    c.ctx.queue_topic_deletion(["t"])
    c.batch.new_batch()
    c.batch.add_update_metadata([0], [("t", 0)])
    c.batch.send()
    ps = c.channel.of(UM, 0)[0].topic_states[0].partition_states[0]
    assert (ps.leader, ps.leader_epoch, ps.zk_version, ps.isr) == (-2, 0, 0, [0, 1])


def test_shutting_down_brokers_get_requests_with_their_endpoints(tmp_path):
    c = make_cluster(tmp_path)
    c.ctx.shutting_down_broker_ids.add(2)
    c.batch.new_batch()
    c.batch.add_update_metadata([2])
    c.batch.send()
    [req] = c.channel.of(UM, 2)
    assert sorted(b.id for b in req.live_brokers) == [0, 1, 2]


def test_stop_replica_request_contents_and_deletion_callback(tmp_path):
    c = make_cluster(tmp_path)
    c.add_topic("t", {0: [0, 1], 1: [0, 1]})
    c.add_topic("u", {0: [0, 1]})
    c.ctx.put_leadership(("u", 0), _li(0, [0, 1], epoch=9))
    c.ctx.queue_topic_deletion(["t"])
    c.ctx.topics_with_deletion_started.add("t")
    got = []
    c.callbacks.on_stop_replica_deletion = lambda b, err, pe: got.append((b, err, pe))
    c.batch.new_batch()
    c.batch.add_stop_replica([1], ("t", 0), delete=True)
    c.batch.add_stop_replica([1], ("t", 0), delete=False)        # delete sticks
    c.batch.add_stop_replica([1], ("t", 1), delete=False)
    c.batch.add_stop_replica([1], ("u", 0), delete=False)
    c.batch.add_stop_replica([1], ("u", 1), delete=False)        # no leader known
    c.batch.send()
    [(node, req, callback)] = c.channel.sent
    assert node == 1 and req.version == 4
    assert (req.controller_id, req.controller_epoch, req.broker_epoch) == (CONTROLLER_ID, 2, 1001)
    states = {(ts.topic_name, ps.partition_index): (ps.leader_epoch, ps.delete_partition)
              for ts in req.topic_states for ps in ts.partition_states}
    assert states == {("t", 0): (-2, True), ("t", 1): (-2, False),
                      ("u", 0): (9, False), ("u", 1): (-1, False)}
    _roundtrip(req)
    E = StopReplicaResponse[4].StopReplicaPartitionError
    callback(StopReplicaResponse[4](error_code=0, partition_errors=[
        E(topic_name="t", partition_index=0, error_code=0),
        E(topic_name="t", partition_index=1, error_code=0),
        E(topic_name="u", partition_index=0, error_code=0)]))
    assert got == [(1, 0, {("t", 0): 0})]


def test_new_batch_refuses_unsent_work_and_clear_resets(tmp_path):
    c = make_cluster(tmp_path)
    c.batch.new_batch()
    c.batch.add_update_metadata([0])
    with pytest.raises(BatchStateError):
        c.batch.new_batch()
    c.batch.clear()
    c.batch.new_batch()
    c.batch.add_stop_replica([0], ("t", 0), False)
    with pytest.raises(BatchStateError):
        c.batch.new_batch()
    c.batch.send()
    assert c.batch.is_empty
    c.batch.new_batch()


def test_requests_are_the_registered_versioned_classes(tmp_path):
    c = make_cluster(tmp_path)
    c.add_topic("t", {0: [0]})
    c.ctx.put_leadership(("t", 0), _li(0, [0]))
    c.batch.new_batch()
    c.batch.add_leader_and_isr([0], ("t", 0), _li(0, [0]), [0], True)
    c.batch.add_stop_replica([0], ("t", 0), False)
    c.batch.send()
    kinds = [(type(r), r.version) for n, r, _ in c.channel.sent if n == 0]
    assert kinds == [(LeaderAndIsrRequest, 7), (UpdateMetadataRequest, 8), (StopReplicaRequest, 4)]


def test_broker_without_inter_broker_endpoint_is_left_out_of_live_leaders(tmp_path):
    c = make_cluster(tmp_path, live=(0,))
    c.ctx.add_live_broker(LiveBroker(1, endpoints(1)[1:], None, epoch=7))   # SSL only
    c.add_topic("t", {0: [1, 0]})
    li = _li(1, [1, 0])
    c.ctx.put_leadership(("t", 0), li)
    c.batch.new_batch()
    c.batch.add_leader_and_isr([0], ("t", 0), li, [1, 0], False)
    c.batch.send()
    assert c.channel.of(LAI, 0)[0].live_leaders == []


def test_a_failing_send_does_not_keep_other_brokers_uninformed(tmp_path):
    c = make_cluster(tmp_path)
    real_send = c.channel.send

    def send(node_id, request, callback):
        if node_id == 0:
            raise RuntimeError("local apply failed")
        real_send(node_id, request, callback)

    c.channel.send = send
    c.batch.new_batch()
    c.batch.add_update_metadata([0, 1, 2])
    with pytest.raises(RuntimeError):
        c.batch.send()
    assert sorted(c.channel.targets(UM)) == [1, 2]
    assert c.batch.is_empty
