"""Partition reassignment in the controller (Kafka 3.9's KafkaController, ZK mode) against a
real ZooKeeper: the API path (validation, phase U/A/B, the answer once started), completion
when the ISR reaches the targets (AlterPartition, ISR notifications), cancellation,
replacing a reassignment in flight, the legacy ``/admin/reassign_partitions`` znode, a new
controller resuming, ListPartitionReassignments, and topic deletion.

Brokers are the stand-ins of ``tests.support.controller`` (FakeBroker / FakeChannel)."""
from __future__ import annotations

from types import SimpleNamespace

from kafkapy.controller.context import ReplicaAssignment
from kafkapy.handlers import alter_partition_reassignments as alter
from kafkapy.handlers import list_partition_reassignments as listing
from kafkapy.metadata import paths
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import REQUESTS
from tests.support.alter_partition import TOPIC_ID
from tests.support.alter_partition import request as alter_partition_request
from tests.support.controller import (create_topic, eventually,  # noqa: F401 (fixture zk)
                                      running_controller, set_isr, state, zk, zk_brokers)
from tests.support.services import context, services
from tests.support.zookeeper_server import zk_connect, zookeeper_server  # noqa: F401 (fixtures)

T0 = ("t", 0)


def assignment(store, topic: str = "t") -> paths.TopicAssignment:
    return paths.decode_topic_assignment(store.get(paths.topic_path(topic))[0])


def expand_isr(broker, leader_epoch: int, isr: list[int], partition_epoch: int):
    """The leader's AlterPartition (v3) for t-0."""
    return alter_partition_request(broker.node_id, broker.broker_epoch,
                                   [(0, leader_epoch, isr, partition_epoch)])


def last_lai(broker, tp=T0):
    return broker.leader_and_isr().get(tp)


async def test_move_two_replicas_api_path_and_completion_by_alter_partition(zk):
    b1, b2, b3 = zk_brokers(zk, 3)
    create_topic(b1.store, "t", {0: [1, 2], 1: [1, 2]}, topic_id=TOPIC_ID)
    async with running_controller(b1) as c1:
        store = b1.store
        before = state(store, "t", 0)
        assert (before.leader, before.isr, before.leader_epoch) == (1, (1, 2), 0)
        got = await c1.alter_partition_reassignments({T0: [2, 3]})
        assert got == {T0: (ErrorCode.NO_ERROR, None)}
        # phase U: RS = TRS + ORS with AR/RR in the topic znode and the context
        a = assignment(store)
        assert (a.partitions[0], a.adding_replicas, a.removing_replicas) == (
            [2, 3, 1], {0: [3]}, {0: [1]})
        assert a.partitions[1] == [1, 2] and a.topic_id == TOPIC_ID
        assert c1.ctx.full_assignment(T0) == ReplicaAssignment.of([2, 3, 1], [3], [1])
        assert T0 in c1.ctx.partitions_being_reassigned
        # phase A: leader epoch bumped; the new replica told as new, ORS told too
        s = state(store, "t", 0)
        assert (s.leader, s.isr, s.leader_epoch) == (1, (1, 2), 1)
        await eventually(lambda: last_lai(b3) is not None, "LeaderAndIsr to broker 3")
        for b in (b1, b2, b3):
            await eventually(lambda b=b: last_lai(b) and last_lai(b).leader_epoch == 1,
                             f"LeaderAndIsr epoch 1 to {b.node_id}")
            lai = last_lai(b)
            assert (list(lai.replicas), list(lai.adding_replicas), list(lai.removing_replicas)) \
                == ([2, 3, 1], [3], [1])
        assert last_lai(b3).is_new and not last_lai(b2).is_new
        await eventually(lambda: list(b2.metadata()[T0].replicas) == [2, 3, 1], "metadata RS")
        listed = await c1.list_partition_reassignments(None)
        assert listed == {T0: ReplicaAssignment.of([2, 3, 1], [3], [1])}
        assert await c1.list_partition_reassignments([T0, ("t", 1), ("nope", 0)]) == listed
        # an ISR not yet holding every target: nothing completes
        got = await c1.alter_partition(expand_isr(b1, 1, [1, 2], s.partition_epoch), 3)
        assert T0 in c1.ctx.partitions_being_reassigned
        # broker 3 joins the ISR: phase B
        got = await c1.alter_partition(expand_isr(b1, 1, [1, 2, 3], s.partition_epoch), 3)
        assert got.topics[0].partitions[0].error_code == 0
        assert T0 not in c1.ctx.partitions_being_reassigned
        a = assignment(store)
        assert (a.partitions[0], a.adding_replicas, a.removing_replicas) == ([2, 3], {}, {})
        s = state(store, "t", 0)
        # leader 1 is not a target: the first live ISR target (2) leads; 1 left the ISR
        assert (s.leader, sorted(s.isr)) == (2, [2, 3])
        assert c1.ctx.full_assignment(T0) == ReplicaAssignment.of([2, 3])
        await eventually(lambda: (T0[0], 0, True) in b1.stopped(), "StopReplica(delete) to 1")
        assert (T0[0], 0, False) in b1.stopped()
        await eventually(lambda: list(b3.metadata()[T0].replicas) == [2, 3], "metadata TRS")
        await eventually(lambda: last_lai(b2).leader == 2, "broker 2 leads")
        assert list(last_lai(b2).adding_replicas) == [] and list(last_lai(b2).replicas) == [2, 3]
        assert await c1.list_partition_reassignments(None) == {}
        assert ((T0, 1) not in c1.ctx.replica_states) and c1.ctx.replicas(T0) == [2, 3]


