"""ConsumerGroupHeartbeat (key 68): a member of a consumer group (KIP-848,
``group.protocol=consumer``) joins, heartbeats, reconciles and leaves.

Versions 0-1 (v1 adds ``SubscribedTopicRegex``, and a member id the client generates).
What Kafka's KafkaApis checks is checked here, in its order, each answered with the error
code alone (no message, member id null, epoch 0, no assignment):
- UNSUPPORTED_VERSION while ``group.coordinator.rebalance.protocols`` does not list
  ``consumer`` (Kafka's isConsumerGroupProtocolEnabled; its other condition, the
  ``group.version`` feature, is always level 1 here: see ``api_versions``);
- GROUP_AUTHORIZATION_FAILED without READ on the group;
- TOPIC_AUTHORIZATION_FAILED when a subscribed topic name (a non-empty list) may not be
  described: a client may not learn of topics it cannot see.
Everything else is the coordinator's, as in Kafka (where GroupCoordinatorService validates
the request): the request's own checks (empty group id, member id, epochs, a first
heartbeat without rebalance timeout or subscription: INVALID_REQUEST with Kafka's message;
an unknown assignor: UNSUPPORTED_ASSIGNOR), NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, ...: one ``consumer_heartbeat(HeartbeatRequest)``
call answers them in its ``HeartbeatResult``.

Decoding: null fields stay ``None`` ("unchanged since the last heartbeat"); the owned
partitions (``TopicPartitions``) become an ``Assignment`` (topic id -> partitions; a topic
listed with no partitions is kept, so a join that lists one is refused as Kafka refuses it).
Encoding: the assignment is null when the result has none (unchanged), else one entry per
topic id (in topic id order) with its partitions ascending.
"""
from __future__ import annotations

from kafkapy.coordinator.group.consumer.types import HeartbeatRequest
from kafkapy.handlers._groups import client_host, coordinator, heartbeat, protocol_enabled
from kafkapy.protocol.consumer_group_apis import ConsumerGroupHeartbeatResponse

API_KEY = 68
MIN_VERSION = 0
MAX_VERSION = 1

CONSUMER_PROTOCOL = "consumer"

_ASSIGNMENT = ConsumerGroupHeartbeatResponse.Assignment


async def handle(ctx, request):
    return await heartbeat(
        ctx, request, enabled=consumer_protocol_enabled(ctx.services.config),
        assignment_cls=_ASSIGNMENT,
        beat=lambda: coordinator(ctx).consumer_heartbeat(_decoded(ctx, request)))


def consumer_protocol_enabled(config) -> bool:
    """Kafka's isConsumerGroupProtocolEnabled: ``consumer`` among the rebalance protocols."""
    return protocol_enabled(config, CONSUMER_PROTOCOL)


def _decoded(ctx, request) -> HeartbeatRequest:
    names = request.subscribed_topic_names
    owned = request.topic_partitions
    return HeartbeatRequest(
        group_id=request.group_id, member_id=request.member_id,
        member_epoch=request.member_epoch, client_id=ctx.client_id or "",
        client_host=client_host(ctx), version=ctx.api_version,
        instance_id=request.instance_id, rack_id=request.rack_id,
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        subscribed_topic_names=None if names is None else tuple(names),
        subscribed_topic_regex=request.subscribed_topic_regex if ctx.api_version >= 1 else None,
        server_assignor=request.server_assignor,
        owned=None if owned is None else _owned(owned))


def _owned(topic_partitions) -> dict:
    """The owned partitions by topic id, a topic listed without partitions kept: a join
    must list no topic at all (Kafka refuses ``[{topic, []}]`` too)."""
    out: dict = {}
    for t in topic_partitions:
        out[t.topic_id] = out.get(t.topic_id, frozenset()) | frozenset(t.partitions)
    return out
