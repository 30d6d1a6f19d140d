"""The controller's requests over the wire to a real broker: LeaderAndIsr, StopReplica,
UpdateMetadata (fencing, hosting a replica, deleting it) and ControlledShutdown; forged ones
(an epoch or controller the metadata store does not confirm, a shutdown for a broker epoch
that is not the registration's) are refused and leave the broker obeying its controller."""
from __future__ import annotations

import re
import socket
import struct
import uuid

import pytest

from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.protocol.inter_broker import (
    LeaderAndIsrRequest as LAI, StopReplicaRequest as SR, UpdateMetadataRequest as UM)
from kafkapy.protocol.messages import REQUESTS, RESPONSES
from kafkapy.records.record import build_batch
from tests.support.broker_process import BrokerProcess
from tests.support.request_fields import fields
from tests.support.wire import WireClient, recv_frame

CreateTopics, Produce = REQUESTS[19], REQUESTS[0]
GHOST = "ghost"
GHOST_ID = uuid.UUID(int=0xABCDEF)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with BrokerProcess(tmp_path_factory.mktemp("ctrl-req")).start() as b:
        yield b


@pytest.fixture
def client(broker):
    c = WireClient(broker.bootstrap)
    yield c
    c.close()


def _lai(controller_epoch: int, broker_epoch: int = -1, leader_epoch: int = 0, node: int = 0):
    state = LAI.LeaderAndIsrPartitionState(
        partition_index=0, controller_epoch=controller_epoch, leader=node,
        leader_epoch=leader_epoch, isr=[node], partition_epoch=0, replicas=[node],
        adding_replicas=[], removing_replicas=[], is_new=True, leader_recovery_state=0)
    return dict(controller_id=node, is_k_raft_controller=False, controller_epoch=controller_epoch,
                broker_epoch=broker_epoch, type=0, live_leaders=[], topic_states=[
                    LAI.LeaderAndIsrTopicState(topic_name=GHOST, topic_id=GHOST_ID,
                                               partition_states=[state])])


def _errors(response):
    return [(t.topic_id, p.partition_index, p.error_code)
            for t in response.topics for p in t.partition_errors]


def _metadata(client):
    return client.request(3, 12, topics=None, allow_auto_topic_creation=False,
                          include_topic_authorized_operations=False)


def test_api_versions_advertise_the_controller_requests(client):
    keys = {k.api_key: (k.min_version, k.max_version)
            for k in client.request(18, 3, client_software_name="t",
                                    client_software_version="1").api_keys}
    assert (keys[4], keys[5], keys[6], keys[7]) == ((0, 7), (0, 4), (0, 8), (0, 3))


def test_stale_requests_are_fenced(client):
    before = _metadata(client)
    stale = client.request(4, 7, **_lai(controller_epoch=0))
    assert stale.error_code == E.STALE_CONTROLLER_EPOCH
    assert _errors(stale) == [(GHOST_ID, 0, E.STALE_CONTROLLER_EPOCH)]
    old_broker = client.request(4, 7, **_lai(controller_epoch=1, broker_epoch=1))
    assert old_broker.error_code == E.STALE_BROKER_EPOCH
    um = client.request(6, 8, controller_id=5, is_k_raft_controller=False, controller_epoch=0,
                        broker_epoch=-1, topic_states=[], live_brokers=[])
    assert um.error_code == E.STALE_CONTROLLER_EPOCH
    sr = client.request(5, 4, controller_id=5, is_k_raft_controller=False, controller_epoch=0,
                        broker_epoch=-1, topic_states=[])
    assert (sr.error_code, sr.partition_errors) == (E.STALE_CONTROLLER_EPOCH, [])
    after = _metadata(client)
    assert (after.controller_id, after.brokers) == (before.controller_id, before.brokers)
    assert after.controller_id == 0


