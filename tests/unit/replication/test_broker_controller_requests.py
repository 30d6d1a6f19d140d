"""The broker side of the controller's requests: LeaderAndIsr, UpdateMetadata, StopReplica,
ControlledShutdown -- their ``apply`` cores over a real MetadataCache and a real
ReplicaManager on a temporary LogManager, with Kafka 3.9's fencing; from the network, the
ControllerFence's confirmation of a new controller epoch in a real embedded store."""
from __future__ import annotations

import asyncio
import uuid

import pytest

from kafkapy.clock import MockClock
from kafkapy.handlers import (controlled_shutdown, leader_and_isr, metadata, stop_replica,
                              update_metadata)
from kafkapy.api.context import CloseConnection
from kafkapy.log.manager import LogManager
from kafkapy.metadata import paths
from kafkapy.metadata.cache import MetadataCache
from kafkapy.metadata.controller_fence import ControllerFence
from kafkapy.metadata.embedded import EmbeddedStore
from kafkapy.metadata.topics import topic_id_text
from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.protocol.inter_broker import (
    LeaderAndIsrRequest as LAI, StopReplicaRequest as SR, UpdateMetadataRequest as UM)
from kafkapy.protocol.messages import REQUESTS, RESPONSES
from kafkapy.replication.replica_manager import ReplicaManager
from tests.support.services import Absent, context, services

TS = 1_700_000_000_000
NODE = 1
TID = uuid.UUID(int=0x1234)


class FakeFetchers:
    def __init__(self):
        self.added, self.removed = {}, []

    def add_partitions(self, partitions):
        self.added.update(partitions)

    def remove_partitions(self, keys):
        self.removed.extend(keys)
        for key in keys:
            self.added.pop(key, None)


class Broker:
    """A broker's parts the controller's requests reach: ``local`` is what its own
    controller's in-process delivery applies them with, ``ctx`` a request from the network."""

    def __init__(self, tmp_path):
        self.node_id = NODE
        self.broker_epoch = 100
        self.topic_overrides: dict[str, dict[str, str]] = {}    # what /config/topics holds
        self.cache = MetadataCache("cluster", NODE, "INTERNAL",
                                   topic_overrides=lambda name: self.topic_overrides.get(name))
        self.store = EmbeddedStore(tmp_path / "metadata.json", fsync=False)
        self.controller_fence = ControllerFence(self.store, lambda: self.broker_epoch)
        self.authorizer = None
        self.log_manager = LogManager([str(tmp_path / "d")], MockClock(TS), {})
        self.log_manager.load("cluster", NODE)
        self.replica_fetchers = FakeFetchers()
        self.replica_manager = ReplicaManager(self.log_manager, NODE, lambda name: {},
                                              cache=self.cache, fetchers=self.replica_fetchers)
        self.woken = []
        self.replica_manager.add_append_listener(self.woken.append)
        self.controller = Absent("controller")

    @property
    def local(self):
        return self.cache, self.replica_manager, self.controller_fence

    def ctx(self, key, version, listener=None):
        parts = services(node_id=NODE, cache=self.cache, store=self.store,
                         controller_fence=self.controller_fence, controller=self.controller,
                         log_manager=self.log_manager, replica_manager=self.replica_manager)
        return context(parts, key, version, listener=listener)


@pytest.fixture
def broker(tmp_path):
    b = Broker(tmp_path)
    yield b
    b.log_manager.shutdown()
    b.store.close()