async def test_validation_errors_and_not_controller(zk):
    b1, b2, b3 = zk_brokers(zk, 3)
    create_topic(b1.store, "t", {0: [1, 2]}, topic_id=TOPIC_ID)
    async with running_controller(b1) as c1, running_controller(b2) as c2:
        bad = "INVALID_REPLICA_ASSIGNMENT"
        got = await c1.alter_partition_reassignments({
            ("t", 0): [], ("x", 0): [1, 1], ("x", 1): [1, -1], ("x", 2): [1, 9],
            ("x", 3): [1], ("t", 1): [1], ("t", 2): None})
        assert got[("t", 0)] == (ErrorCode[bad], "Empty replica list specified in partition "
                                                 "reassignment.")
        assert got[("x", 0)] == (ErrorCode[bad], "Duplicate replica ids in partition "
                                                 "reassignment replica list: ArrayBuffer(1, 1)")
        assert got[("x", 1)] == (ErrorCode[bad], "Invalid broker id in replica list: "
                                                 "ArrayBuffer(1, -1)")
        assert got[("x", 2)] == (ErrorCode[bad], "Replica assignment has brokers that are not "
                                                 "alive. Replica list: ArrayBuffer(1, 9), live "
                                                 "broker list: Set(1, 2, 3)")
        assert got[("x", 3)] == got[("t", 1)] == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                  "The partition does not exist.")
        assert got[("t", 2)] == (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
                                 "No partition reassignment is in progress.")
        # cancelling with nothing in flight
        assert await c1.alter_partition_reassignments({T0: None}) == {
            T0: (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "No partition reassignment is in "
                                                        "progress.")}
        assert not c1.ctx.partitions_being_reassigned
        # not the controller
        not_controller = (ErrorCode.NOT_CONTROLLER,
                          "This is not the correct controller for this cluster.")
        assert await c2.alter_partition_reassignments({T0: [2, 3]}) == not_controller
        assert await c2.list_partition_reassignments(None) == not_controller
        assert assignment(b1.store).partitions[0] == [1, 2]


async def test_same_replicas_in_new_order_completes_at_once(zk):
    b1, b2 = zk_brokers(zk, 2)
    create_topic(b1.store, "t", {0: [1, 2]}, topic_id=TOPIC_ID)
    async with running_controller(b1) as c1:
        assert await c1.alter_partition_reassignments({T0: [2, 1]}) == {T0: (0, None)}
        assert assignment(b1.store).partitions[0] == [2, 1]
        assert not c1.ctx.partitions_being_reassigned
        s = state(b1.store, "t", 0)
        assert (s.leader, s.leader_epoch) == (1, 1)        # the leader stays, epoch bumped


