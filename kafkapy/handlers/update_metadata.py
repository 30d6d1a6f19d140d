"""UpdateMetadata (key 6): the controller's view of live brokers and partitions for the cache.

Versions 0-8 (Kafka 3.9, ZooKeeper mode).  ``apply(broker, request)`` is the
synchronous core (``handle`` and the controller's in-process delivery call it).
As Kafka's KafkaApis.handleUpdateMetadataRequest and
ReplicaManager.maybeUpdateMetadataCache:

- broker epoch (v5+) not -1 and older than ours -> STALE_BROKER_EPOCH;
- controller epoch older than the highest seen -> STALE_CONTROLLER_EPOCH (Kafka's
  ControllerMovedException); otherwise it becomes the highest seen;
- else the cache takes the live brokers (all their listeners), the controller id
  and the partition states (leader -2 deletes a partition); the group coordinator
  drops the offsets of deleted partitions' topics (Kafka's onPartitionsDeleted,
  through the cache's topic listeners), and the cache's update listeners run
  (admin waiters for CreateTopics / DeleteTopics).
"""
from __future__ import annotations

from kafkapy.security import authz
from kafkapy.handlers.leader_and_isr import fence
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.inter_broker import UpdateMetadataResponse

API_KEY = 6
MIN_VERSION = 0
MAX_VERSION = 8


def handle(ctx, request):
    if not authz.cluster(ctx, authz.CLUSTER_ACTION):
        return _response(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    return apply(ctx.broker, request)


def apply(broker, request):
    """Apply an UpdateMetadata request of any version; the response at its version."""
    fenced = fence(broker, request)
    if fenced:
        return _response(request, fenced)
    broker.cache.apply_update_metadata(request)
    return _response(request, ErrorCode.NO_ERROR)


def _response(request, code: int):
    return UpdateMetadataResponse(version=request.version, error_code=code)