def lai(partitions, *, version=7, controller_epoch=1, broker_epoch=-1, topic="t", topic_id=TID,
        controller_id=1):
    """LeaderAndIsr for ``partitions``: [(index, leader, leader_epoch, replicas, isr)]."""
    def state(index, leader, epoch, replicas, isr):
        return LAI.LeaderAndIsrPartitionState(
            topic_name=topic, partition_index=index, controller_epoch=controller_epoch,
            leader=leader, leader_epoch=epoch, isr=isr, partition_epoch=0, replicas=replicas,
            adding_replicas=[], removing_replicas=[], is_new=True, leader_recovery_state=0)
    states = [state(*p) for p in partitions]
    if version < 2:
        return LAI(version=version, controller_id=controller_id,
                   controller_epoch=controller_epoch, ungrouped_partition_states=states,
                   live_leaders=[])
    return LAI(version=version, controller_id=controller_id, controller_epoch=controller_epoch,
               broker_epoch=broker_epoch, type=0, is_k_raft_controller=False,
               topic_states=[LAI.LeaderAndIsrTopicState(topic_name=topic, topic_id=topic_id,
                                                        partition_states=states)],
               live_leaders=[])


def um(partitions=(), *, version=8, controller_epoch=1, broker_epoch=-1, brokers=(1, 2),
       topic="t", topic_id=TID, controller_id=1):
    """UpdateMetadata: live ``brokers`` (each on INTERNAL and EXTERNAL) and ``partitions``:
    [(index, leader, leader_epoch, replicas, isr, offline)]."""
    def state(index, leader, epoch, replicas, isr, offline=()):
        return UM.UpdateMetadataPartitionState(
            topic_name=topic, partition_index=index, controller_epoch=controller_epoch,
            leader=leader, leader_epoch=epoch, isr=list(isr), zk_version=3,
            replicas=list(replicas), offline_replicas=list(offline))
    live = [UM.UpdateMetadataBroker(
        id=b, v0_host=f"h{b}", v0_port=9000 + b, rack=f"r{b}", endpoints=[
            UM.UpdateMetadataBroker.UpdateMetadataEndpoint(
                port=9000 + b, host=f"in{b}", listener="INTERNAL", security_protocol=0),
            UM.UpdateMetadataBroker.UpdateMetadataEndpoint(
                port=8000 + b, host=f"ex{b}", listener="EXTERNAL", security_protocol=1)])
        for b in brokers]
    states = [state(*p) for p in partitions]
    if version < 5:
        return UM(version=version, controller_id=controller_id,
                  controller_epoch=controller_epoch, ungrouped_partition_states=states,
                  live_brokers=live)
    return UM(version=version, controller_id=controller_id, controller_epoch=controller_epoch,
              broker_epoch=broker_epoch, is_k_raft_controller=False, type=0,
              topic_states=[UM.UpdateMetadataTopicState(
                  topic_name=topic, topic_id=topic_id, partition_states=states)] if states else [],
              live_brokers=live)


def sr(partitions, *, version=4, controller_epoch=1, broker_epoch=-1, topic="t", delete=True,
       controller_id=1):
    """StopReplica for ``partitions``: [(index, leader_epoch)]."""
    if version == 0:
        return SR(version=0, controller_id=controller_id, controller_epoch=controller_epoch,
                  delete_partitions=delete, ungrouped_partitions=[
                      SR.StopReplicaPartitionV0(topic_name=topic, partition_index=i)
                      for i, _ in partitions])
    if version < 3:
        return SR(version=version, controller_id=controller_id, controller_epoch=controller_epoch,
                  broker_epoch=broker_epoch, delete_partitions=delete,
                  topics=[SR.StopReplicaTopicV1(name=topic,
                                                partition_indexes=[i for i, _ in partitions])])
    return SR(version=version, controller_id=controller_id, controller_epoch=controller_epoch,
              broker_epoch=broker_epoch, is_k_raft_controller=False, topic_states=[
                  SR.StopReplicaTopicState(topic_name=topic, partition_states=[
                      SR.StopReplicaTopicState.StopReplicaPartitionState(
                          partition_index=i, leader_epoch=e, delete_partition=delete)
                      for i, e in partitions])])


def lai_errors(response):
    if response.version < 5:
        return {(p.topic_name, p.partition_index): p.error_code
                for p in response.partition_errors}
    return {(t.topic_id, p.partition_index): p.error_code
            for t in response.topics for p in t.partition_errors}


