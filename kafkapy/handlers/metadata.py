"""Metadata (key 3): brokers, cluster id, controller, topics with partitions, leaders and epochs.

Behaviour (Kafka 3.9, ZooKeeper mode):
- ``topics`` null (v1+) or empty at v0 means every topic; an empty list at v1+
  means none.
- v12 may name topics by id (then names are ignored); an unknown id gets
  UNKNOWN_TOPIC_ID, listed first.  v10-11 carry the id field but Kafka refuses
  it there: a null name or a non-zero id gets an error response (every topic
  INVALID_REQUEST, no brokers, no cluster id, controller -1).
- A name asked twice is answered once (Kafka collects names in a set).
- Authorized operations (no authorizer: every operation) are filled in when
  asked for: per topic from v8, for the cluster in v8-10.
- A missing topic is auto-created when ``auto.create.topics.enable`` and the
  request allow it (v4+ carries the flag; earlier versions always allow), and
  is answered LEADER_NOT_AVAILABLE so the client retries; an illegal name gets
  INVALID_TOPIC_EXCEPTION; otherwise UNKNOWN_TOPIC_OR_PARTITION.
- With an authorizer (Kafka's KafkaApis.handleTopicMetadataRequest): topics without
  DESCRIBE are left out of an all-topics answer and answered TOPIC_AUTHORIZATION_FAILED
  when named (listed last); a missing topic to be auto-created needs CREATE on CLUSTER or
  on the topic, else TOPIC_AUTHORIZATION_FAILED (listed before those); authorized
  operations are the principal's.
- Internal topics (``__consumer_offsets``, ``__transaction_state``,
  ``__share_group_state``) carry the
  internal flag, in error answers too; auto-creation creates them with their
  coordinator's settings, as Kafka's AutoTopicCreationManager does.
- Order (Kafka's): existing topics, then missing ones; with auto-creation the
  illegal names come before the topics being created.
- Partitions come from the metadata cache (the controller's UpdateMetadata), as
  Kafka's ZkMetadataCache.getTopicMetadata answers them: a leader that is not a
  live broker -> LEADER_NOT_AVAILABLE with leader -1; a live leader without the
  client's listener -> LISTENER_NOT_FOUND (v6+; LEADER_NOT_AVAILABLE before);
  offline_replicas as the controller sent them.  v0 alone lists only the replicas
  and ISR members reachable on the listener and answers REPLICA_NOT_AVAILABLE when
  that dropped any.  Brokers are the live ones on the client's listener; the
  controller id is the cache's (-1 when unknown).
- A replica here whose log dir failed (before the controller hears of it) is
  listed offline and left out of the ISR; if it leads, LEADER_NOT_AVAILABLE.

Cost per request (a topic may have 10,000 partitions): a topic's partition array is
encoded once and kept, keyed by (topic, wire layout, listener), in a per-cache table
valid while the cache's ``generation`` is unchanged (every UpdateMetadata bumps it) and
while no log dir of this broker is offline (then every answer is built afresh, as the
partitions on that dir are shown offline).  A response is built with empty partition
arrays and ``handlers.spliced`` puts the kept bytes in their place: the bytes on the wire
are exactly those of the generic encoding of the full response (tests compare both for
every version).  Layouts: versions whose partition bytes and rules are the same share an
entry (v0 | v1-4 | v5 | v6 | v7-8 | v9-12).
"""
from __future__ import annotations

import weakref

from kafkapy.handlers import _mutation_quota as mutation_quota
from kafkapy.handlers.common import CLUSTER_OPERATIONS, TOPIC_OPERATIONS
from kafkapy.handlers.spliced import Spliced, cut_array
from kafkapy.metadata import membership
from kafkapy.metadata.topics import (OFFSETS_TOPIC, SHARE_GROUP_STATE_TOPIC,
                                     TRANSACTION_STATE_TOPIC, invalid_topic_reason,
                                     is_internal)
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.protocol.messages import RESPONSES
from kafkapy.security import authz

API_KEY = 3
MIN_VERSION = 0
MAX_VERSION = 12

_R = RESPONSES[API_KEY]
_TOPIC_STRUCT = _R.MetadataResponseTopic._struct.array_of   # the element struct
# Versions whose partition arrays have the same bytes and rules share a kept encoding.
_LAYOUT = {0: 0, 1: 1, 2: 1, 3: 1, 4: 1, 5: 5, 6: 6, 7: 7, 8: 7, 9: 9, 10: 9, 11: 9, 12: 9}


