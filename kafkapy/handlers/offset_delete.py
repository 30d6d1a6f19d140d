"""OffsetDelete (key 47): delete a group's committed offsets for some partitions.

Version 0.  Partitions of topics or partitions this cluster does not have are
refused first (UNKNOWN_TOPIC_OR_PARTITION) and the rest go to the coordinator:
unknown or dead group -> GROUP_ID_NOT_FOUND; a non-empty group that is not a
consumer group -> NON_EMPTY_GROUP; partitions of topics the members subscribe
to -> GROUP_SUBSCRIBED_TO_TOPIC (per partition).  As Kafka's response builder
merges them, a group-level error replaces the whole answer, else the refused
partitions come first, then the coordinator's under each topic's first entry.
"""
from __future__ import annotations

from kafkapy.security import authz
from kafkapy.handlers._groups import coordinator
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES

API_KEY = 47
MIN_VERSION = 0
MAX_VERSION = 0

_Topic = RESPONSES[API_KEY].OffsetDeleteResponseTopic
_Partition = _Topic.OffsetDeleteResponsePartition


def handle(ctx, request):
    cache = ctx.services.cache
    asked = [(t.name, p.partition_index) for t in request.topics for p in t.partitions]
    denied: list = []
    if ctx.services.authorizer is not None:
        # Kafka: DELETE on the group, then READ on each topic.
        if not authz.allowed(ctx, authz.DELETE, authz.GROUP, request.group_id):
            return ctx.response(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, throttle_time_ms=0, topics=[])
        allowed = authz.filter_allowed(ctx, authz.READ, authz.TOPIC, [t for t, _ in asked])
        denied = [tp for tp in asked if tp[0] not in allowed]
        asked = [tp for tp in asked if tp[0] in allowed]
    refused = [tp for tp in asked if cache.partition(*tp) is None]
    valid = [tp for tp in asked if tp not in refused]
    error, results = coordinator(ctx).delete_offsets(request.group_id, valid)
    if error:
        return ctx.response(error_code=error, throttle_time_ms=0, topics=[])
    by_topic: dict[str, list] = {}
    for tp in denied:
        by_topic.setdefault(tp[0], []).append(
            _Partition(partition_index=tp[1], error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED))
    for tp in refused:
        by_topic.setdefault(tp[0], []).append(
            _Partition(partition_index=tp[1], error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
    for tp in valid:
        by_topic.setdefault(tp[0], []).append(
            _Partition(partition_index=tp[1], error_code=results.get(tp, 0)))
    return ctx.response(error_code=0, throttle_time_ms=0,
                        topics=[_Topic(name=n, partitions=ps) for n, ps in by_topic.items()])
