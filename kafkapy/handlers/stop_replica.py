"""StopReplica (key 5): the controller tells this broker to stop (and maybe delete) replicas.

Versions 0-4 (Kafka 3.9, ZooKeeper mode).  ``handle`` serves the network, ``apply``
the controller's in-process delivery to itself; both pass the request through the
broker's ``ControllerFence`` (``kafkapy.metadata.controller_fence``), then the same
synchronous core.  As Kafka's KafkaApis.handleStopReplicaRequest and
ReplicaManager.stopReplicas:

- the fence's error (a broker epoch (v1+) older than ours: STALE_BROKER_EPOCH; a
  controller epoch older than the known one, or one the metadata store does not
  confirm: STALE_CONTROLLER_EPOCH), no partitions in the answer;
- per partition: offline log dir -> KAFKA_STORAGE_ERROR; a leader epoch (v3+) older
  than the replica's -> FENCED_LEADER_EPOCH (-2 "during delete" and -1 "none" skip
  the check); else the fetcher stops and, with delete, the log goes.  A partition
  not hosted here is stopped too (its log deleted if one is left on disk).
  v0-2 carry one delete flag for the request and no epochs.
- A deleted partition of ``__consumer_offsets`` / ``__transaction_state`` makes its
  coordinator resign it (the cache listeners see the replica gone).
"""
from __future__ import annotations

from kafkapy.security import authz
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.inter_broker import StopReplicaResponse
from kafkapy.replication.replica_manager import NO_EPOCH

API_KEY = 5
MIN_VERSION = 0
MAX_VERSION = 4

_Partition = StopReplicaResponse.StopReplicaPartitionError


async def handle(ctx, request):
    if not authz.cluster(ctx, authz.CLUSTER_ACTION):
        return _response(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, {})
    services = ctx.services
    fenced = await services.controller_fence.admit(request, ctx.peer)
    return _apply(services.cache, services.replica_manager, request, fenced)


def apply(cache, replica_manager, fence, request):
    """Apply a StopReplica request of any version from this broker's own controller
    (in-process); the response at its version."""
    return _apply(cache, replica_manager, request, fence.admit_local(request))


def _apply(cache, replica_manager, request, fenced: int):
    if fenced:
        return _response(request, fenced, {})
    partitions = _partitions(request)
    errors = replica_manager.stop_replicas(request.controller_id, request.controller_epoch,
                                           partitions)
    # Coordinators resign partitions they no longer host (Kafka's onResignation).
    # (a topic already gone from the cache was announced as deleted then)
    cache.notify_topics(name for (name, _), (_, delete) in partitions.items()
                        if delete and cache.topic(name) is not None)
    return _response(request, ErrorCode.NO_ERROR, errors)


def _partitions(request) -> dict[tuple[str, int], tuple[int, bool]]:
    """(topic, partition) -> (leader epoch, delete), as Kafka's partitionStates()."""
    version = request.version
    if version == 0:
        return {(p.topic_name, p.partition_index): (NO_EPOCH, bool(request.delete_partitions))
                for p in request.ungrouped_partitions}
    if version < 3:
        return {(t.name, index): (NO_EPOCH, bool(request.delete_partitions))
                for t in request.topics for index in t.partition_indexes}
    return {(t.topic_name, p.partition_index): (p.leader_epoch, bool(p.delete_partition))
            for t in request.topic_states for p in t.partition_states}


def _response(request, code: int, errors: dict):
    return StopReplicaResponse(version=request.version, error_code=code, partition_errors=[
        _Partition(topic_name=name, partition_index=index, error_code=error)
        for (name, index), error in errors.items()])
