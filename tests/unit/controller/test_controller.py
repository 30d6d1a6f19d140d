"""KafkaController (ZooKeeper mode) against real stores: election and the epoch bump,
one active controller among several, failover when the active's session ends,
fencing of a stale controller, and what the active controller sends when brokers
come and go, topics appear, brokers shut down and leaders are elected on request.

Brokers are stand-ins (``FakeBroker``): the broker-side ``apply`` of each is a stub
that records the requests it receives.  The controller's channel is a
``FakeChannel`` delivering requests to those stubs on the loop (no sockets: the
channel has tests of its own).  ZooKeeper tests use the real server of
``tests.support.zookeeper_server`` (one chroot per test); they skip without one.
"""
from __future__ import annotations

import asyncio
from types import SimpleNamespace


from kafkapy.controller.context import PartitionStateName
from kafkapy.metadata import paths
from kafkapy.protocol.errors import ErrorCode
from tests.support.controller import (UM, FakeBroker, create_topic, embedded_broker, eventually,
                                      new_session, running_controller, set_isr, state, zk,
                                      zk_brokers)  # noqa: F401 (fixtures)
from tests.support.zookeeper_server import zk_connect, zookeeper_server  # noqa: F401  (fixtures)


def epoch_znode(store) -> tuple[int, int]:
    data, stat = store.get(paths.CONTROLLER_EPOCH)
    return paths.decode_controller_epoch(data), stat.version


async def lose_then_rejoin_isr(zk, controller, b1: FakeBroker, b2: FakeBroker) -> None:
    """Broker 2 (preferred leader of t-0, broker 3 the other replica) dies and t-0 moves
    to 3; 2 comes back and rejoins the ISR, so a preferred election may move t-0 back."""
    b2.store.close()
    await eventually(lambda: state(b1.store, "t", 0).leader == 3, "t-0 led by 3")
    new_session(b2, zk)
    await eventually(lambda: 2 in controller.ctx.live_brokers, "broker 2 back")
    set_isr(b1.store, "t", 0, [3, 2])
    await eventually(lambda: 2 in controller.ctx.leadership[("t", 0)].isr, "ISR change seen")


# -- single broker, embedded store ----------------------------------------------------
async def test_single_broker_elects_itself_and_brings_partitions_online(tmp_path):
    async with embedded_broker(tmp_path) as broker:
        store = broker.store
        create_topic(store, "t", {0: [1], 1: [1]})
        async with running_controller(broker) as controller:
            # failover is complete when startup returns
            assert controller.is_active and controller.epoch == 1
            assert epoch_znode(store) == (1, 1)
            assert paths.decode_controller(store.get(paths.CONTROLLER)[0]).broker_id == 1
            for p in (0, 1):
                s = state(store, "t", p)
                assert (s.leader, s.leader_epoch, s.isr, s.controller_epoch) == (1, 0, (1,), 1)
                assert broker.leader_and_isr()[("t", p)].leader == 1
                assert broker.metadata()[("t", p)].leader == 1
            assert [r.API_KEY for r in broker.received][0] == UM   # brokers first
        assert not controller.is_active


async def test_second_start_bumps_the_epoch_and_keeps_leaders(tmp_path):
    for expected_epoch in (1, 2):
        async with embedded_broker(tmp_path) as broker:
            store = broker.store
            if expected_epoch == 1:
                create_topic(store, "t", {0: [1]})
            async with running_controller(broker) as controller:
                assert controller.epoch == expected_epoch
                assert epoch_znode(store) == (expected_epoch, expected_epoch)
                s = state(store, "t", 0)
                assert (s.leader, s.leader_epoch) == (1, 0)     # already online: not re-elected
                assert broker.leader_and_isr()[("t", 0)].leader == 1


