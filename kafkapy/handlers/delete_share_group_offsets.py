"""DeleteShareGroupOffsets (key 92): delete an empty share group's state of whole topics
(the share coordinator's state deleted; the topics' share partitions are initialized
afresh when next assigned).

Version 0.  As Kafka's KafkaApis:
- UNSUPPORTED_VERSION while share groups are off, GROUP_AUTHORIZATION_FAILED without
  DELETE on the group: the top-level error alone;
- each topic the principal may not READ is answered TOPIC_AUTHORIZATION_FAILED (no topic
  id); the others go to the coordinator (``delete_share_group_offsets``): a group-level
  error (NOT_COORDINATOR, GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, ...) replaces the whole
  answer, else the refused topics come first, then the coordinator's (deleted topics, then
  those it refused: UNKNOWN_TOPIC_OR_PARTITION for an unknown topic or one without share
  state, the share coordinator's error for a failed deletion).
"""
from __future__ import annotations

from kafkapy.coordinator.group.share_admin_ops import error_message
from kafkapy.handlers._groups import coordinator
from kafkapy.handlers.share_group_heartbeat import share_protocol_enabled
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.share_group_apis import DeleteShareGroupOffsetsResponse
from kafkapy.security import authz

API_KEY = 92
MIN_VERSION = 0
MAX_VERSION = 0

_Topic = DeleteShareGroupOffsetsResponse.DeleteShareGroupOffsetsResponseTopic


async def handle(ctx, request):
    if not share_protocol_enabled(ctx.services.config):
        return _failed(ctx, ErrorCode.UNSUPPORTED_VERSION)
    if not authz.allowed(ctx, authz.DELETE, authz.GROUP, request.group_id):
        return _failed(ctx, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    names = [t.topic_name for t in request.topics]
    allowed = authz.filter_allowed(ctx, authz.READ, authz.TOPIC, names)
    denied = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    answer = [_Topic(topic_name=n, topic_id=None, error_code=denied,
                     error_message=error_message(denied)) for n in names if n not in allowed]
    result = await coordinator(ctx).delete_share_group_offsets(
        request.group_id, [n for n in names if n in allowed])
    if result.error:
        return _failed(ctx, result.error, result.message)
    answer += [_Topic(topic_name=t.name, topic_id=t.topic_id, error_code=t.error,
                      error_message=t.message) for t in result.topics]
    return ctx.response(throttle_time_ms=0, error_code=0, error_message=None, responses=answer)


def _failed(ctx, error: int, message: str | None = None):
    return ctx.response(throttle_time_ms=0, error_code=error,
                        error_message=message if message is not None else error_message(error),
                        responses=[])
