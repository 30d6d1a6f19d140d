"""UpdateMetadata (key 6): the controller's view of live brokers and partitions for the cache.

Versions 0-8 (Kafka 3.9, ZooKeeper mode).  ``handle`` serves the network, ``apply``
the controller's in-process delivery to itself; both pass the request through the
broker's ``ControllerFence`` (``kafkapy.metadata.controller_fence``), then the same
synchronous core.  As Kafka's KafkaApis.handleUpdateMetadataRequest and
ReplicaManager.maybeUpdateMetadataCache:

- the fence's error: a broker epoch (v5+) older than ours -> STALE_BROKER_EPOCH; a
  controller epoch older than the known one (Kafka's ControllerMovedException), or
  one the metadata store does not confirm -> STALE_CONTROLLER_EPOCH;
- else the cache takes the live brokers (all their listeners), the controller id
  and the partition states (leader -2 deletes a partition); the group coordinator
  drops the offsets of deleted partitions' topics (Kafka's onPartitionsDeleted,
  through the cache's topic listeners), and the cache's update listeners run
  (admin waiters for CreateTopics / DeleteTopics).
"""
from __future__ import annotations

from kafkapy.security import authz
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.inter_broker import UpdateMetadataResponse

API_KEY = 6
MIN_VERSION = 0
MAX_VERSION = 8


async def handle(ctx, request):
    if not authz.cluster(ctx, authz.CLUSTER_ACTION):
        return _response(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    services = ctx.services
    fenced = await services.controller_fence.admit(request, ctx.peer)
    return _apply(services.cache, services.replica_manager, request, fenced)


def apply(cache, replica_manager, fence, request):
    """Apply an UpdateMetadata request of any version from this broker's own controller
    (in-process); the response at its version."""
    return _apply(cache, replica_manager, request, fence.admit_local(request))


def _apply(cache, replica_manager, request, fenced: int):
    if fenced:
        return _response(request, fenced)
    cache.apply_update_metadata(request)
    return _response(request, ErrorCode.NO_ERROR)


def _response(request, code: int):
    return UpdateMetadataResponse(version=request.version, error_code=code)