def roundtrip(response):
    """The response encodes and decodes at its version (what goes on the wire)."""
    cls = RESPONSES[response.API_KEY]
    return cls.decode(response.encode(), version=response.version)


# -- LeaderAndIsr -------------------------------------------------------------------------
def test_leader_and_isr_makes_this_broker_leader_with_the_topic_id(broker):
    response = leader_and_isr.apply(*broker.local, lai([(0, NODE, 0, [1, 2], [1, 2]),
                                                 (1, 2, 0, [2, 1], [2, 1])]))
    assert response.error_code == 0
    assert lai_errors(roundtrip(response)) == {(TID, 0): 0, (TID, 1): 0}
    rm = broker.replica_manager
    leader = rm.partitions[("t", 0)]
    assert leader.is_leader and leader.leader_epoch == 0
    assert leader.log.topic_id == topic_id_text(TID)
    assert rm.leader_partition("t", 0) is leader
    assert broker.controller_fence.epoch == 1
    # Broker 2 is not live in the cache: no fetcher, but the log exists (KAFKA-1647).
    assert ("t", 1) in rm.partitions and broker.replica_fetchers.added == {}
    with pytest.raises(Exception) as err:
        rm.leader_partition("t", 1)
    assert err.value.code == E.NOT_LEADER_OR_FOLLOWER


def test_follower_of_a_live_leader_fetches_from_it(broker):
    update_metadata.apply(*broker.local, um())
    leader_and_isr.apply(*broker.local, lai([(0, 2, 4, [2, 1], [2, 1])]))
    partition = broker.replica_manager.partitions[("t", 0)]
    assert not partition.is_leader and partition.leader_epoch == 4
    assert broker.replica_fetchers.added == {("t", 0): (2, 0)}
    # Becoming leader stops the fetcher.
    leader_and_isr.apply(*broker.local, lai([(0, NODE, 5, [2, 1], [1])]))
    assert broker.replica_fetchers.added == {} and ("t", 0) in broker.replica_fetchers.removed
    assert partition.is_leader and partition.leader_epoch == 5


def test_leader_epoch_fencing_per_partition(broker):
    leader_and_isr.apply(*broker.local, lai([(0, NODE, 3, [1], [1])]))
    same = leader_and_isr.apply(*broker.local, lai([(0, NODE, 3, [1], [1])]))
    older = leader_and_isr.apply(*broker.local, lai([(0, NODE, 2, [1], [1])]))
    newer = leader_and_isr.apply(*broker.local, lai([(0, NODE, 4, [1], [1])]))
    assert lai_errors(same) == {(TID, 0): E.STALE_CONTROLLER_EPOCH}
    assert lai_errors(older) == {(TID, 0): E.STALE_CONTROLLER_EPOCH}
    assert lai_errors(newer) == {(TID, 0): 0}
    assert same.error_code == older.error_code == 0
    assert broker.replica_manager.partitions[("t", 0)].leader_epoch == 4


def test_stale_controller_epoch_fences_the_whole_request(broker):
    leader_and_isr.apply(*broker.local, lai([(0, NODE, 0, [1], [1])], controller_epoch=5))
    response = leader_and_isr.apply(*broker.local, lai([(1, NODE, 0, [1], [1])], controller_epoch=4))
    assert response.error_code == E.STALE_CONTROLLER_EPOCH
    assert lai_errors(response) == {(TID, 1): E.STALE_CONTROLLER_EPOCH}
    assert ("t", 1) not in broker.replica_manager.partitions
    assert broker.controller_fence.epoch == 5


@pytest.mark.parametrize("epoch, code", [(99, E.STALE_BROKER_EPOCH), (-1, 0), (100, 0), (101, 0)])
def test_broker_epoch_fencing(broker, epoch, code):
    response = leader_and_isr.apply(*broker.local, lai([(0, NODE, 0, [1], [1])], broker_epoch=epoch))
    assert response.error_code == code
    assert lai_errors(response) == {(TID, 0): code}
    assert (("t", 0) in broker.replica_manager.partitions) == (code == 0)


