"""OffsetCommit (key 8): store a group's consumed positions in ``__consumer_offsets``.

Versions 0-9 (Kafka 3.9).  Generation -1 with an empty member id
is a standalone commit (accepted for an Empty or unknown group); v1 carries a
commit timestamp per partition (-1: now); v2-4 a retention time (then the
record gets an expire timestamp, value v1); v6+ the committed leader epoch;
v7+ group.instance.id; v9 carries a consumer group member's epoch where the classic
generation was (the coordinator checks it: STALE_MEMBER_EPOCH, and UNSUPPORTED_VERSION for
a consumer-protocol member below v9).  Per partition: a topic or partition this cluster does
not have -> UNKNOWN_TOPIC_OR_PARTITION; metadata over
offset.metadata.max.bytes -> OFFSET_METADATA_TOO_LARGE.

v0 commits go where Kafka 3.9 in ZooKeeper mode puts them: the metadata store
(``/consumers/<group>/offsets/<topic>/<partition>``, see
``kafkapy.coordinator.group.zk_offsets``), not the group coordinator; only
OffsetFetch v0 reads them back.  The metadata is checked for size, not kept; a
commit the store refuses (an empty group id is an illegal znode path) answers
UNKNOWN_SERVER_ERROR, as Kafka's ZooKeeper write does.
"""
from __future__ import annotations

import structlog

from kafkapy.security import authz
from kafkapy.coordinator.group.offsets import OffsetAndMetadata
from kafkapy.coordinator.group.zk_offsets import store_offset
from kafkapy.handlers._groups import coordinator
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES
from kafkapy.replication import acks

_log = structlog.get_logger("kafkapy.handlers.offset_commit")

API_KEY = 8
MIN_VERSION = 0
MAX_VERSION = 9

_Topic = RESPONSES[API_KEY].OffsetCommitResponseTopic
_Partition = _Topic.OffsetCommitResponsePartition


def handle(ctx, request):
    version = ctx.api_version
    if version == 0:
        return _commit_to_store(ctx, request)
    now = ctx.services.clock.time_ms()
    retention = request.retention_time_ms if version <= 4 else -1
    expire = now + retention if retention is not None and retention >= 0 else None
    errors, offsets = {}, {}
    allowed = None
    if ctx.services.authorizer is not None:
        if not authz.allowed(ctx, authz.READ, authz.GROUP, request.group_id):
            errors = {(t.name, p.partition_index): ErrorCode.GROUP_AUTHORIZATION_FAILED
                      for t in request.topics for p in t.partitions}
            return ctx.response(throttle_time_ms=0, topics=_topics(request, errors))
        allowed = authz.filter_allowed(ctx, authz.READ, authz.TOPIC, [t.name for t in request.topics])
    for topic in request.topics:
        for p in topic.partitions:
            tp = (topic.name, p.partition_index)
            if allowed is not None and topic.name not in allowed:
                errors[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                continue
            if ctx.services.cache.partition(*tp) is None:
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            epoch = p.committed_leader_epoch if version >= 6 else -1
            stamp = p.commit_timestamp if version == 1 and p.commit_timestamp != -1 else now
            offsets[tp] = OffsetAndMetadata(p.committed_offset, epoch,
                                            p.committed_metadata or "", stamp, expire)
    if not offsets:
        return ctx.response(throttle_time_ms=0, topics=_topics(request, errors))
    committed = coordinator(ctx).commit_offsets(
        request.group_id, request.member_id or "",
        request.group_instance_id if version >= 7 else None,
        request.generation_id_or_member_epoch, offsets, api_version=version)

    def respond(results: dict):
        errors.update(results)
        return ctx.response(throttle_time_ms=0, topics=_topics(request, errors))

    # Answered once the commit is durable (a future while followers catch up).
    return acks.then(committed, respond)


def _commit_to_store(ctx, request):
    services = ctx.services
    limit = services.config["offset.metadata.max.bytes"]
    errors = {}
    for topic in request.topics:
        for p in topic.partitions:
            tp = (topic.name, p.partition_index)
            if services.cache.partition(*tp) is None:
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif p.committed_metadata is not None and len(p.committed_metadata) > limit:
                errors[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                errors[tp] = _store(services, request.group_id, tp, p.committed_offset)
    return ctx.response(throttle_time_ms=0, topics=_topics(request, errors))


def _store(services, group_id: str, tp, offset: int) -> int:
    try:
        store_offset(services.store, group_id, *tp, offset)
    except ValueError as err:
        # an illegal znode path (an empty group id, a NUL in a name), refused as ZooKeeper
        # refuses it: a client's mistake, no traceback
        _log.warning("v0 offset commit failed", group_id=group_id, topic=tp[0],
                     partition=tp[1], error=str(err))
        return ErrorCode.UNKNOWN
    except Exception:  # noqa: BLE001 - Kafka answers any failure here UNKNOWN_SERVER_ERROR
        _log.warning("v0 offset commit failed", group_id=group_id, topic=tp[0],
                     partition=tp[1], exc_info=True)
        return ErrorCode.UNKNOWN
    return 0


_REFUSED = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.TOPIC_AUTHORIZATION_FAILED)


def _topics(request, errors):
    """Kafka's response builder order: the partitions refused before the commit (unknown
    topic or partition) first, then the committed ones, each under its topic's first entry."""
    by_topic: dict[str, list] = {}
    asked = [(t.name, p.partition_index) for t in request.topics for p in t.partitions]
    refused = {tp for tp, code in errors.items() if code in _REFUSED}
    for tp in [tp for tp in asked if tp in refused] + [tp for tp in asked if tp not in refused]:
        by_topic.setdefault(tp[0], []).append(
            _Partition(partition_index=tp[1], error_code=errors.get(tp, 0)))
    return [_Topic(name=name, partitions=parts) for name, parts in by_topic.items()]