async def test_cancel_reverts_and_deletes_the_added_replica(zk):
    b1, b2, b3 = zk_brokers(zk, 3)
    create_topic(b1.store, "t", {0: [1, 2]}, topic_id=TOPIC_ID)
    async with running_controller(b1) as c1:
        await c1.alter_partition_reassignments({T0: [2, 3]})
        assert assignment(b1.store).adding_replicas == {0: [3]}
        got = await c1.alter_partition_reassignments({T0: None})
        assert got == {T0: (0, None)}
        a = assignment(b1.store)
        # ORS in RS order (Kafka cannot restore the original order)
        assert (a.partitions[0], a.adding_replicas, a.removing_replicas) == ([2, 1], {}, {})
        assert not c1.ctx.partitions_being_reassigned
        await eventually(lambda: ("t", 0, True) in b3.stopped(), "StopReplica(delete) to 3")
        assert ("t", 0, True) not in b1.stopped() and ("t", 0, True) not in b2.stopped()
        assert (state(b1.store, "t", 0).leader, c1.ctx.replicas(T0)) == (1, [2, 1])


async def test_replacing_a_reassignment_stops_replicas_no_longer_wanted(zk):
    b1, b2, b3 = zk_brokers(zk, 3)
    create_topic(b1.store, "t", {0: [1]}, topic_id=TOPIC_ID)
    async with running_controller(b1) as c1:
        await c1.alter_partition_reassignments({T0: [2]})
        assert c1.ctx.full_assignment(T0) == ReplicaAssignment.of([2, 1], [2], [1])
        await c1.alter_partition_reassignments({T0: [3]})
        assert c1.ctx.full_assignment(T0) == ReplicaAssignment.of([3, 1], [3], [1])
        a = assignment(b1.store)
        assert (a.partitions[0], a.adding_replicas, a.removing_replicas) == (
            [3, 1], {0: [3]}, {0: [1]})
        await eventually(lambda: ("t", 0, True) in b2.stopped(), "StopReplica(delete) to 2")
        # completion through an ISR change notification (a leader on the old path)
        set_isr(b1.store, "t", 0, [1, 3])
        await eventually(lambda: not c1.ctx.partitions_being_reassigned, "completed")
        s = state(b1.store, "t", 0)
        assert (s.leader, s.isr) == (3, (3,))
        assert assignment(b1.store).partitions[0] == [3]


async def test_legacy_znode_starts_reassignments_and_is_emptied(zk):
    b1, b2, b3 = zk_brokers(zk, 3)
    create_topic(b1.store, "t", {0: [1, 2], 1: [1, 2]}, topic_id=TOPIC_ID)
    async with running_controller(b1) as c1:
        store = b1.store
        store.create(paths.ADMIN_REASSIGN_PARTITIONS, paths.encode_reassign_partitions(
            {("t", 0): [2, 3], ("t", 1): [3, 1], ("gone", 0): [1]}))
        await eventually(lambda: len(c1.ctx.partitions_being_reassigned) == 2, "started")
        # the partition that failed (unknown) left the znode, the others stay
        await eventually(lambda: set(paths.decode_reassign_partitions(
            store.get(paths.ADMIN_REASSIGN_PARTITIONS)[0])) == {("t", 0), ("t", 1)},
                         "failed partition removed")
        # an API reassignment of t-1 supplants the znode's
        assert await c1.alter_partition_reassignments({("t", 1): [1, 3]}) == {
            ("t", 1): (0, None)}
        assert set(paths.decode_reassign_partitions(
            store.get(paths.ADMIN_REASSIGN_PARTITIONS)[0])) == {("t", 0)}
        set_isr(store, "t", 0, [1, 2, 3])
        await eventually(lambda: store.exists(paths.ADMIN_REASSIGN_PARTITIONS) is None,
                         "znode deleted once empty")
        assert assignment(store).partitions[0] == [2, 3]
        # the watch is set again: a new znode is seen
        store.create(paths.ADMIN_REASSIGN_PARTITIONS, paths.encode_reassign_partitions(
            {("t", 0): [3, 2]}))
        await eventually(lambda: store.exists(paths.ADMIN_REASSIGN_PARTITIONS) is None
                         and assignment(store).partitions[0] == [3, 2], "second znode done")