def test_partition_not_assigned_here_and_inconsistent_topic_id(broker):
    response = leader_and_isr.apply(*broker.local, lai([(0, 2, 0, [2, 3], [2, 3])]))
    assert lai_errors(response) == {(TID, 0): E.UNKNOWN_TOPIC_OR_PARTITION}
    assert ("t", 0) not in broker.replica_manager.partitions
    leader_and_isr.apply(*broker.local, lai([(1, NODE, 0, [1], [1])]))
    other = uuid.UUID(int=0x999)
    response = leader_and_isr.apply(*broker.local, lai([(1, NODE, 1, [1], [1])], topic_id=other))
    assert lai_errors(response) == {(other, 1): E.INCONSISTENT_TOPIC_ID}
    assert broker.replica_manager.partitions[("t", 1)].leader_epoch == 0


@pytest.mark.parametrize("version", [0, 1, 4])
def test_old_versions_answer_by_topic_name(broker, version):
    response = leader_and_isr.apply(*broker.local, lai([(0, NODE, 0, [1], [1])], version=version))
    assert lai_errors(roundtrip(response)) == {("t", 0): 0}
    assert broker.replica_manager.partitions[("t", 0)].log.topic_id is None


def test_leader_and_isr_tells_the_cache_listeners(broker):
    seen = []
    broker.cache.add_listener(lambda name, topic: seen.append((name, topic is not None)))
    leader_and_isr.apply(*broker.local, lai([(0, NODE, 0, [1], [1])]))
    assert seen == []          # unknown to the cache until UpdateMetadata
    update_metadata.apply(*broker.local, um([(0, NODE, 0, [1], [1])]))
    assert seen == [("t", True)]
    leader_and_isr.apply(*broker.local, lai([(0, 2, 1, [1, 2], [1, 2])]))
    assert seen == [("t", True), ("t", True)]
    assert not broker.replica_manager.is_leader("t", 0)


# -- UpdateMetadata -------------------------------------------------------------------------
def test_update_metadata_fills_the_cache(broker):
    updates = []
    broker.cache.add_update_listener(lambda: updates.append(1))
    broker.topic_overrides["t"] = {"cleanup.policy": "compact"}
    response = update_metadata.apply(*broker.local, um([(0, 1, 2, [1, 2], [1], [2]),
                                                 (1, 2, 0, [2, 1], [2, 1])], controller_id=2))
    assert roundtrip(response).error_code == 0 and updates == [1]
    cache = broker.cache
    assert cache.controller_id == 2 and cache.live_broker_ids() == [1, 2]
    assert cache.brokers[2].host == "in2" and cache.brokers[2].rack == "r2"
    assert cache.brokers_for("EXTERNAL")[1].port == 8001
    topic = cache.topic("t")
    assert topic.topic_id == TID and cache.topic_name(TID) == "t"
    assert topic.configs == {"cleanup.policy": "compact"}
    p0 = cache.partition("t", 0)
    assert (p0.leader, p0.leader_epoch, p0.isr, p0.offline_replicas, p0.zk_version) == (
        1, 2, [1], [2], 3)


def test_update_metadata_deletes_partitions_led_by_minus_two(broker):
    seen = []
    broker.cache.add_listener(lambda name, topic: seen.append((name, topic)))
    update_metadata.apply(*broker.local, um([(0, 1, 0, [1], [1]), (1, 1, 0, [1], [1])]))
    update_metadata.apply(*broker.local, um([(0, -2, 0, [1], [1])]))
    assert sorted(broker.cache.topic("t").partitions) == [1]
    update_metadata.apply(*broker.local, um([(1, -2, 0, [1], [1])]))
    assert broker.cache.topic("t") is None and broker.cache.topic_name(TID) is None
    assert seen[-1] == ("t", None)


