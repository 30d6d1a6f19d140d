"""OffsetFetch (key 9): a group's committed offsets (with the committed leader epoch).

Versions 0-9.  v0 reads what OffsetCommit v0 stored in the metadata store (as
Kafka 3.9 in ZooKeeper mode reads ZooKeeper), never the group coordinator: an
offset committed at v1+ is not found there; what is not found, like an
unknown partition, answers offset -1 and UNKNOWN_TOPIC_OR_PARTITION.  v1-7 ask for one group (v2+: null topics = every committed
offset; group-level errors are top-level from v2, per partition on v1); v5+
answer the committed leader epoch; v7+ ``require_stable``; v8+ a batch of
groups, each with its own error; v9+ a group's ``member_id`` and ``member_epoch`` (a
consumer group member's, KIP-848), handed to the coordinator, which checks them as
Kafka does (below v9: no member, epoch -1).  A partition without a committed offset
answers offset -1, epoch -1, metadata "" and no error.  With require_stable a
partition that has a transactional offset commit still pending answers
UNSTABLE_OFFSET_COMMIT and offset -1, so a read_committed consumer retries
until the transaction ends instead of starting from a stale offset.
"""
from __future__ import annotations

from kafkapy.security import authz
from kafkapy.coordinator.group.zk_offsets import read_offset
from kafkapy.handlers._groups import coordinator
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES

API_KEY = 9
MIN_VERSION = 0
MAX_VERSION = 9

_R = RESPONSES[API_KEY]
_Topic = _R.OffsetFetchResponseTopic
_Partition = _Topic.OffsetFetchResponsePartition
_Group = _R.OffsetFetchResponseGroup
_GTopic = _Group.OffsetFetchResponseTopics
_GPartition = _GTopic.OffsetFetchResponsePartitions


def handle(ctx, request):
    if ctx.api_version == 0:
        return _fetch_from_store(ctx, request)
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


def _fetch_from_store(ctx, request):
    services = ctx.services
    found = []
    for tp in _asked(request.topics):
        try:
            offset = (read_offset(services.store, request.group_id, *tp)
                      if services.cache.partition(*tp) is not None else None)
        except Exception:  # noqa: BLE001 - Kafka answers any failure UNKNOWN_SERVER_ERROR
            # e.g. an empty group id makes an illegal znode path, as in ZooKeeper.
            found.append((tp, None, ErrorCode.UNKNOWN))
            continue
        found.append((tp, _StoredOffset(offset), 0) if offset is not None
                     else (tp, None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
    return ctx.response(topics=_nest(found, _Topic, _Partition))


class _StoredOffset:
    """A v0 offset: no metadata and no leader epoch are stored with it."""
    __slots__ = ("offset",)
    metadata = ""
    leader_epoch = -1

    def __init__(self, offset: int) -> None:
        self.offset = offset


_NO_MEMBER = (None, -1)


def _group(ctx, group, stable: bool):
    member = (group.member_id, group.member_epoch) if ctx.api_version >= 9 else _NO_MEMBER
    error, found = _fetch(ctx, group.group_id, _asked(group.topics), stable, member)
    return _Group(group_id=group.group_id, error_code=error,
                  topics=[] if error else _nest(found, _GTopic, _GPartition))


def _fetch(ctx, group_id: str, asked, stable: bool, member=_NO_MEMBER):
    """(group error, [(partition, committed offset or None, partition error)]);
    ``member``: the asking member's (id, epoch)."""
    groups = coordinator(ctx)
    member_id, member_epoch = member
    denied = []
    if ctx.services.authorizer is not None:
        if not authz.allowed(ctx, authz.DESCRIBE, authz.GROUP, group_id):
            return ErrorCode.GROUP_AUTHORIZATION_FAILED, []
        if asked is not None:
            allowed = authz.filter_allowed(ctx, authz.DESCRIBE, authz.TOPIC, [t for t, _ in asked])
            denied = [(tp, None, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for tp in asked if tp[0] not in allowed]
            asked = [tp for tp in asked if tp[0] in allowed]
        error, found = groups.fetch_offsets(group_id, asked, stable, member_id=member_id,
                                            member_epoch=member_epoch)
        if asked is None:   # every committed partition: those of hidden topics left out
            allowed = authz.filter_allowed(ctx, authz.DESCRIBE, authz.TOPIC, [tp[0] for tp, _ in found])
            found = [(tp, om) for tp, om in found if tp[0] in allowed]
        if error:
            return error, found
        return 0, _stable(groups, group_id, found, stable) + denied
    error, found = groups.fetch_offsets(group_id, asked, stable, member_id=member_id,
                                        member_epoch=member_epoch)
    if not stable:
        return error, [(tp, om, 0) for tp, om in found]
    return error, [(tp, None, ErrorCode.UNSTABLE_OFFSET_COMMIT)
                   if groups.has_pending_txn_offsets(group_id, tp) else (tp, om, 0)
                   for tp, om in found]


def _stable(groups, group_id, found, stable: bool):
    if not stable:
        return [(tp, om, 0) for tp, om in found]
    return [(tp, None, ErrorCode.UNSTABLE_OFFSET_COMMIT)
            if groups.has_pending_txn_offsets(group_id, tp) else (tp, om, 0) for tp, om in found]


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
