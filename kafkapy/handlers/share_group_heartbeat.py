"""ShareGroupHeartbeat (key 76): a member of a share group (KIP-932, ``KafkaShareConsumer``)
joins, heartbeats and leaves.

Version 1 (version 0 was Kafka 4.0's early access, removed in 4.1; kafka-python's codec
would accept it, so ``MIN_VERSION`` says 1).  What Kafka's KafkaApis checks is checked
here, in its order, each answered with the error code alone (no message, member id null,
epoch 0, no assignment):
- UNSUPPORTED_VERSION while share groups are off: ``group.coordinator.rebalance.protocols``
  does not list ``share`` (Kafka 4.2's isShareGroupProtocolEnabled reads its
  ``share.version`` feature, which kafkapy has finalized at 1: see ``api_versions``);
- GROUP_AUTHORIZATION_FAILED without READ on the group;
- TOPIC_AUTHORIZATION_FAILED when a subscribed topic name (a non-empty list) may not be
  described.
Everything else is the coordinator's (``share_heartbeat``, Kafka's GroupCoordinatorService
and GroupMetadataManager): the request's own checks (INVALID_REQUEST with Kafka's
messages), NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, GROUP_ID_NOT_FOUND,
UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, GROUP_MAX_SIZE_REACHED, answered with messages.

Decoding: null fields stay ``None`` ("unchanged since the last heartbeat").  Encoding: the
assignment is null when the result has none (unchanged), else one entry per topic id (in
topic id order) with its partitions ascending.
"""
from __future__ import annotations

from kafkapy.coordinator.group.share.types import HeartbeatResult, ShareHeartbeatRequest
from kafkapy.handlers._groups import client_host, coordinator
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.share_group_apis import ShareGroupHeartbeatResponse
from kafkapy.security import authz

API_KEY = 76
MIN_VERSION = 1
MAX_VERSION = 1

SHARE_PROTOCOL = "share"

_Assignment = ShareGroupHeartbeatResponse.Assignment
_TopicPartitions = _Assignment.TopicPartitions


async def handle(ctx, request):
    refused = _refused(ctx, request)
    if refused:
        return _encoded(ctx, HeartbeatResult(error=refused))
    result = await coordinator(ctx).share_heartbeat(_decoded(ctx, request))
    return _encoded(ctx, result)


def share_protocol_enabled(config) -> bool:
    """Kafka's isShareGroupProtocolEnabled, kafkapy's way: ``share`` among the rebalance
    protocols."""
    return any(p.strip().lower() == SHARE_PROTOCOL
               for p in config["group.coordinator.rebalance.protocols"])


def _refused(ctx, request) -> int:
    """KafkaApis' checks, in its order: the error code, or 0."""
    if not share_protocol_enabled(ctx.services.config):
        return ErrorCode.UNSUPPORTED_VERSION
    if not authz.allowed(ctx, authz.READ, authz.GROUP, request.group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    names = request.subscribed_topic_names
    if names and len(authz.filter_allowed(ctx, authz.DESCRIBE, authz.TOPIC, names)) < len(
            set(names)):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return 0


def _decoded(ctx, request) -> ShareHeartbeatRequest:
    names = request.subscribed_topic_names
    return ShareHeartbeatRequest(
        group_id=request.group_id, member_id=request.member_id,
        member_epoch=request.member_epoch, client_id=ctx.client_id or "",
        client_host=client_host(ctx), rack_id=request.rack_id,
        subscribed_topic_names=None if names is None else tuple(names))


def _encoded(ctx, result: HeartbeatResult):
    given = result.assignment
    return ctx.response(
        throttle_time_ms=0, error_code=result.error, error_message=result.message,
        member_id=result.member_id, member_epoch=result.member_epoch,
        heartbeat_interval_ms=result.heartbeat_interval_ms,
        assignment=None if given is None else _Assignment(topic_partitions=[
            _TopicPartitions(topic_id=topic_id, partitions=sorted(given[topic_id]))
            for topic_id in sorted(given)]))