def test_update_metadata_replaces_the_live_brokers(broker):
    update_metadata.apply(*broker.local, um(brokers=(1, 2, 3)))
    update_metadata.apply(*broker.local, um(brokers=(1, 3)))
    assert broker.cache.live_broker_ids() == [1, 3]
    assert sorted(broker.cache.brokers_for("EXTERNAL")) == [1, 3]


def test_update_metadata_fencing(broker):
    update_metadata.apply(*broker.local, um(controller_epoch=3))
    assert update_metadata.apply(*broker.local, um(controller_epoch=2, controller_id=7)).error_code == \
        E.STALE_CONTROLLER_EPOCH
    assert update_metadata.apply(*broker.local, um(controller_epoch=3, broker_epoch=5)).error_code == \
        E.STALE_BROKER_EPOCH
    assert broker.cache.controller_id == 1


@pytest.mark.parametrize("version", range(0, 9))
def test_update_metadata_every_version(broker, version):
    response = update_metadata.apply(*broker.local, um([(0, 1, 0, [1, 2], [1, 2])], version=version))
    assert roundtrip(response).error_code == 0
    cache = broker.cache
    assert cache.partition("t", 0).isr == [1, 2]
    assert (cache.topic("t").topic_id == TID) == (version >= 7)
    if version == 0:       # host and port only: the PLAINTEXT listener
        assert cache.brokers[2].host == "h2"
    elif version < 3:      # no listener names: named after the security protocol
        assert cache.brokers_for("PLAINTEXT")[2].host == "in2"
    else:
        assert cache.brokers[2].host == "in2"


# -- StopReplica ----------------------------------------------------------------------------
def test_stop_replica_deletes_the_log(broker, tmp_path):
    leader_and_isr.apply(*broker.local, lai([(0, NODE, 3, [1], [1]), (1, NODE, 3, [1], [1])]))
    log_dir = broker.replica_manager.partitions[("t", 0)].log.dir
    response = stop_replica.apply(*broker.local, sr([(0, 3), (1, 2), (7, 0)]))
    errors = {(p.topic_name, p.partition_index): p.error_code
              for p in roundtrip(response).partition_errors}
    assert response.error_code == 0
    assert errors == {("t", 0): 0, ("t", 1): E.FENCED_LEADER_EPOCH, ("t", 7): 0}
    assert ("t", 0) not in broker.replica_manager.partitions
    assert broker.log_manager.get_log("t", 0) is None
    assert not (tmp_path / "d" / "t-0").exists() and log_dir.endswith("t-0")   # renamed -delete
    assert ("t", 1) in broker.replica_manager.partitions
    # The epoch used during deletion (-2) passes any check.
    assert stop_replica.apply(*broker.local, sr([(1, -2)])).partition_errors[0].error_code == 0
    assert ("t", 1) not in broker.replica_manager.partitions
    assert ("t", 0) in broker.woken


def test_stop_replica_without_delete_stops_fetching_only(broker):
    update_metadata.apply(*broker.local, um())
    leader_and_isr.apply(*broker.local, lai([(0, 2, 1, [2, 1], [2, 1])]))
    assert ("t", 0) in broker.replica_fetchers.added
    stop_replica.apply(*broker.local, sr([(0, 1)], delete=False))
    assert broker.replica_fetchers.added == {}
    assert ("t", 0) in broker.replica_manager.partitions


@pytest.mark.parametrize("version", [0, 1, 2])
def test_stop_replica_old_versions(broker, version):
    leader_and_isr.apply(*broker.local, lai([(0, NODE, 3, [1], [1])]))
    response = roundtrip(stop_replica.apply(*broker.local, sr([(0, None)], version=version)))
    assert [(p.topic_name, p.partition_index, p.error_code) for p in response.partition_errors] \
        == [("t", 0, 0)]
    assert ("t", 0) not in broker.replica_manager.partitions


