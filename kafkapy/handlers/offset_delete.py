"""OffsetDelete (key 47): delete a group's committed offsets for some partitions.

Version 0.  Unknown or dead group -> GROUP_ID_NOT_FOUND; a non-empty group
that is not a consumer group -> NON_EMPTY_GROUP; partitions of topics the
members subscribe to -> GROUP_SUBSCRIBED_TO_TOPIC (per partition).
"""
from __future__ import annotations

from kafkapy.handlers._groups import coordinator
from kafkapy.protocol.messages import RESPONSES

API_KEY = 47
MIN_VERSION = 0
MAX_VERSION = 0

_Topic = RESPONSES[API_KEY].OffsetDeleteResponseTopic
_Partition = _Topic.OffsetDeleteResponsePartition


def handle(ctx, request):
    asked = [(t.name, p.partition_index) for t in request.topics for p in t.partitions]
    error, results = coordinator(ctx).delete_offsets(request.group_id, asked)
    topics = [] if error else [
        _Topic(name=t.name, partitions=[
            _Partition(partition_index=p.partition_index,
                       error_code=results.get((t.name, p.partition_index), 0))
            for p in t.partitions]) for t in request.topics]
    return ctx.response(error_code=error, throttle_time_ms=0, topics=topics)