async def test_new_controller_resumes_and_completes(zk):
    b1, b2, b3, b4 = zk_brokers(zk, 4)
    create_topic(b4.store, "t", {0: [1, 2]}, topic_id=TOPIC_ID)
    async with running_controller(b4) as c4, running_controller(b1) as c1:
        assert c4.is_active and not c1.is_active
        assert await c4.alter_partition_reassignments({T0: [2, 3]}) == {T0: (0, None)}
        await c4.shutdown()
        b4.store.close()
        await eventually(lambda: c1.is_active, "broker 1 takes over")
        assert c1.ctx.partitions_being_reassigned == {T0}
        assert c1.ctx.full_assignment(T0) == ReplicaAssignment.of([2, 3, 1], [3], [1])
        # resumed: phase A again under the new controller (epoch bumped again)
        assert state(b1.store, "t", 0).leader_epoch == 2
        listed = await c1.list_partition_reassignments(None)
        assert listed == {T0: ReplicaAssignment.of([2, 3, 1], [3], [1])}
        s = state(b1.store, "t", 0)
        await c1.alter_partition(expand_isr(b1, s.leader_epoch, [1, 2, 3], s.partition_epoch), 3)
        assert not c1.ctx.partitions_being_reassigned
        assert assignment(b1.store).partitions[0] == [2, 3]
        assert state(b1.store, "t", 0).leader == 2


async def test_deleting_a_topic_mid_reassignment(zk):
    """Kafka 3.9 halts only deletions already queued: a new deletion goes at once."""
    b1, b2, b3 = zk_brokers(zk, 3)
    create_topic(b1.store, "t", {0: [1, 2]}, topic_id=TOPIC_ID)
    async with running_controller(b1) as c1:
        await c1.alter_partition_reassignments({T0: [2, 3]})
        b1.store.create(paths.delete_topic_path("t"), b"", makepath=True)
        await eventually(lambda: b1.store.exists(paths.topic_path("t")) is None, "deleted")
        await eventually(lambda: "t" not in c1.ctx.assignments, "forgotten")
        assert not c1.ctx.partitions_being_reassigned and not c1.ctx.reassignment_changes
        assert ("t", 0, True) in b3.stopped()
        # and a reassignment of a topic being deleted is refused
        create_topic(b1.store, "u", {0: [1]}, topic_id=None)
        await eventually(lambda: ("u", 0) in c1.ctx.leadership, "u online")
        c1.ctx.queue_topic_deletion({"u"})
        got = await c1.alter_partition_reassignments({("u", 0): [2]})
        assert got == {("u", 0): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                  "The partition does not exist.")}


def test_replica_assignment_arithmetic():
    ra = ReplicaAssignment.of([1, 2, 3])
    moved = ra.reassign_to([3, 4, 2])
    assert moved == ReplicaAssignment.of([3, 4, 2, 1], [4], [1])
    assert (moved.origin_replicas, moved.target_replicas) == ([3, 2, 1], [3, 4, 2])
    assert moved.reassign_to(moved.origin_replicas) == ReplicaAssignment.of([3, 2, 1])
    assert moved.remove_replica(1) == ReplicaAssignment.of([3, 4, 2], [4], [])
    assert not ra.reassign_to([2, 1, 3]).is_being_reassigned
    assert str(moved) == ("ReplicaAssignment(replicas=3,4,2,1, addingReplicas=4, "
                          "removingReplicas=1)")


async def test_target_broker_restart_resumes_the_reassignment(zk):
    """A target broker that comes back gets the reassignment again (Kafka's
    maybeResumeReassignments on broker startup): a new leader epoch, LeaderAndIsr to it."""
    from tests.support.controller import new_session
    b1, b2, b3 = zk_brokers(zk, 3)
    create_topic(b1.store, "t", {0: [1, 2]}, topic_id=TOPIC_ID)
    async with running_controller(b1) as c1:
        await c1.alter_partition_reassignments({T0: [2, 3]})
        epoch = state(b1.store, "t", 0).leader_epoch
        b3.store.close()
        await eventually(lambda: 3 not in c1.ctx.live_brokers, "broker 3 seen dead")
        b3.received.clear()
        new_session(b3, zk)
        await eventually(lambda: 3 in c1.ctx.live_brokers, "broker 3 back")
        await eventually(lambda: state(b1.store, "t", 0).leader_epoch > epoch, "epoch bump")
        await eventually(lambda: last_lai(b3) is not None
                         and list(last_lai(b3).adding_replicas) == [3], "LeaderAndIsr to 3")
        assert T0 in c1.ctx.partitions_being_reassigned