def test_stop_replica_fencing(broker):
    update_metadata.apply(*broker.local, um(controller_epoch=4))
    stale = stop_replica.apply(*broker.local, sr([(0, 1)], controller_epoch=3))
    assert (stale.error_code, stale.partition_errors) == (E.STALE_CONTROLLER_EPOCH, [])
    old = stop_replica.apply(*broker.local, sr([(0, 1)], controller_epoch=4, broker_epoch=1))
    assert (old.error_code, old.partition_errors) == (E.STALE_BROKER_EPOCH, [])


def test_unknown_partition_answers_unknown_topic_or_partition(broker):
    with pytest.raises(Exception) as err:
        broker.replica_manager.leader_partition("nope", 0)
    assert err.value.code == E.UNKNOWN_TOPIC_OR_PARTITION


# -- From the network: a new controller epoch needs the store's word ----------------------
def _elect(store, controller_id: int, epoch: int) -> None:
    """What winning an election leaves in the store: /controller and /controller_epoch."""
    for path, data in ((paths.CONTROLLER, paths.encode_controller(controller_id, TS)),
                       (paths.CONTROLLER_EPOCH, paths.encode_controller_epoch(epoch))):
        if store.exists(path):
            store.set(path, data)
        else:
            store.create(path, data, makepath=True)


def _from_network(broker, module, request):
    return asyncio.run(module.handle(broker.ctx(module.API_KEY, request.version), request))


def test_a_new_controller_epoch_is_taken_once_the_store_confirms_it(broker):
    update_metadata.apply(*broker.local, um(controller_epoch=1))      # in-process: no store read
    assert (broker.controller_fence.epoch, broker.controller_fence.controller_id) == (1, 1)
    _elect(broker.store, 2, 2)
    assert _from_network(broker, update_metadata,
                         um(controller_epoch=2, controller_id=2, brokers=(1, 2, 3))
                         ).error_code == 0
    assert (broker.controller_fence.epoch, broker.controller_fence.controller_id) == (2, 2)
    assert (broker.cache.controller_id, broker.cache.live_broker_ids()) == (2, [1, 2, 3])
    refused = [
        um(controller_epoch=1, controller_id=1),    # the previous controller
        um(controller_epoch=2, controller_id=5),    # the current epoch, another controller
        um(controller_epoch=3, controller_id=2),    # an epoch the store does not hold
        um(controller_epoch=1064960, controller_id=-1, brokers=()),
        um(version=0, controller_epoch=3, controller_id=2, brokers=())]
    for request in refused:
        assert _from_network(broker, update_metadata, request).error_code == \
            E.STALE_CONTROLLER_EPOCH, request
    assert (broker.controller_fence.epoch, broker.controller_fence.controller_id) == (2, 2)
    assert (broker.cache.controller_id, broker.cache.live_broker_ids()) == (2, [1, 2, 3])
    # The confirmed controller goes on being obeyed.
    assert _from_network(broker, leader_and_isr, lai([(0, NODE, 0, [1], [1])],
                                                     controller_epoch=2, controller_id=2)
                         ).error_code == 0
    assert ("t", 0) in broker.replica_manager.partitions


def test_forged_requests_change_no_partition(broker):
    leader_and_isr.apply(*broker.local, lai([(0, NODE, 3, [1], [1])]))
    _elect(broker.store, 1, 1)
    forged = dict(controller_epoch=1064960, controller_id=-1)
    response = _from_network(broker, leader_and_isr, lai([(0, 2, 9, [2], [2])], **forged))
    assert lai_errors(response) == {(TID, 0): E.STALE_CONTROLLER_EPOCH}
    for version in (0, 4):
        response = _from_network(broker, stop_replica, sr([(0, -2)], version=version, **forged))
        assert (response.error_code, response.partition_errors) == (
            E.STALE_CONTROLLER_EPOCH, [])
    partition = broker.replica_manager.partitions[("t", 0)]
    assert (partition.is_leader, partition.leader_epoch) == (True, 3)
    assert broker.controller_fence.epoch == 1
    assert leader_and_isr.apply(*broker.local, lai([(1, NODE, 0, [1], [1])])).error_code == 0


