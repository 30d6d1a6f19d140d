"""OffsetFetch (key 9): a group's committed offsets (with the committed leader epoch).

Versions 1-9.  v1-7 ask for one group (v2+: null topics = every committed
offset; group-level errors are top-level from v2, per partition on v1); v5+
answer the committed leader epoch; v7+ ``require_stable``; v8+ a batch of
groups, each with its own error.  A partition without a committed offset
answers offset -1, epoch -1, metadata "" and no error.  With require_stable a
partition that has a transactional offset commit still pending answers
UNSTABLE_OFFSET_COMMIT and offset -1, so a read_committed consumer retries
until the transaction ends instead of starting from a stale offset.
"""
from __future__ import annotations

from kafkapy.handlers._groups import coordinator
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES

API_KEY = 9
MIN_VERSION = 1
MAX_VERSION = 9

_R = RESPONSES[API_KEY]
_Topic = _R.OffsetFetchResponseTopic
_Partition = _Topic.OffsetFetchResponsePartition
_Group = _R.OffsetFetchResponseGroup
_GTopic = _Group.OffsetFetchResponseTopics
_GPartition = _GTopic.OffsetFetchResponsePartitions


def handle(ctx, request):
    stable = bool(request.require_stable) if ctx.api_version >= 7 else False
    if ctx.api_version >= 8:
        return ctx.response(throttle_time_ms=0, groups=[_group(ctx, g, stable)
                                                        for g in request.groups])
    asked = _asked(request.topics)
    error, found = _fetch(ctx, request.group_id, asked, stable)
    if error and ctx.api_version < 2:
        found = [(tp, None, error) for tp in asked or []]
        return ctx.response(topics=_nest(found, _Topic, _Partition))
    return ctx.response(throttle_time_ms=0, error_code=error,
                        topics=[] if error else _nest(found, _Topic, _Partition))


def _group(ctx, group, stable: bool):
    error, found = _fetch(ctx, group.group_id, _asked(group.topics), stable)
    return _Group(group_id=group.group_id, error_code=error,
                  topics=[] if error else _nest(found, _GTopic, _GPartition))


def _fetch(ctx, group_id: str, asked, stable: bool):
    """(group error, [(partition, committed offset or None, partition error)])."""
    groups = coordinator(ctx)
    error, found = groups.fetch_offsets(group_id, asked, stable)
    if not stable:
        return error, [(tp, om, 0) for tp, om in found]
    return error, [(tp, None, ErrorCode.UNSTABLE_OFFSET_COMMIT)
                   if groups.has_pending_txn_offsets(group_id, tp) else (tp, om, 0)
                   for tp, om in found]


def _asked(topics):
    if topics is None:
        return None
    return [(t.name, i) for t in topics for i in t.partition_indexes]


def _nest(found, topic_cls, partition_cls):
    by_topic: dict[str, list] = {}
    for (topic, index), om, error in found:
        by_topic.setdefault(topic, []).append(partition_cls(
            partition_index=index, committed_offset=om.offset if om else -1,
            committed_leader_epoch=om.leader_epoch if om else -1,
            metadata=om.metadata if om else "", error_code=error))
    return [topic_cls(name=name, partitions=parts) for name, parts in by_topic.items()]
