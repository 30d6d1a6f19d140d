"""LeaderAndIsr (key 4): the controller tells this broker which partitions it leads or follows.

Versions 0-7 (Kafka 3.9, ZooKeeper mode).  ``handle`` serves the network, ``apply``
the controller's in-process delivery to itself; both pass the request through the
broker's ``ControllerFence`` (``kafkapy.metadata.controller_fence``), then the same
synchronous core.  Fencing as Kafka's KafkaApis.handleLeaderAndIsrRequest and
ReplicaManager.becomeLeaderOrFollower:

- the fence's error (a broker epoch older than ours: STALE_BROKER_EPOCH; a controller
  epoch older than the known one, or one the metadata store does not confirm:
  STALE_CONTROLLER_EPOCH) for the request and every partition;
- per partition: offline log dir -> KAFKA_STORAGE_ERROR; topic id differing from
  the log's -> INCONSISTENT_TOPIC_ID; a newer leader epoch is applied (this broker
  not among the replicas -> UNKNOWN_TOPIC_OR_PARTITION); an older one ->
  STALE_CONTROLLER_EPOCH; the same one -> STALE_CONTROLLER_EPOCH unless it only
  brings the topic id.
v0-4 answer errors per (topic name, partition); v5+ per topic id.
After applying, the cache's topic listeners run for the topics named (the group
and transaction coordinators follow what this broker now leads).
"""
from __future__ import annotations

import uuid

from kafkapy.security import authz
from kafkapy.metadata.cache import ZERO_UUID, PartitionState
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.inter_broker import LeaderAndIsrResponse
from kafkapy.replication.replica_manager import PartitionChange

API_KEY = 4
MIN_VERSION = 0
MAX_VERSION = 7

_Topic = LeaderAndIsrResponse.LeaderAndIsrTopicError
_Partition = LeaderAndIsrResponse.LeaderAndIsrPartitionError


async def handle(ctx, request):
    if not authz.cluster(ctx, authz.CLUSTER_ACTION):
        return _error_response(request, list(_entries(request)), ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    services = ctx.services
    fenced = await services.controller_fence.admit(request, ctx.peer)
    return _apply(services.cache, services.replica_manager, request, fenced)


def apply(cache, replica_manager, fence, request):
    """Apply a LeaderAndIsr request of any version from this broker's own controller
    (in-process); the response at its version."""
    return _apply(cache, replica_manager, request, fence.admit_local(request))


def _apply(cache, replica_manager, request, fenced: int):
    entries = list(_entries(request))
    if fenced:
        return _error_response(request, entries, fenced)
    changes = [PartitionChange(name, topic_id, state, is_new)
               for name, topic_id, state, is_new in entries]
    errors = replica_manager.become_leader_or_follower(
        request.controller_id, request.controller_epoch, changes)
    # A topic the cache does not know yet waits for UpdateMetadata (None means deleted).
    cache.notify_topics(c.topic for c in changes if cache.topic(c.topic) is not None)
    return _response(request, entries, errors)


def _entries(request):
    """(topic name, topic id or None, PartitionState, is_new) per partition, in order."""
    version = request.version
    if version < 2:
        for p in request.ungrouped_partition_states:
            yield p.topic_name, None, _state(p), bool(version >= 1 and p.is_new)
        return
    for topic in request.topic_states:
        topic_id = topic.topic_id if version >= 5 else None
        if topic_id == ZERO_UUID:
            topic_id = None
        for p in topic.partition_states:
            yield topic.topic_name, topic_id, _state(p), bool(p.is_new)


def _state(p) -> PartitionState:
    return PartitionState(partition=p.partition_index, replicas=list(p.replicas),
                          leader=p.leader, leader_epoch=p.leader_epoch, isr=list(p.isr),
                          controller_epoch=p.controller_epoch, zk_version=p.partition_epoch)


def _topic_ids(request) -> dict[str, uuid.UUID]:
    if request.version < 5:
        return {}
    return {t.topic_name: t.topic_id if t.topic_id is not None else ZERO_UUID
            for t in request.topic_states}


def _error_response(request, entries, code: int):
    errors = {(name, state.partition): code for name, _, state, _ in entries}
    return _response(request, entries, errors, code)


def _response(request, entries, errors: dict, top_code: int = 0):
    version = request.version
    if version < 5:
        return LeaderAndIsrResponse(version=version, error_code=top_code, partition_errors=[
            _Partition(topic_name=name, partition_index=index, error_code=code)
            for (name, index), code in errors.items()])
    ids = _topic_ids(request)
    topics: dict[str, list] = {}
    for (name, index), code in errors.items():
        topics.setdefault(name, []).append(_Partition(partition_index=index, error_code=code))
    return LeaderAndIsrResponse(version=version, error_code=top_code, topics=[
        _Topic(topic_id=ids.get(name, ZERO_UUID), partition_errors=partitions)
        for name, partitions in topics.items()])