async def test_auto_rebalance_does_not_skip_a_partition_being_reassigned(zk):
    """Kafka 3.9's checkAndTriggerAutoLeaderRebalance has no reassignment check: the
    preferred replica is RS[0] = TRS[0], led to once it is in the ISR."""
    from kafkapy.controller import events as ev
    b1, b2, b3, b4 = zk_brokers(zk, 4)
    create_topic(b1.store, "t", {0: [1, 2]}, topic_id=TOPIC_ID)
    async with running_controller(b1) as c1:
        await c1.alter_partition_reassignments({T0: [3, 4]})
        s = state(b1.store, "t", 0)
        await c1.alter_partition(expand_isr(b1, s.leader_epoch, [1, 2, 3], s.partition_epoch), 3)
        assert T0 in c1.ctx.partitions_being_reassigned       # 4 is not in sync yet
        c1._enqueue(ev.AutoPreferredReplicaLeaderElection())
        await eventually(lambda: state(b1.store, "t", 0).leader == 3, "3 leads")
        s = state(b1.store, "t", 0)
        await c1.alter_partition(expand_isr(b3, s.leader_epoch, [1, 2, 3, 4],
                                            s.partition_epoch), 3)
        assert not c1.ctx.partitions_being_reassigned
        s = state(b1.store, "t", 0)
        assert (s.leader, sorted(s.isr)) == (3, [3, 4])
        assert assignment(b1.store).partitions[0] == [3, 4]


async def test_single_broker_on_the_embedded_store(tmp_path):
    """One broker, no ZooKeeper: the API and the legacy znode work the same."""
    from tests.support.controller import embedded_broker
    async with embedded_broker(tmp_path) as broker, running_controller(broker) as c1:
        store = broker.store
        create_topic(store, "t", {0: [1]}, topic_id=TOPIC_ID)
        await eventually(lambda: state(store, "t", 0), "t-0 online")
        assert await c1.alter_partition_reassignments({T0: [1]}) == {T0: (0, None)}
        assert await c1.alter_partition_reassignments({T0: [2]}) == {T0: (
            ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Replica assignment has brokers that are not "
            "alive. Replica list: ArrayBuffer(2), live broker list: Set(1)")}
        store.create(paths.ADMIN_REASSIGN_PARTITIONS,
                     paths.encode_reassign_partitions({T0: [1]}))
        await eventually(lambda: store.exists(paths.ADMIN_REASSIGN_PARTITIONS) is None,
                         "legacy znode done")
        assert state(store, "t", 0).leader_epoch == 2


async def test_a_failed_controller_move_neither_kills_the_event_task_nor_hangs(zk, monkeypatch):
    """An event fails with ControllerMovedError and giving up /controller then finds the
    store gone: the caller is answered, the event task lives on, the broker runs again."""
    import asyncio

    from kazoo.exceptions import ConnectionLoss

    from kafkapy.controller.reassignment import PartitionReassignments
    from kafkapy.controller.zk_writes import ControllerMovedError
    b1, _b2 = zk_brokers(zk, 2)
    async with running_controller(b1) as c1:
        assert c1.is_active
        real_get = b1.store.get

        def moved(_reassignments, _partitions):
            monkeypatch.setattr(b1.store, "get", lost)
            raise ControllerMovedError("controller epoch moved on")

        def lost(path, *args, **kwargs):
            if path == paths.CONTROLLER:
                monkeypatch.setattr(b1.store, "get", real_get)
                raise ConnectionLoss("not connected to ZooKeeper")
            return real_get(path, *args, **kwargs)

        real_list = PartitionReassignments.list
        monkeypatch.setattr(PartitionReassignments, "list", moved)
        got = await asyncio.wait_for(c1.list_partition_reassignments(None), 10)
        assert got == (ErrorCode.NOT_CONTROLLER, "This is not the correct controller for this "
                                                 "cluster.")
        assert not c1._task.done()
        monkeypatch.setattr(PartitionReassignments, "list", real_list)
        await eventually(lambda: c1.is_active, "broker 1 controller again")
        assert await asyncio.wait_for(c1.list_partition_reassignments(None), 10) == {}