def test_hosting_and_deleting_a_replica(broker, client):
    """A LeaderAndIsr of the current controller (epoch 1 on a fresh broker) makes the broker
    host the replica (its log exists) while the cache, which only UpdateMetadata changes, does
    not list the topic; StopReplica with delete removes the log."""
    response = client.request(4, 7, **_lai(controller_epoch=1))
    assert (response.error_code, _errors(response)) == (0, [(GHOST_ID, 0, 0)])
    assert (broker.log_dir / f"{GHOST}-0").is_dir()
    assert GHOST not in [t.name for t in _metadata(client).topics]
    again = client.request(4, 7, **_lai(controller_epoch=1))
    assert _errors(again) == [(GHOST_ID, 0, E.STALE_CONTROLLER_EPOCH)]    # same leader epoch
    stop = client.request(5, 4, controller_id=0, is_k_raft_controller=False, controller_epoch=1,
                          broker_epoch=-1, topic_states=[SR.StopReplicaTopicState(
                              topic_name=GHOST, partition_states=[
                                  SR.StopReplicaTopicState.StopReplicaPartitionState(
                                      partition_index=0, leader_epoch=0,
                                      delete_partition=True)])])
    assert stop.error_code == 0
    assert [(p.topic_name, p.partition_index, p.error_code) for p in stop.partition_errors] == [
        (GHOST, 0, 0)]
    assert not (broker.log_dir / f"{GHOST}-0").exists()


def test_controlled_shutdown_of_an_unknown_broker(client):
    response = client.request(7, 3, broker_id=999, broker_epoch=-1)
    assert (response.error_code, response.remaining_partitions) == (E.BROKER_NOT_AVAILABLE, [])


def test_controlled_shutdown_v0_has_no_client_id_in_its_header(broker):
    """Kafka's request header v0 (api key, version, correlation id) is ControlledShutdown
    v0's; the body follows at once."""
    host, port = broker.bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        body = struct.pack(">hhii", 7, 0, 42, 999)
        sock.sendall(struct.pack(">i", len(body)) + body)
        response = RESPONSES[7].decode(recv_frame(sock), version=0, header=True)
    assert response.header.correlation_id == 42
    assert response.error_code == E.BROKER_NOT_AVAILABLE


# -- forged controller requests -------------------------------------------------------------
# Anyone on the listener can send the controller's APIs.  The broker is its cluster's only
# broker and controller (node 0, /controller_epoch 1, /brokers/ids/0 with some czxid): a
# request the store does not confirm is refused without changing anything, and the broker
# goes on obeying its controller (a topic created afterwards gets a leader and takes records).
FORGED_EPOCH = 1064960      # what a garbled StopReplica from the fuzzer carried
REFUSED = "not confirmed by the metadata store"


def _forged(api_key: int, controller_id: int, epoch: int) -> dict:
    """The request's fields for every version (each version encodes the ones it has)."""
    common = dict(controller_id=controller_id, is_k_raft_controller=False,
                  controller_epoch=epoch, broker_epoch=-1)
    if api_key == 4:
        state = dict(topic_name="victim", partition_index=0, controller_epoch=epoch,
                     leader=-1, leader_epoch=99, isr=[], partition_epoch=0, replicas=[0],
                     adding_replicas=[], removing_replicas=[], is_new=False,
                     leader_recovery_state=0)
        return dict(common, type=0, live_leaders=[], ungrouped_partition_states=[state],
                    topic_states=[dict(topic_name="victim", topic_id=uuid.UUID(int=0),
                                       partition_states=[state])])
    if api_key == 5:
        return dict(common, delete_partitions=True,
                    ungrouped_partitions=[dict(topic_name="victim", partition_index=0)],
                    topics=[dict(name="victim", partition_indexes=[0])],
                    topic_states=[dict(topic_name="victim", partition_states=[
                        dict(partition_index=0, leader_epoch=-2, delete_partition=True)])])
    return dict(common, type=0, ungrouped_partition_states=[], topic_states=[],
                live_brokers=[])


def _send_forged(client, api_key: int, version: int, controller_id: int, epoch: int):
    return client.request(api_key, version, **fields(api_key, **_forged(
        api_key, controller_id, epoch)))