def test_a_store_that_cannot_answer_closes_the_connection(broker):
    """The request is neither refused nor taken: its sender resends it after a backoff."""
    update_metadata.apply(*broker.local, um(controller_epoch=1))
    broker.store.close()
    with pytest.raises(CloseConnection):
        _from_network(broker, update_metadata, um(controller_epoch=2, controller_id=2))
    assert broker.controller_fence.epoch == 1
    # The known controller needs no store read.
    assert _from_network(broker, update_metadata, um(controller_epoch=1)).error_code == 0


# -- ControlledShutdown ---------------------------------------------------------------------
class _Controller:
    def __init__(self, active):
        self.is_active, self.calls = active, []

    async def controlled_shutdown(self, broker_id, broker_epoch):
        self.calls.append((broker_id, broker_epoch))
        return 0, [("t", 0), ("u", 2)]


@pytest.mark.parametrize("version", range(4))
def test_controlled_shutdown(broker, version):
    """The request must name a registered broker with its registration's czxid: v0-1
    carry no epoch and are refused (Kafka 3.9 brokers send v3)."""
    broker.store.create(paths.broker_path(2), b"{}", makepath=True)
    epoch = broker.store.get(paths.broker_path(2))[1].czxid
    request = REQUESTS[7](version=version, broker_id=2, broker_epoch=epoch)
    broker.controller = _Controller(active=False)
    response = asyncio.run(controlled_shutdown.handle(broker.ctx(7, version), request))
    assert (response.error_code, response.remaining_partitions) == (E.STALE_CONTROLLER_EPOCH, [])
    broker.controller = _Controller(active=True)
    response = roundtrip(asyncio.run(controlled_shutdown.handle(broker.ctx(7, version), request)))
    if version < 2:
        assert (response.error_code, response.remaining_partitions) == (
            E.STALE_BROKER_EPOCH, [])
        assert broker.controller.calls == []
        return
    assert response.error_code == 0
    assert [(p.topic_name, p.partition_index) for p in response.remaining_partitions] == [
        ("t", 0), ("u", 2)]
    assert broker.controller.calls == [(2, epoch)]


@pytest.mark.parametrize("broker_id, delta, code", [
    (2, 1, E.STALE_BROKER_EPOCH), (2, -1, E.STALE_BROKER_EPOCH), (3, 0, E.BROKER_NOT_AVAILABLE)])
def test_controlled_shutdown_refused_without_the_registration(broker, broker_id, delta, code):
    broker.store.create(paths.broker_path(2), b"{}", makepath=True)
    epoch = broker.store.get(paths.broker_path(2))[1].czxid + delta
    broker.controller = _Controller(active=True)
    request = REQUESTS[7](version=3, broker_id=broker_id, broker_epoch=epoch)
    response = asyncio.run(controlled_shutdown.handle(broker.ctx(7, 3), request))
    assert (response.error_code, response.remaining_partitions) == (code, [])
    assert broker.controller.calls == []


def test_partitions_no_controller_sends_are_refused_without_a_log(broker):
    response = leader_and_isr.apply(*broker.local, lai([(0, NODE, 0, [1], [1])], topic="bad/name"))
    assert lai_errors(response) == {(TID, 0): E.UNKNOWN_TOPIC_OR_PARTITION}
    response = leader_and_isr.apply(*broker.local, lai([(-1, NODE, 0, [1], [1])]))
    assert lai_errors(response) == {(TID, -1): E.UNKNOWN_TOPIC_OR_PARTITION}
    assert broker.replica_manager.partitions == {} and broker.log_manager.logs == {}