async def test_cluster_authorization_failure_lists_every_partition_asked():
    """Kafka's getErrorResponse: each partition asked carries CLUSTER_AUTHORIZATION_FAILED
    (Kafka's admin client counts the partitions answered against those asked)."""
    deny = SimpleNamespace(authorize=lambda *a: False)
    parts = services(authorizer=deny)

    def ctx(key):
        return context(parts, key, 0)

    denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    req = REQUESTS[45][0]
    request = req(timeout_ms=1000, topics=[
        req.ReassignableTopic(name="t", partitions=[
            req.ReassignableTopic.ReassignablePartition(partition_index=0, replicas=[1, 2]),
            req.ReassignableTopic.ReassignablePartition(partition_index=1, replicas=None)]),
        req.ReassignableTopic(name="u", partitions=[
            req.ReassignableTopic.ReassignablePartition(partition_index=3, replicas=[2])])])
    got = await alter.handle(ctx(45), request)
    assert got.error_code == denied
    assert {(t.name, p.partition_index, p.error_code) for t in got.responses
            for p in t.partitions} == {("t", 0, denied), ("t", 1, denied), ("u", 3, denied)}
    req = REQUESTS[46][0]
    got = await listing.handle(ctx(46), req(timeout_ms=1000, topics=[
        req.ListPartitionReassignmentsTopics(name="t", partition_indexes=[0, 2])]))
    assert got.error_code == denied
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in got.topics] == [
        ("t", [0, 2])]


async def test_a_failed_controller_event_answers_every_partition_asked():
    """The controller's event failed (UNKNOWN_SERVER_ERROR): each partition says so, as
    Kafka's admin client expects one answer per partition unless NOT_CONTROLLER."""
    async def failed(_wanted):
        return ErrorCode.UNKNOWN, None
    ctx = context(services(controller=SimpleNamespace(alter_partition_reassignments=failed)),
                  45, 0)
    req = REQUESTS[45][0]
    got = await alter.handle(ctx, req(timeout_ms=1000, topics=[req.ReassignableTopic(
        name="t", partitions=[req.ReassignableTopic.ReassignablePartition(
            partition_index=0, replicas=[1])])]))
    assert got.error_code == ErrorCode.UNKNOWN
    assert [(t.name, p.partition_index, p.error_code) for t in got.responses
            for p in t.partitions] == [("t", 0, ErrorCode.UNKNOWN)]


async def test_a_reassignment_that_cannot_resume_does_not_fail_every_failover(zk):
    """A partition with no state znode (its only replica never came up) asked to move:
    the start fails (UNKNOWN_SERVER_ERROR) and leaves AR/RR in the topic znode.  With
    the added replica's broker gone too, a new controller can neither elect a leader nor
    resume; it must still finish its failover instead of resigning and retrying forever
    (the cluster would have no controller)."""
    import asyncio
    b1, b2, b3 = zk_brokers(zk, 3)
    create_topic(b1.store, "t", {0: [9]}, topic_id=TOPIC_ID)
    async with running_controller(b1) as c1:
        got = await c1.alter_partition_reassignments({T0: [2]})
        assert got[T0][0] == ErrorCode.UNKNOWN
        assert assignment(b1.store).adding_replicas == {0: [2]}
    b1.store.close()                    # its /controller goes with its session
    b2.store.close()                    # the added replica's broker is gone
    async with running_controller(b3) as c3:
        await eventually(lambda: c3.is_active, "broker 3 controller")
        epoch = c3.ctx.epoch
        await asyncio.sleep(2.5)        # a failing failover resigns and runs again in 1 s
        assert c3.is_active and c3.ctx.epoch == epoch
        assert T0 in c3.ctx.partitions_being_reassigned
        # the added broker returns: the partition comes online and the move completes
        b2.store = zk()
        b2.register()
        await eventually(lambda: not c3.ctx.partitions_being_reassigned, "move completed")
        assert assignment(b3.store).partitions[0] == [2]
        assert state(b3.store, "t", 0).leader == 2
