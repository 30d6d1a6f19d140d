"""OffsetCommit (key 8): store a group's consumed positions in ``__consumer_offsets``.

Versions 2 (Kafka 4.0's minimum) to 9.  Generation -1 with an empty member id
is a standalone commit (accepted for an Empty or unknown group); v2-4 carry a
retention time (then the record gets an expire timestamp, value v1); v6+ the
committed leader epoch; v7+ group.instance.id.  Per partition: a topic or
partition this cluster does not have -> UNKNOWN_TOPIC_OR_PARTITION; metadata
over offset.metadata.max.bytes -> OFFSET_METADATA_TOO_LARGE.
"""
from __future__ import annotations

from kafkapy.coordinator.group.offsets import OffsetAndMetadata
from kafkapy.handlers._groups import coordinator
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES

API_KEY = 8
MIN_VERSION = 2
MAX_VERSION = 9

_Topic = RESPONSES[API_KEY].OffsetCommitResponseTopic
_Partition = _Topic.OffsetCommitResponsePartition


def handle(ctx, request):
    version = ctx.api_version
    now = ctx.broker.clock.time_ms()
    retention = request.retention_time_ms if version <= 4 else -1
    expire = now + retention if retention is not None and retention >= 0 else None
    errors, offsets = {}, {}
    for topic in request.topics:
        for p in topic.partitions:
            tp = (topic.name, p.partition_index)
            if ctx.broker.cache.partition(*tp) is None:
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            epoch = p.committed_leader_epoch if version >= 6 else -1
            offsets[tp] = OffsetAndMetadata(p.committed_offset, epoch,
                                            p.committed_metadata or "", now, expire)
    if offsets:
        errors.update(coordinator(ctx).commit_offsets(
            request.group_id, request.member_id or "",
            request.group_instance_id if version >= 7 else None,
            request.generation_id_or_member_epoch, offsets))
    return ctx.response(throttle_time_ms=0, topics=_topics(request, errors))


def _topics(request, errors):
    return [_Topic(name=t.name, partitions=[
        _Partition(partition_index=p.partition_index,
                   error_code=errors.get((t.name, p.partition_index), 0))
        for p in t.partitions]) for t in request.topics]
