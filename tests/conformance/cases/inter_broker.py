"""Controller-to-broker requests: LeaderAndIsr (4), StopReplica (5), UpdateMetadata (6), and
ControlledShutdown (7) and AlterPartition (56), broker to controller.

Only answers that change nothing are compared: each broker is its cluster's controller
(epoch >= 1, broker epoch = the czxid of its registration), so requests of an older
controller epoch (0) or of an older broker epoch (1) are fenced, and a controlled shutdown
of a broker that does not exist is refused.  ControlledShutdown v0 has a request header
without client id, which the conformance client does not write: no v0 case.
"""
from __future__ import annotations

import uuid

from tests.conformance.cases import for_api
from tests.conformance.cases.common import case

_TOPIC = "conf-inter-broker"
_ZERO = uuid.UUID(int=0)
_STALE_CONTROLLER = {"controller_id": 7, "controller_epoch": 0, "broker_epoch": -1}
_STALE_BROKER = {"controller_id": 7, "controller_epoch": 0, "broker_epoch": 1}


def _lai_partition(index: int) -> dict:
    return {"topic_name": _TOPIC, "partition_index": index, "controller_epoch": 0,
            "leader": 7, "leader_epoch": 5, "isr": [7], "partition_epoch": 0,
            "replicas": [7, 1], "adding_replicas": [], "removing_replicas": [],
            "is_new": False, "leader_recovery_state": 0}


def _lai(v: int, fencing: dict) -> dict:
    partitions = [_lai_partition(0), _lai_partition(1)]
    return dict(fencing, is_k_raft_controller=False, type=0,
                ungrouped_partition_states=partitions,
                topic_states=[{"topic_name": _TOPIC, "topic_id": _ZERO,
                               "partition_states": partitions}],
                live_leaders=[{"broker_id": 7, "host_name": "localhost", "port": 1}])


@for_api(4)
def leader_and_isr(v: int):
    yield case("stale-controller-epoch", _lai(v, _STALE_CONTROLLER))
    if v >= 2:
        yield case("stale-broker-epoch", _lai(v, _STALE_BROKER))


def _sr(fencing: dict) -> dict:
    return dict(fencing, is_k_raft_controller=False, delete_partitions=True,
                ungrouped_partitions=[{"topic_name": _TOPIC, "partition_index": 0}],
                topics=[{"name": _TOPIC, "partition_indexes": [0, 1]}],
                topic_states=[{"topic_name": _TOPIC, "partition_states": [
                    {"partition_index": 0, "leader_epoch": 3, "delete_partition": True}]}])


@for_api(5)
def stop_replica(v: int):
    yield case("stale-controller-epoch", _sr(_STALE_CONTROLLER))
    if v >= 1:
        yield case("stale-broker-epoch", _sr(_STALE_BROKER))


def _um(fencing: dict) -> dict:
    partition = {"topic_name": _TOPIC, "partition_index": 0, "controller_epoch": 0,
                 "leader": 7, "leader_epoch": 1, "isr": [7], "zk_version": 0,
                 "replicas": [7], "offline_replicas": []}
    broker = {"id": 7, "v0_host": "localhost", "v0_port": 1, "rack": None, "endpoints": [
        {"port": 1, "host": "localhost", "listener": "PLAINTEXT", "security_protocol": 0}]}
    return dict(fencing, is_k_raft_controller=False, type=0,
                ungrouped_partition_states=[partition],
                topic_states=[{"topic_name": _TOPIC, "topic_id": _ZERO,
                               "partition_states": [partition]}],
                live_brokers=[broker])


@for_api(6)
def update_metadata(v: int):
    yield case("stale-controller-epoch", _um(_STALE_CONTROLLER))
    if v >= 5:
        yield case("stale-broker-epoch", _um(_STALE_BROKER))


@for_api(7)
def controlled_shutdown(v: int):
    if v == 0:
        return
    yield case("unknown-broker", {"broker_id": 999, "broker_epoch": -1})
    if v >= 2:
        # Checked before anything changes: the broker keeps running.
        yield case("stale-broker-epoch", {"broker_id": 1, "broker_epoch": 1})


@for_api(56)
def alter_partition(v: int):
    # Checked before anything changes: an unknown broker, a stale broker epoch.
    partition = {"partition_index": 0, "leader_epoch": 0, "new_isr": [999],
                 "new_isr_with_epochs": [{"broker_id": 999, "broker_epoch": -1}],
                 "leader_recovery_state": 0, "partition_epoch": 0}
    topics = [{"topic_name": _TOPIC, "topic_id": _ZERO, "partitions": [partition]}]
    yield case("unknown-broker", {"broker_id": 999, "broker_epoch": -1, "topics": topics})
    yield case("stale-broker-epoch", {"broker_id": 1, "broker_epoch": 1, "topics": topics})
