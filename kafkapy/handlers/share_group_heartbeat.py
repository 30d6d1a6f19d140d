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

from kafkapy.coordinator.group.share.types import ShareHeartbeatRequest
from kafkapy.handlers._groups import client_host, coordinator, heartbeat, protocol_enabled
from kafkapy.protocol.share_group_apis import ShareGroupHeartbeatResponse

API_KEY = 76
MIN_VERSION = 1
MAX_VERSION = 1

SHARE_PROTOCOL = "share"

_ASSIGNMENT = ShareGroupHeartbeatResponse.Assignment


async def handle(ctx, request):
    return await heartbeat(
        ctx, request, enabled=share_protocol_enabled(ctx.services.config),
        assignment_cls=_ASSIGNMENT,
        beat=lambda: coordinator(ctx).share_heartbeat(_decoded(ctx, request)))


def share_protocol_enabled(config) -> bool:
    """Kafka's isShareGroupProtocolEnabled, kafkapy's way: ``share`` among the rebalance
    protocols."""
    return protocol_enabled(config, SHARE_PROTOCOL)


def _decoded(ctx, request) -> ShareHeartbeatRequest:
    names = request.subscribed_topic_names
    return ShareHeartbeatRequest(
        group_id=request.group_id, member_id=request.member_id,
        member_epoch=request.member_epoch, client_id=ctx.client_id or "",
        client_host=client_host(ctx), rack_id=request.rack_id,
        subscribed_topic_names=None if names is None else tuple(names))
