"""The controller's requests over the wire to a real broker: LeaderAndIsr, StopReplica,
UpdateMetadata (fencing, hosting a replica, deleting it) and ControlledShutdown."""
from __future__ import annotations

import socket
import struct
import uuid

import pytest

from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.protocol.inter_broker import (
    LeaderAndIsrRequest as LAI, StopReplicaRequest as SR, UpdateMetadataRequest as UM)
from kafkapy.protocol.messages import RESPONSES
from tests.broker_process import BrokerProcess
from tests.integration.wire import WireClient, recv_frame

GHOST = "ghost"
GHOST_ID = uuid.UUID(int=0xABCDEF)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = BrokerProcess(tmp_path_factory.mktemp("ctrl-req")).start()
    yield b
    b.stop()


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