async def test_new_topics_and_partitions_through_watches(tmp_path):
    async with embedded_broker(tmp_path) as broker, running_controller(broker) as controller:
        store = broker.store
        # replica 2 is not live: leader is the first live replica, ISR the live ones
        create_topic(store, "a", {0: [2, 1], 1: [1, 2]})
        await eventually(lambda: state(store, "a", 1), "state of a-1")
        assert (state(store, "a", 0).leader, state(store, "a", 0).isr) == (1, (1,))
        assert (state(store, "a", 1).leader, state(store, "a", 1).isr) == (1, (1,))
        # no live replica: stays NewPartition without a state znode
        create_topic(store, "dead", {0: [7]})
        await eventually(lambda: controller.ctx.partition_state(("dead", 0))
                         is PartitionStateName.NEW, "dead-0 NewPartition")
        assert state(store, "dead", 0) is None
        # a partition added to the assignment
        _, stat = store.get(paths.topic_path("a"))
        store.set(paths.topic_path("a"), paths.encode_topic_assignment(
            {0: [2, 1], 1: [1, 2], 2: [1]}, "AAAAAAAAAAAAAAAAAAAAAQ"), version=stat.version)
        await eventually(lambda: state(store, "a", 2), "state of a-2")
        assert broker.leader_and_isr()[("a", 2)].leader == 1


async def test_topic_without_id_gets_one(tmp_path):
    async with embedded_broker(tmp_path) as broker:
        create_topic(broker.store, "old", {0: [1]}, topic_id=None)
        async with running_controller(broker) as controller:
            written = paths.decode_topic_assignment(broker.store.get(paths.topic_path("old"))[0])
            assert written.topic_id and controller.ctx.topic_ids["old"] == written.topic_id


async def test_elect_leaders_errors_single_broker(tmp_path):
    async with embedded_broker(tmp_path) as broker:
        create_topic(broker.store, "t", {0: [1]})
        async with running_controller(broker) as controller:
            got = await controller.elect_leaders(0, [("t", 0), ("nope", 0)])
            assert got[("t", 0)][0] == ErrorCode.ELECTION_NOT_NEEDED
            assert got[("nope", 0)] == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                        "The partition does not exist.")
            got = await controller.elect_leaders(1, None)
            assert got == {("t", 0): (ErrorCode.ELECTION_NOT_NEEDED,
                                      "Leader election not needed for topic partition.")}


# -- several brokers on one ZooKeeper -----------------------------------------------
async def test_one_active_controller_and_failover(zk):
    b1, b2 = zk_brokers(zk, 2)
    async with running_controller(b1) as c1, running_controller(b2) as c2:
        assert c1.is_active and not c2.is_active
        assert c2.active_controller_id == 1
        assert epoch_znode(b1.store)[0] == 1
        # the active one's session ends: the other takes over with the next epoch
        await c1.shutdown()
        b1.store.close()
        await eventually(lambda: c2.is_active, "broker 2 to become controller")
        assert c2.epoch == 2 and epoch_znode(b2.store) == (2, 2)
        await eventually(lambda: 1 not in c2.ctx.live_brokers, "broker 1 seen dead")