def _brokers(ctx) -> list:
    """The live brokers on the request's listener, by node id.

    Until the controller's first UpdateMetadata reaches it, a (re)started broker knows no
    live broker, and Kafka 3.9 in ZooKeeper mode answers an empty list then.  The Java client
    ignores such an answer; librdkafka 2.x drops every broker it knows that the list leaves
    out, its bootstrap servers too, and is left with none to ask again: a consumer whose
    fetch went to a leader elected a moment before (UNKNOWN_TOPIC_ID, so it asks that broker
    for metadata) never fetches again.  So while it knows no broker, a broker lists itself."""
    nodes = ctx.services.cache.brokers_for(ctx.listener)
    if nodes:
        return [_R.MetadataResponseBroker(node_id=b.node_id, host=b.host, port=b.port,
                                          rack=b.rack)
                for b in sorted(nodes.values(), key=lambda b: b.node_id)]
    config = ctx.services.config
    return [_R.MetadataResponseBroker(node_id=ctx.services.node_id, host=e.host, port=e.port,
                                      rack=config["broker.rack"])
            for e in membership.advertised_endpoints(config)
            if ctx.listener is None or e.listener_name == ctx.listener][:1]


def handle(ctx, request):
    services = ctx.services
    cache = services.cache
    version = ctx.api_version
    if version in (10, 11) and request.topics:
        for wanted in request.topics:
            if wanted.name is None or (wanted.topic_id is not None and wanted.topic_id.int):
                return _invalid_request(ctx, request)
    allow_auto = request.allow_auto_topic_creation if version >= 4 else True
    unknown_ids, topics, denied = [], [], []
    kept: dict[int, bytes] = {}     # id(topic answer) -> its encoded partition array
    if request.topics is None or (version == 0 and not request.topics):
        names = sorted(cache.topics)
        if services.authorizer is not None:
            names = sorted(authz.filter_allowed(ctx, authz.DESCRIBE, authz.TOPIC, names))
        topics = [_topic(ctx, cache.topics[name], kept) for name in names]
    elif any(t.topic_id is not None and t.topic_id.int for t in request.topics):
        unknown_ids, topics = _by_id(ctx, request.topics, kept)
        if services.authorizer is not None:
            allowed = authz.filter_allowed(ctx, authz.DESCRIBE, authz.TOPIC, [t.name for t in topics])
            denied = [_error_topic(ErrorCode.TOPIC_AUTHORIZATION_FAILED, None, t.topic_id)
                      for t in topics if t.name not in allowed]
            topics = [t for t in topics if t.name in allowed]
    else:
        names = [t.name for t in request.topics]
        if services.authorizer is not None:
            names, denied = _authorized_names(ctx, names, allow_auto)
        topics = _by_name(ctx, names, allow_auto, kept)
    topics += denied
    if version >= 8 and request.include_topic_authorized_operations:
        for topic in topics:
            if topic.error_code == ErrorCode.NO_ERROR or services.authorizer is None:
                topic.authorized_operations = authz.authorized_operations(
                    ctx, authz.TOPIC, topic.name, TOPIC_OPERATIONS)
    response = ctx.response(
        throttle_time_ms=0,
        brokers=_brokers(ctx),
        cluster_id=cache.cluster_id,
        controller_id=cache.controller_id,
        topics=unknown_ids + topics,
        authorized_operations=(authz.authorized_operations(ctx, authz.CLUSTER, "kafka-cluster",
                                                           CLUSTER_OPERATIONS)
                               if 8 <= version <= 10 and request.include_cluster_authorized_operations
                               else None),
    )
    if not kept:
        return response
    flexible = _R.flexible_version_q(version)
    return Spliced(response, kept, _TOPIC_STRUCT,
                   top_tail=(4 if 8 <= version <= 10 else 0) + (1 if flexible else 0),
                   topic_tail=_topic_tail(version))