# -- Metadata from the cache ------------------------------------------------------------------
def _metadata(broker, version, listener="EXTERNAL"):
    request = REQUESTS[3](version=version, topics=None, allow_auto_topic_creation=False,
                          include_cluster_authorized_operations=False,
                          include_topic_authorized_operations=False)
    response = roundtrip(metadata.handle(broker.ctx(3, version, listener), request))
    return response, {p.partition_index: p for p in response.topics[0].partitions}


def test_metadata_answers_as_kafkas_zk_metadata_cache(broker):
    # Broker 3 is not live; partition 1's leader is dead, partition 2 lists broker 3 offline.
    update_metadata.apply(*broker.local, um([(0, 2, 1, [2, 1], [2, 1]), (1, 3, 1, [3, 1], [3]),
                                      (2, 1, 1, [1, 3], [1, 3], [3])], controller_id=2))
    response, parts = _metadata(broker, 12)
    assert response.controller_id == 2
    assert [(b.node_id, b.host, b.port) for b in response.brokers] == [
        (1, "ex1", 8001), (2, "ex2", 8002)]
    assert (parts[0].error_code, parts[0].leader_id) == (0, 2)
    assert (parts[1].error_code, parts[1].leader_id, parts[1].isr_nodes) == (
        E.LEADER_NOT_AVAILABLE, -1, [3])
    assert (parts[2].error_code, parts[2].replica_nodes, parts[2].isr_nodes,
            parts[2].offline_replicas) == (0, [1, 3], [1, 3], [3])
    # v0 lists only reachable replicas and says so.
    _, parts = _metadata(broker, 0)
    assert (parts[2].error_code, parts[2].replica_nodes, parts[2].isr_nodes) == (
        E.REPLICA_NOT_AVAILABLE, [1], [1])


def test_metadata_leader_without_the_clients_listener(broker):
    update_metadata.apply(*broker.local, um([(0, 2, 1, [2, 1], [2, 1])]))
    # Broker 2 loses its EXTERNAL listener.
    request = um([(0, 2, 1, [2, 1], [2, 1])])
    request.live_brokers[1].endpoints = request.live_brokers[1].endpoints[:1]
    update_metadata.apply(*broker.local, request)
    assert _metadata(broker, 6)[1][0].error_code == E.LISTENER_NOT_FOUND
    assert _metadata(broker, 5)[1][0].error_code == E.LEADER_NOT_AVAILABLE
    assert _metadata(broker, 6, listener="INTERNAL")[1][0].error_code == 0


def test_an_existing_replica_missing_while_a_dir_is_offline_is_a_storage_error(tmp_path):
    """Kafka's getOrCreateLog(isNew=false): a replica the controller says existed before is
    not created afresh in a live dir while another dir is offline (it may be there)."""
    b = Broker(tmp_path)
    b.log_manager.shutdown()
    b.log_manager = LogManager([str(tmp_path / "a"), str(tmp_path / "b")], MockClock(TS), {})
    b.log_manager.load("cluster", NODE)
    b.replica_manager = ReplicaManager(b.log_manager, NODE, lambda name: {}, cache=b.cache,
                                       fetchers=b.replica_fetchers)
    try:
        b.log_manager.fail_dir(str(tmp_path / "b"), OSError(5, "I/O error"))
        request = lai([(0, NODE, 0, [1], [1]), (1, NODE, 0, [1], [1])])
        request.topic_states[0].partition_states[0].is_new = False
        errors = lai_errors(leader_and_isr.apply(*b.local, request))
        assert errors == {(TID, 0): E.KAFKA_STORAGE_ERROR, (TID, 1): 0}
        assert b.replica_manager.partitions[("t", 0)].log.offline
        assert not b.replica_manager.partitions[("t", 1)].log.offline
        again = lai_errors(leader_and_isr.apply(*b.local, lai([(0, NODE, 1, [1], [1])])))
        assert again == {(TID, 0): E.KAFKA_STORAGE_ERROR}
    finally:
        b.log_manager.shutdown()