def _still_obeys_its_controller(client, topic: str) -> None:
    """CreateTopics (the controller's LeaderAndIsr and UpdateMetadata to this broker) and an
    acks=-1 Produce to the new topic succeed; Metadata names broker 0 as controller."""
    created = client.request(19, 5, timeout_ms=5000, validate_only=False, topics=[
        CreateTopics.CreatableTopic(name=topic, num_partitions=1, replication_factor=1,
                                    assignments=[], configs=[])])
    assert created.topics[0].error_code == 0, created
    batch = build_batch([(b"k", b"v", [], 1_800_000_000_000)])
    produced = client.request(0, 9, transactional_id=None, acks=-1, timeout_ms=5000,
                              topic_data=[Produce.TopicProduceData(name=topic, partition_data=[
                                  Produce.TopicProduceData.PartitionProduceData(
                                      index=0, records=batch)])])
    partition = produced.responses[0].partition_responses[0]
    assert (partition.error_code, partition.base_offset) == (0, 0), produced
    metadata = _metadata(client)
    assert metadata.controller_id == 0
    assert [b.node_id for b in metadata.brokers] == [0]


@pytest.mark.parametrize("api_key, version, controller_id, epoch", [
    (5, 0, -1, FORGED_EPOCH),       # no broker epoch in the request at all
    (5, 4, -1, FORGED_EPOCH),
    (4, 0, -1, FORGED_EPOCH),
    (4, 7, -1, FORGED_EPOCH),
    (6, 0, -1, FORGED_EPOCH),
    (6, 8, -1, FORGED_EPOCH),
    (4, 7, 0, 2),                   # the controller's id, an epoch the store does not hold
    (5, 2, 0, 2),
    (6, 5, 0, 2),
    (6, 8, 7, 1),                   # the current epoch from a broker that is not controller
    (4, 7, 7, 1),
])
def test_a_forged_controller_request_is_refused(client, api_key, version, controller_id,
                                                epoch):
    response = _send_forged(client, api_key, version, controller_id, epoch)
    assert response.error_code == E.STALE_CONTROLLER_EPOCH
    if api_key == 4:
        codes = [p.error_code for p in response.partition_errors] if version < 5 else [
            p.error_code for t in response.topics for p in t.partition_errors]
        assert codes == [E.STALE_CONTROLLER_EPOCH]
    elif api_key == 5:
        assert response.partition_errors == []
    _still_obeys_its_controller(client, f"after-{api_key}-{version}-{controller_id}-{epoch}")


@pytest.mark.parametrize("version, broker_id, broker_epoch, code", [
    (3, 0, 10**12, E.STALE_BROKER_EPOCH),   # not the epoch /brokers/ids/0 was created with
    (3, 0, -1, E.STALE_BROKER_EPOCH),       # "unknown" is no epoch either
    (2, 0, 0, E.STALE_BROKER_EPOCH),
    (1, 0, None, E.STALE_BROKER_EPOCH),     # v0-1 carry none: Kafka 3.9 brokers send v3
    (3, 999, 5, E.BROKER_NOT_AVAILABLE),    # no such broker registered
])
def test_a_forged_controlled_shutdown_is_refused(client, version, broker_id, broker_epoch,
                                                 code):
    values = {"broker_id": broker_id}
    if broker_epoch is not None:
        values["broker_epoch"] = broker_epoch
    response = client.request(7, version, **values)
    assert (response.error_code, response.remaining_partitions) == (code, [])
    # Broker 0 is not taken for shutting down: a new partition still gets it as leader.
    _still_obeys_its_controller(client, f"after-shutdown-{version}-{broker_id}-{broker_epoch}")


def test_a_refusal_is_logged_once_per_connection(broker):
    clients = [WireClient(broker.bootstrap) for _ in range(2)]
    try:
        for c in clients:
            for _ in range(3):
                assert _send_forged(c, 6, 8, -1, FORGED_EPOCH).error_code == \
                    E.STALE_CONTROLLER_EPOCH
        peers = ["%s:%d" % c.sock.getsockname()[:2] for c in clients]
    finally:
        for c in clients:
            c.close()
    # Written before the answer: the answers above mean the lines are in the output.
    lines = [line for line in broker.output().splitlines() if REFUSED in line]
    assert [sum(bool(re.search(rf"peer={re.escape(peer)}(\s|$)", line)) for line in lines)
            for peer in peers] == [1, 1], lines
    assert "Traceback" not in broker.output()