def _authorized_names(ctx, names: list[str], allow_auto: bool):
    """Kafka's order of checks: DESCRIBE on each named topic, then CREATE (on CLUSTER,
    else per topic) for the missing ones auto-creation would create.  Returns the names
    to answer normally and the error answers, create-denied before describe-denied."""
    names = list(dict.fromkeys(names))
    allowed = authz.filter_allowed(ctx, authz.DESCRIBE, authz.TOPIC, names)
    cache = ctx.services.cache
    missing = [n for n in names if n in allowed and cache.topic(n) is None]
    no_create: list[str] = []
    if (missing and allow_auto and ctx.services.config["auto.create.topics.enable"]
            and not authz.cluster(ctx, authz.CREATE)):
        may = authz.filter_allowed(ctx, authz.CREATE, authz.TOPIC, missing)
        no_create = [n for n in missing if n not in may]
    denied = ([_error_topic(ErrorCode.TOPIC_AUTHORIZATION_FAILED, n) for n in no_create]
              + [_error_topic(ErrorCode.TOPIC_AUTHORIZATION_FAILED, n, None, internal=False)
                 for n in names if n not in allowed])
    return [n for n in names if n in allowed and n not in no_create], denied


def _invalid_request(ctx, request):
    """Kafka's error response to a v10-11 request naming a topic by id (ids are only
    served from v12): every topic INVALID_REQUEST, no brokers, no cluster id."""
    return ctx.response(
        throttle_time_ms=0, brokers=[], cluster_id=None, controller_id=-1,
        topics=[_R.MetadataResponseTopic(error_code=ErrorCode.INVALID_REQUEST,
                                         name=t.name or "", topic_id=t.topic_id,
                                         is_internal=False, partitions=[],
                                         authorized_operations=None)
                for t in request.topics],
        authorized_operations=None)


def _by_id(ctx, wanted, kept: dict[int, bytes]):
    """v12+ topics asked by id (names in the same request are then ignored, as in
    Kafka): unknown ids first, then the known topics, each once."""
    cache = ctx.services.cache
    ids = dict.fromkeys(t.topic_id for t in wanted if t.topic_id is not None and t.topic_id.int)
    unknown = [_error_topic(ErrorCode.UNKNOWN_TOPIC_ID, None, i) for i in ids
               if cache.topic_name(i) is None]
    names = dict.fromkeys(cache.topic_name(i) for i in ids if cache.topic_name(i) is not None)
    return unknown, [_topic(ctx, cache.topic(name), kept) for name in names]


def _by_name(ctx, names: list[str], allow_auto: bool, kept: dict[int, bytes]):
    """Topics asked by name, in Kafka's order: each name once (Kafka collects them in a
    set), the existing topics first, then the missing ones -- with auto-creation, those
    that cannot be created (illegal names) before those being created."""
    cache = ctx.services.cache
    names = list(dict.fromkeys(names))
    found = [_topic(ctx, cache.topic(n), kept) for n in names if cache.topic(n) is not None]
    missing = [n for n in names if cache.topic(n) is None]
    if not (allow_auto and ctx.services.config["auto.create.topics.enable"]):
        return found + [_error_topic(ErrorCode.INVALID_TOPIC_EXCEPTION if invalid_topic_reason(n)
                                     else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, n)
                        for n in missing]
    illegal = [n for n in missing if invalid_topic_reason(n)]
    return (found + [_error_topic(ErrorCode.INVALID_TOPIC_EXCEPTION, n) for n in illegal]
            + [_auto_create(ctx, n) for n in missing if n not in illegal])


def _auto_create(ctx, name: str):
    """Create a missing topic (an internal one with its coordinator's settings, as
    Kafka's AutoTopicCreationManager does); answered LEADER_NOT_AVAILABLE so the
    client asks again."""
    services = ctx.services
    try:
        if name == OFFSETS_TOPIC:
            services.groups.ensure_topic()
        elif name == TRANSACTION_STATE_TOPIC and services.txn_coordinator is not None:
            services.txn_coordinator.ensure_topic()
        elif name == SHARE_GROUP_STATE_TOPIC:
            services.share_coordinator.ensure_topic()
        elif is_internal(name):
            return _error_topic(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name)
        else:
            # Counted in the client's controller mutation quota, which never refuses nor
            # throttles here (Kafka's permissive quota for auto-created topics).
            services.admin.auto_create_topic(name, mutation_quota.quota_for(ctx))
    except KafkaError as err:
        if err.code != ErrorCode.TOPIC_ALREADY_EXISTS:
            return _error_topic(err.code, name)
    return _error_topic(ErrorCode.LEADER_NOT_AVAILABLE, name)


