"""AlterShareGroupOffsets (key 91): set the start offsets of an empty share group's
partitions (the share coordinator's state initialized afresh at them).

Version 0.  As Kafka's KafkaApis:
- UNSUPPORTED_VERSION while share groups are off, GROUP_AUTHORIZATION_FAILED without READ
  on the group: the top-level error alone;
- each topic the principal may not READ is answered TOPIC_AUTHORIZATION_FAILED, each topic
  the metadata cache does not know UNKNOWN_TOPIC_OR_PARTITION, per partition (with
  Kafka's messages and the topic's id when the cache knows it); the other topics go to the
  coordinator (``alter_share_group_offsets``: a group-level error -- NOT_COORDINATOR,
  GROUP_ID_NOT_FOUND for a group of another kind, NON_EMPTY_GROUP, ... -- replaces the
  whole answer; else its per-partition answers);
- the answer lists the refused topics first, then the coordinator's, a topic named in
  both once (its partitions in that order).
"""
from __future__ import annotations

from kafkapy.coordinator.group.share_admin_ops import error_message
from kafkapy.handlers._groups import coordinator
from kafkapy.handlers.share_group_heartbeat import share_protocol_enabled
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.share_group_apis import AlterShareGroupOffsetsResponse
from kafkapy.security import authz

API_KEY = 91
MIN_VERSION = 0
MAX_VERSION = 0

_Topic = AlterShareGroupOffsetsResponse.AlterShareGroupOffsetsResponseTopic
_Partition = _Topic.AlterShareGroupOffsetsResponsePartition


async def handle(ctx, request):
    if not share_protocol_enabled(ctx.services.config):
        return _failed(ctx, ErrorCode.UNSUPPORTED_VERSION)
    if not authz.allowed(ctx, authz.READ, authz.GROUP, request.group_id):
        return _failed(ctx, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    allowed = authz.filter_allowed(ctx, authz.READ, authz.TOPIC,
                                   [t.topic_name for t in request.topics])
    cache = ctx.services.cache
    answer: dict[str, tuple] = {}
    asked = []
    for topic in request.topics:
        refused = (ErrorCode.TOPIC_AUTHORIZATION_FAILED if topic.topic_name not in allowed
                   else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                   if cache.topic(topic.topic_name) is None else 0)
        if refused:     # per partition: a topic refused without partitions is not listed
            if topic.partitions:
                _add(answer, topic.topic_name, _topic_id(cache, topic.topic_name),
                     [(p.partition_index, refused, error_message(refused))
                      for p in topic.partitions])
        else:
            asked.append((topic.topic_name,
                          [(p.partition_index, p.start_offset) for p in topic.partitions]))
    result = await coordinator(ctx).alter_share_group_offsets(request.group_id, asked)
    if result.error:
        return _failed(ctx, result.error, result.message)
    for t in result.topics:
        _add(answer, t.name, _topic_id(cache, t.name),
             [(p.partition, p.error, p.message) for p in t.partitions])
    return ctx.response(throttle_time_ms=0, error_code=0, error_message=None, responses=[
        _Topic(topic_name=name, topic_id=topic_id, partitions=[
            _Partition(partition_index=p, error_code=code, error_message=message)
            for p, code, message in partitions])
        for name, (topic_id, partitions) in answer.items()])


def _add(answer: dict, name: str, topic_id, partitions: list) -> None:
    """Kafka's AlterShareGroupOffsetsResponse.Builder: one entry per topic name."""
    answer.setdefault(name, (topic_id, []))[1].extend(partitions)


def _topic_id(cache, name: str):
    topic = cache.topic(name)
    return topic.topic_id if topic is not None else None


def _failed(ctx, error: int, message: str | None = None):
    return ctx.response(throttle_time_ms=0, error_code=error,
                        error_message=message if message is not None else error_message(error),
                        responses=[])