async def test_broker_failure_and_startup_move_leaders(zk):
    b1, b2, b3 = zk_brokers(zk, 3)
    create_topic(b1.store, "t", {0: [2, 3], 1: [3, 2]})
    async with running_controller(b1) as c1:
        assert (state(b1.store, "t", 0).leader, state(b1.store, "t", 1).leader) == (2, 3)
        await eventually(lambda: ("t", 0) in b2.leader_and_isr()
                         and ("t", 1) in b3.leader_and_isr(), "LeaderAndIsr to 2 and 3")
        assert b2.leader_and_isr()[("t", 0)].leader == 2
        # broker 2 dies: partition 0 moves to 3, 2 leaves every ISR
        b2.store.close()
        await eventually(lambda: state(b1.store, "t", 0).leader == 3, "t-0 led by 3")
        s0, s1 = state(b1.store, "t", 0), state(b1.store, "t", 1)
        assert (s0.leader_epoch, s0.isr, s0.controller_epoch) == (1, (3,), 1)
        assert (s1.leader, s1.isr) == (3, (3,))
        await eventually(lambda: b3.leader_and_isr()[("t", 0)].leader == 3, "3 told to lead")
        assert b1.metadata()[("t", 0)].leader == 3
        # broker 2 comes back (a new session, a new epoch): it gets all partitions
        b2.received.clear()
        new_session(b2, zk)
        await eventually(lambda: b2.leader_and_isr().keys() == {("t", 0), ("t", 1)},
                         "LeaderAndIsr to the restarted broker")
        assert b2.metadata().keys() == {("t", 0), ("t", 1)}
        assert all(r.broker_epoch == b2.broker_epoch for r in b2.received)
        assert state(b1.store, "t", 0).leader == 3      # no automatic move back
        # preferred election: 2 is not in the ISR yet (no AlterPartition here)
        got = await c1.elect_leaders(0, [("t", 0), ("t", 1), ("t", 9)])
        assert got[("t", 0)][0] == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
        assert got[("t", 1)][0] == ErrorCode.ELECTION_NOT_NEEDED
        assert got[("t", 9)][0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        # once 2 is back in the ISR (as the leader's AlterPartition would write it)
        set_isr(b1.store, "t", 0, [3, 2])
        await eventually(lambda: 2 in c1.ctx.leadership[("t", 0)].isr, "ISR change seen")
        got = await c1.elect_leaders(0, [("t", 0)])
        assert got == {("t", 0): (ErrorCode.NO_ERROR, None, 2)}
        s0 = state(b1.store, "t", 0)
        assert (s0.leader, s0.leader_epoch, s0.isr) == (2, 2, (3, 2))
        await eventually(lambda: b2.leader_and_isr()[("t", 0)].leader == 2, "2 told to lead")


async def test_controlled_shutdown_moves_leadership(zk):
    b1, b2, _ = zk_brokers(zk, 3)
    create_topic(b1.store, "t", {0: [2, 3], 1: [3, 2], 2: [2]})
    async with running_controller(b1) as c1:
        code, remaining = await c1.controlled_shutdown(2, b2.broker_epoch - 1)
        assert (code, remaining) == (ErrorCode.STALE_BROKER_EPOCH, [])
        code, remaining = await c1.controlled_shutdown(2, b2.broker_epoch)
        # t-2 has one replica: it stays with 2 and does not hold the shutdown back
        assert (code, remaining) == (ErrorCode.NO_ERROR, [])
        assert state(b1.store, "t", 2).leader == 2
        s0, s1 = state(b1.store, "t", 0), state(b1.store, "t", 1)
        assert (s0.leader, s0.isr, s0.leader_epoch) == (3, (3,), 1)
        assert (s1.leader, s1.isr) == (3, (3,))
        await eventually(lambda: ("t", 1, False) in b2.stopped(), "StopReplica to follower 2")
        code, _ = await c1.controlled_shutdown(9, -1)
        assert code == ErrorCode.BROKER_NOT_AVAILABLE


async def test_isr_change_notification(zk):
    b1, b2 = zk_brokers(zk, 2)
    create_topic(b1.store, "t", {0: [1, 2]})
    async with running_controller(b1) as c1:
        store = b1.store
        data, stat = store.get(paths.partition_state_path("t", 0))
        store.set(paths.partition_state_path("t", 0),
                  paths.encode_partition_state(1, 0, [1], 1), version=stat.version)
        store.create(paths.ISR_CHANGE_SEQ_PATH, paths.encode_isr_change([("t", 0)]),
                     sequence=True)
        await eventually(lambda: list(b2.metadata().get(("t", 0), SimpleNamespace(isr=[]))
                                      .isr) == [1], "UpdateMetadata with the new ISR")
        assert c1.ctx.leadership[("t", 0)].isr == (1,)
        await eventually(lambda: not store.get_children(paths.ISR_CHANGE_NOTIFICATION),
                         "notification deleted")


async def test_stale_epoch_write_resigns(zk):
    b1, = zk_brokers(zk, 1)
    async with running_controller(b1) as c1:
        assert c1.epoch == 1
        # another controller bumped the epoch behind our back (e.g. after a pause)
        other = zk()
        _, stat = other.get(paths.CONTROLLER_EPOCH)
        other.set(paths.CONTROLLER_EPOCH, paths.encode_controller_epoch(5), version=stat.version)
        # the next fenced write (a new partition's state) fails: resign, run again
        create_topic(b1.store, "t", {0: [1]})
        await eventually(lambda: c1.is_active and c1.epoch == 6, "re-elected at epoch 6")
        await eventually(lambda: state(b1.store, "t", 0), "t-0 online")
        assert state(b1.store, "t", 0).controller_epoch == 6


async def test_not_active_answers_not_controller(zk):
    b1, b2 = zk_brokers(zk, 2)
    async with running_controller(b1), running_controller(b2) as c2:
        assert await c2.controlled_shutdown(1, -1) == (ErrorCode.NOT_CONTROLLER, [])
        assert await c2.elect_leaders(0, [("t", 0)]) == {
            ("t", 0): (ErrorCode.NOT_CONTROLLER, None)}


async def test_topic_deletion(zk):
    b1, b2 = zk_brokers(zk, 2)
    create_topic(b1.store, "t", {0: [1, 2], 1: [2, 1]})
    b1.store.create(paths.topic_config_path("t"), paths.encode_entity_config({}),
                    makepath=True)
    async with running_controller(b1) as c1:
        b1.store.create(paths.delete_topic_path("t"), b"", makepath=True)
        await eventually(lambda: not b1.store.exists(paths.topic_path("t"))
                         and not b1.store.exists(paths.delete_topic_path("t")),
                         "topic znodes deleted")
        assert not b1.store.exists(paths.topic_config_path("t"))
        for b in (b1, b2):
            assert {("t", 0, True), ("t", 1, True)} <= set(b.stopped())
            assert {p.leader for p in b.metadata().values()} == {-2}
        assert "t" not in c1.ctx.assignments
        # deleting an unknown topic just removes the marker
        b1.store.create(paths.delete_topic_path("nope"), b"")
        await eventually(lambda: not b1.store.exists(paths.delete_topic_path("nope")),
                         "marker of an unknown topic removed")


async def test_session_expiry_resigns_and_reelects(zk):
    from kazoo.client import KazooClient
    b1, = zk_brokers(zk, 1)
    async with running_controller(b1) as c1:
        replaced = asyncio.Event()

        def session_replaced() -> None:     # what server.py does
            c1.on_session_expired()

            async def again() -> None:
                b1.register()
                await c1.reelect()
                replaced.set()
            asyncio.get_running_loop().create_task(again())
        b1.store.on_new_session(session_replaced)
        assert c1.epoch == 1
        # expire the session: another client with its id and password closes it
        session_id, password = b1.store.client.client_id
        hosts = b1.store.client.hosts
        thief = KazooClient(hosts=",".join(f"{h}:{p}" for h, p in hosts),
                            client_id=(session_id, password))
        await asyncio.get_running_loop().run_in_executor(None, thief.start, 10)
        await asyncio.get_running_loop().run_in_executor(None, thief.stop)
        thief.close()
        await asyncio.wait_for(replaced.wait(), 30)
        assert c1.is_active and c1.epoch == 2
        assert epoch_znode(b1.store) == (2, 2)


async def test_reelect_after_shutdown_leaves_the_controller_down(zk):
    """A session replaced while the broker stops must not start the controller again."""
    b1, = zk_brokers(zk, 1)
    async with running_controller(b1) as c1:
        assert c1.is_active
    await asyncio.wait_for(c1.reelect(), 5)
    await asyncio.sleep(0.2)
    assert not c1.is_active
    assert c1._task.done()


async def test_a_state_change_left_half_done_makes_the_controller_resign(zk):
    """Kafka's handleIllegalState: requests collected and never sent (a state change that
    failed half way) make the next UpdateMetadata batch refuse to start; the controller
    then resigns and the election that follows (itself again: a new epoch) carries on."""
    b1, b2 = zk_brokers(zk, 2)
    create_topic(b1.store, "t", {0: [1]})
    async with running_controller(b1) as c1:
        assert c1.epoch == 1
        c1._machinery.batch.new_batch()
        c1._machinery.batch.add_update_metadata([1])          # never sent
        b2.store.close()        # broker 2 (no replicas) fails: UpdateMetadata to the others
        await eventually(lambda: c1.is_active and c1.epoch == 2, "resigned and elected again")
        assert set(c1.ctx.live_brokers) == {1}
        assert state(b1.store, "t", 0).leader == 1


async def test_auto_leader_rebalance_moves_leaders_back(zk):
    from kafkapy.controller import events
    b1, b2, _ = zk_brokers(zk, 3)
    create_topic(b1.store, "t", {0: [2, 3], 1: [3, 2]})
    async with running_controller(b1) as c1:
        await lose_then_rejoin_isr(zk, c1, b1, b2)
        c1._enqueue(events.AutoPreferredReplicaLeaderElection())
        await eventually(lambda: state(b1.store, "t", 0).leader == 2, "t-0 back on 2")
        assert state(b1.store, "t", 1).leader == 3


async def test_deletion_queued_before_failover(zk):
    b1, = zk_brokers(zk, 1)
    create_topic(b1.store, "gone", {0: [1]})
    b1.store.create(paths.delete_topic_path("gone"), b"", makepath=True)
    async with running_controller(b1):
        await eventually(lambda: not b1.store.exists(paths.topic_path("gone")), "deleted")
        assert ("gone", 0) not in b1.leader_and_isr()     # never brought online
        assert ("gone", 0, True) in b1.stopped()


async def test_unclean_election_on_request(zk):
    b1, b2, b3 = zk_brokers(zk, 3)
    create_topic(b1.store, "t", {0: [2, 3]})
    async with running_controller(b1) as c1:
        b3.store.close()
        await eventually(lambda: state(b1.store, "t", 0).isr == (2,), "3 out of the ISR")
        b2.store.close()
        await eventually(lambda: state(b1.store, "t", 0).leader == -1, "t-0 offline")
        assert state(b1.store, "t", 0).isr == (2,)       # the last ISR member stays
        import prometheus_client
        assert prometheus_client.REGISTRY.get_sample_value(
            "kafkapy_controller_offline_partitions") == 1
        assert prometheus_client.REGISTRY.get_sample_value("kafkapy_controller_active") == 1
        new_session(b3, zk)
        await eventually(lambda: 3 in c1.ctx.live_brokers, "broker 3 back")
        assert state(b1.store, "t", 0).leader == -1     # clean election impossible
        got = await c1.elect_leaders(0, [("t", 0)])
        assert got[("t", 0)][0] == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
        got = await c1.elect_leaders(1, [("t", 0)])
        assert got == {("t", 0): (ErrorCode.NO_ERROR, None, 3)}
        s0 = state(b1.store, "t", 0)
        assert (s0.leader, s0.isr) == (3, (3,))
        got = await c1.elect_leaders(1, [("t", 0)])
        assert got[("t", 0)][0] == ErrorCode.ELECTION_NOT_NEEDED


async def test_log_dir_failure_moves_leaders(zk):
    b1, b2, _ = zk_brokers(zk, 3)
    create_topic(b1.store, "t", {0: [2, 3], 1: [2, 3]})
    async with running_controller(b1) as c1:
        assert state(b1.store, "t", 0).leader == 2
        # broker 2's dir holding t-0 failed; it says so through the notification
        b2.failed_dirs.add(("t", 0))
        b2.store.create(paths.LOG_DIR_EVENT_SEQ_PATH, paths.encode_log_dir_event(2),
                        sequence=True, makepath=True)
        await eventually(lambda: state(b1.store, "t", 0).leader == 3, "t-0 moved to 3")
        s0, s1 = state(b1.store, "t", 0), state(b1.store, "t", 1)
        assert s0.isr == (3,) and (s1.leader, s1.isr) == (2, (2, 3))
        assert not c1.ctx.is_replica_online(2, ("t", 0))
        await eventually(lambda: not b1.store.get_children(paths.LOG_DIR_EVENT_NOTIFICATION),
                         "notification deleted")


async def test_own_id_in_controller_from_old_session_is_waited_out(zk):
    old = zk()      # a killed earlier incarnation of broker 1 whose session still lives
    old.create(paths.CONTROLLER, paths.encode_controller(1, 0), ephemeral=True)
    b1, = zk_brokers(zk, 1)
    async with running_controller(b1) as c1:
        assert not c1.is_active
        old.close()     # ZooKeeper expires it
        await eventually(lambda: c1.is_active, "elected once the old session is gone")
        assert c1.epoch == 1


async def test_resigns_when_another_broker_takes_controller(zk):
    from kafkapy.metadata.store import CreateOp, DeleteOp, SetDataOp
    b1, = zk_brokers(zk, 1)
    create_topic(b1.store, "t", {0: [1]})
    async with running_controller(b1) as c1:
        assert c1.is_active and c1.ctx.assignments
        channel = b1.channels[-1]
        other = zk()
        _, stat = other.get(paths.CONTROLLER_EPOCH)
        other.multi([DeleteOp(paths.CONTROLLER),
                     CreateOp(paths.CONTROLLER, paths.encode_controller(2, 0), ephemeral=True),
                     SetDataOp(paths.CONTROLLER_EPOCH, paths.encode_controller_epoch(2),
                               stat.version)])
        await eventually(lambda: not c1.is_active, "resigned")
        assert c1.active_controller_id == 2
        assert channel.closed and not c1.ctx.assignments and c1.epoch == 0
        # events of leftover watches do nothing now
        create_topic(b1.store, "u", {0: [1]})
        await asyncio.sleep(0.3)
        assert state(b1.store, "u", 0) is None


async def test_shutdown_waits_for_requests_in_flight(zk):
    b1, b2, b3 = zk_brokers(zk, 3)
    create_topic(b1.store, "t", {0: [1, 2]})
    c1 = b1.start_controller()
    await c1.startup()
    await eventually(lambda: ("t", 0) in b2.leader_and_isr(), "2 follows t-0")
    # the controller's own broker shuts down: leadership moves to 2, then the
    # controller stops while the requests telling 2 and 3 are still on their way
    channel = b1.channels[-1]
    channel.hold = True
    code, remaining = await c1.controlled_shutdown(1, b1.broker_epoch)
    assert (code, remaining) == (ErrorCode.NO_ERROR, [])
    stopping = asyncio.get_running_loop().create_task(c1.shutdown())
    await asyncio.sleep(0.05)
    assert not stopping.done()
    channel.release()
    await asyncio.wait_for(stopping, 10)
    assert b2.leader_and_isr()[("t", 0)].leader == 2
    assert b3.metadata()[("t", 0)].leader == 2


async def test_preferred_replica_election_znode(zk):
    b1, b2, _ = zk_brokers(zk, 3)
    create_topic(b1.store, "t", {0: [2, 3]})
    async with running_controller(b1) as c1:
        await lose_then_rejoin_isr(zk, c1, b1, b2)
        b1.store.create(paths.ADMIN_PREFERRED_REPLICA_ELECTION,
                        paths.encode_preferred_replica_election([("t", 0), ("x", 1)]))
        await eventually(lambda: state(b1.store, "t", 0).leader == 2, "t-0 back on 2")
        await eventually(lambda: not b1.store.exists(paths.ADMIN_PREFERRED_REPLICA_ELECTION),
                         "request znode deleted")


class FlakyStore:
    """A store whose connection drops once, on the next ``get_children`` of ``path``
    after ``arm()`` (kazoo raises ConnectionLoss then)."""

    def __init__(self, store, path: str) -> None:
        self._store, self._path, self._armed = store, path, False

    def __getattr__(self, name):
        return getattr(self._store, name)

    def arm(self) -> None:
        self._armed = True

    def get_children(self, path, watch=None):
        if self._armed and path == self._path:
            from kazoo.exceptions import ConnectionLoss
            self._armed = False
            raise ConnectionLoss()
        return self._store.get_children(path, watch=watch)


async def test_store_connection_lost_mid_event_fails_over_again(zk):
    b1, b2, _ = zk_brokers(zk, 3)
    b1.store = FlakyStore(b1.store, paths.BROKER_IDS)
    create_topic(b1.store, "t", {0: [2, 3]})
    async with running_controller(b1) as c1:
        assert c1.epoch == 1 and state(b1.store, "t", 0).leader == 2
        b1.store.arm()
        b2.store.close()        # the BrokerChange it causes meets the dropped connection
        await eventually(lambda: c1.is_active and c1.epoch == 2, "failed over again")
        await eventually(lambda: state(b1.store, "t", 0).leader == 3, "t-0 led by 3")
        assert 2 not in c1.ctx.live_brokers


async def test_bounced_broker_is_failed_then_started(zk):
    b1, b2, _ = zk_brokers(zk, 3)
    create_topic(b1.store, "t", {0: [2, 3]})
    async with running_controller(b1) as c1:
        old_epoch = b2.broker_epoch
        # gone and back before the controller looks: one id, a new czxid
        b2.store.close()
        b2.received.clear()
        new_session(b2, zk)
        assert b2.broker_epoch > old_epoch
        await eventually(lambda: c1.ctx.broker_epoch(2) == b2.broker_epoch, "new epoch seen")
        s0 = state(b1.store, "t", 0)
        assert (s0.leader, s0.isr) == (3, (3,))
        await eventually(lambda: ("t", 0) in b2.leader_and_isr(), "LeaderAndIsr to the bounced")
        assert b2.leader_and_isr()[("t", 0)].leader == 3
        assert all(r.broker_epoch == b2.broker_epoch for r in b2.received)