def _error_topic(code: int, name: str | None, topic_id=None, internal: bool | None = None):
    return _R.MetadataResponseTopic(error_code=code, name=name, topic_id=topic_id,
                                    is_internal=is_internal(name) if internal is None else internal,
                                    partitions=[],
                                    authorized_operations=None)


def _topic(ctx, topic, kept: dict[int, bytes] | None = None):
    """A topic's answer; with ``kept``, its partitions stay empty and their encoded
    array goes to ``kept`` (for ``Spliced``) whenever it may be kept."""
    answer = _R.MetadataResponseTopic(
        error_code=ErrorCode.NO_ERROR, name=topic.name, topic_id=topic.topic_id,
        is_internal=topic.internal, partitions=[],
        authorized_operations=None)
    encoded = _kept_partitions(ctx, topic, answer) if kept is not None else None
    if encoded is None:
        answer.partitions = _partitions(ctx, topic)
    else:
        kept[id(answer)] = encoded
    return answer


def _partitions(ctx, topic) -> list:
    nodes = ctx.services.cache.brokers_for(ctx.listener)
    return [_partition(ctx, nodes, topic.name, index, topic.partitions[index])
            for index in sorted(topic.partitions)]


class _Kept:
    """Encoded partition arrays of one metadata cache at one generation."""

    __slots__ = ("generation", "arrays")

    def __init__(self, generation: int) -> None:
        self.generation = generation
        # (topic, layout, listener) -> (TopicMetadata, partition count, array bytes)
        self.arrays: dict[tuple, tuple] = {}


# One table per MetadataCache (in-process clusters run several brokers in a process).
_KEPT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _kept_partitions(ctx, topic, answer) -> bytes | None:
    """The topic's encoded partition array for this request's layout and listener,
    encoded now if not kept; None while a local log dir is offline (module docstring)."""
    services = ctx.services
    logs = services.log_manager
    if logs is None or logs.offline_dirs:
        return None
    cache = services.cache
    table = _KEPT.get(cache)
    if table is None or table.generation != cache.generation:
        table = _KEPT[cache] = _Kept(cache.generation)
    key = (topic.name, _LAYOUT[ctx.api_version], ctx.listener)
    entry = table.arrays.get(key)
    # The identity and size checks guard against a cache changed without its generation.
    if entry is not None and entry[0] is topic and entry[1] == len(topic.partitions):
        return entry[2]
    encoded = _encode_partitions(ctx.api_version, answer, _partitions(ctx, topic))
    table.arrays[key] = (topic, len(topic.partitions), encoded)
    return encoded


def _topic_tail(version: int) -> int:
    """Bytes after a topic's partition array: authorized operations, tagged fields."""
    return (4 if version >= 8 else 0) + (1 if _R.flexible_version_q(version) else 0)


def _encode_partitions(version: int, answer, partitions: list) -> bytes:
    return cut_array(version, _R.flexible_version_q(version), _TOPIC_STRUCT, answer,
                     _topic_tail(version), partitions)


def _partition(ctx, nodes, name: str, index: int, state):
    """One partition as Kafka's getPartitionMetadata answers it (module docstring)."""
    services = ctx.services
    version = ctx.api_version
    offline = list(state.offline_replicas)
    isr = list(state.isr)
    leader = state.leader
    local = services.replica_manager.partitions.get((name, index))
    if local is not None and local.log.offline:
        # This broker's failed log dir: offline here before the controller says so.
        if services.node_id not in offline:
            offline.append(services.node_id)
        isr = [r for r in isr if r != services.node_id]
        if leader == services.node_id:
            leader = -1
    replicas = list(state.replicas)
    if version == 0:
        replicas = [r for r in replicas if r in nodes]
        isr_shown = [r for r in isr if r in nodes]
    else:
        isr_shown = isr
    if leader not in nodes:
        if version >= 6 and leader != -1 and services.cache.is_alive(leader):
            error = ErrorCode.LISTENER_NOT_FOUND
        else:
            error = ErrorCode.LEADER_NOT_AVAILABLE
        leader = -1
    elif len(replicas) < len(state.replicas) or len(isr_shown) < len(isr):
        error = ErrorCode.REPLICA_NOT_AVAILABLE
    else:
        error = ErrorCode.NO_ERROR
    return _R.MetadataResponseTopic.MetadataResponsePartition(
        error_code=error, partition_index=index, leader_id=leader,
        leader_epoch=state.leader_epoch, replica_nodes=replicas, isr_nodes=isr_shown,
        offline_replicas=offline)
