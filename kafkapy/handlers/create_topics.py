"""CreateTopics (key 19): validate and create topics (Kafka 3.9 ZooKeeper mode).

Versions 0-7 (Kafka 3.9).  A broker that is not the active controller answers
every topic NOT_CONTROLLER (the client retries on the controller).  On the
controller, per topic: each entry of a name given twice ->
INVALID_REQUEST ("Found multiple entries for this topic."), as does
``__cluster_metadata``; then in ZkAdminManager's order: known to this broker ->
TOPIC_ALREADY_EXISTS; a null config value -> INVALID_CONFIG; both counts and
explicit assignments -> INVALID_REQUEST; partitions/replication factor -1 take
the broker defaults (num.partitions, default.replication.factor); the
assignment (partitions < 1 -> INVALID_PARTITIONS, replication factor above the
live brokers -> INVALID_REPLICATION_FACTOR); illegal or colliding name ->
INVALID_TOPIC_EXCEPTION; in the store -> TOPIC_ALREADY_EXISTS; a bad manual
assignment -> INVALID_REPLICA_ASSIGNMENT; a bad config -> INVALID_CONFIG with a
message naming it.  validate_only checks everything and creates nothing.
v5+ answers with the partition count, replication factor and the topic's
configs; v7 with the topic id.

The znodes are written by ``services.admin``; the controller brings the topic
online through its watches, and the answer waits (Kafka's DelayedCreatePartitions)
until this broker's metadata cache shows a leader for every partition, or
timeout_ms passes: then REQUEST_TIMED_OUT (topic id kept, counts -1, no configs).
This is Kafka 3.9's ZooKeeper-mode behaviour (ZkAdminManager.createTopics puts a
DelayedCreatePartitions in the topic purgatory whenever timeout_ms > 0); KRaft answers
once the controller committed the records, before any broker applied them, so its
answer for a 10,000-partition topic comes much sooner.  Here the wait is the whole
pipeline (state znodes in batched multis, one LeaderAndIsr and one UpdateMetadata for
the topic, the logs created): its cost, not the wait, is what to cut.
Manual assignments may name unknown brokers, or none, as in Kafka's ZooKeeper
mode: such partitions get no leader, so their topic times out.  With
timeout_ms <= 0 every created topic is answered REQUEST_TIMED_OUT at once, as
Kafka does.  A request asking for more than 10,000 partitions
in all is refused whole with POLICY_VIOLATION before anything is looked at, as
Kafka's controller bounds a batch (MAX_PARTITIONS_PER_BATCH).

The topics that pass those first checks are created in the order of Kafka's toCreate map
(a Scala mutable.HashMap, ``jvm.scala_mutable_hash_order``), each counting its partitions
in the client's controller mutation quota (``quota.controller_mutation``; validate_only
counts nothing): from v6 the quota is strict, and once it is exhausted the next topics are
answered THROTTLING_QUOTA_EXCEEDED (no message); below v6 it is permissive.  The answer
carries the quota's throttle time, and the connection is muted for it.
"""
from __future__ import annotations

from kafkapy.config.describe import describe_topic
from kafkapy.handlers import _mutation_quota as mutation_quota
from kafkapy.jvm import scala_mutable_hash_order, string_hash
from kafkapy.security import authz
from kafkapy.handlers.common import repeated
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.protocol.messages import RESPONSES

API_KEY = 19
MIN_VERSION = 0
MAX_VERSION = 7

CLUSTER_METADATA_TOPIC = "__cluster_metadata"  # KRaft's; never created through the API
MAX_PARTITIONS_PER_REQUEST = 10_000
STRICT_QUOTA_SINCE = 6      # older versions: the controller mutation quota is permissive
TOO_MANY_PARTITIONS = "Excessively large number of partitions per request."

_R = RESPONSES[API_KEY]
_Result = _R.CreatableTopicResult
_Config = _Result.CreatableTopicConfigs


async def handle(ctx, request):
    if not ctx.services.controller.is_active:
        return ctx.response(throttle_time_ms=0, topics=[
            _failed(t.name, ErrorCode.NOT_CONTROLLER, None) for t in request.topics])
    if _requested_partitions(ctx, request) > MAX_PARTITIONS_PER_REQUEST:
        return ctx.response(throttle_time_ms=0, topics=[
            _failed(t.name, ErrorCode.POLICY_VIOLATION, TOO_MANY_PARTITIONS)
            for t in request.topics])
    duplicated = repeated(t.name for t in request.topics)
    creatable = None
    if not authz.cluster(ctx, authz.CREATE):
        # Kafka: CREATE on the cluster, else on each topic.
        creatable = authz.filter_allowed(ctx, authz.CREATE, authz.TOPIC, [t.name for t in request.topics])
    results = {}
    for topic in request.topics:
        if topic.name == CLUSTER_METADATA_TOPIC:
            results[topic.name] = _failed(topic.name, ErrorCode.INVALID_REQUEST,
                                          f"Creation of internal topic {CLUSTER_METADATA_TOPIC} "
                                          f"is prohibited.")
        elif topic.name in duplicated:
            results[topic.name] = _failed(topic.name, ErrorCode.INVALID_REQUEST,
                                          "Found multiple entries for this topic.")
        elif creatable is not None and topic.name not in creatable:
            results[topic.name] = _failed(topic.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                          "Authorization failed.")
    quota = mutation_quota.quota_for(ctx, STRICT_QUOTA_SINCE)
    # Kafka creates the others in its toCreate map's order (a Scala mutable.HashMap):
    # which topics the controller mutation quota lets through depends on it.
    wanted = {t.name: t for t in request.topics if t.name not in results}
    for name in scala_mutable_hash_order(wanted, string_hash):
        results[name] = _create(ctx, request, wanted[name], quota)
    answers = [results[t.name] for t in request.topics]
    await _await_leaders(ctx, request, answers)
    if ctx.services.authorizer is not None and ctx.api_version >= 5:
        _hide_configs(ctx, answers)
    return ctx.response(throttle_time_ms=mutation_quota.throttle(ctx, quota), topics=answers)


async def _await_leaders(ctx, request, results) -> None:
    created = [r for r in results if r.error_code == 0]
    late = await late_topics(ctx, request, {r.name: r.num_partitions for r in created})
    for r in created:
        if r.name in late:
            # As Kafka resets a failed creation's answer; the topic id stays.
            r.error_code, r.error_message = ErrorCode.REQUEST_TIMED_OUT, None
            r.num_partitions, r.replication_factor, r.configs = -1, -1, []


async def late_topics(ctx, request, created: dict[str, int]) -> set[str]:
    """Of the topics ``created`` (name -> partition count), those answered REQUEST_TIMED_OUT
    (Kafka's DelayedCreatePartitions, CreateTopics and CreatePartitions alike): all when
    timeout_ms <= 0 (Kafka does not wait then, and says so), else those whose partitions
    lack a leader in this broker's metadata cache at timeout_ms; none for validate_only."""
    if request.validate_only or not created:
        return set()
    if request.timeout_ms <= 0:
        return set(created)
    return set(await ctx.services.admin.wait_for_topics(created, request.timeout_ms))


def _requested_partitions(ctx, request) -> int:
    """Kafka's count: the assignments when given, else the count (-1: the default)."""
    default = ctx.services.config["num.partitions"]
    total = 0
    for topic in request.topics:
        if topic.assignments:
            total += len(topic.assignments)
        elif topic.num_partitions == -1:
            total += default
        elif topic.num_partitions > 0:
            total += topic.num_partitions
    return total


def _create(ctx, request, topic, quota):
    services = ctx.services
    partitions, factor = topic.num_partitions, topic.replication_factor
    assignments = {a.partition_index: list(a.broker_ids) for a in topic.assignments}
    try:
        configs = {c.name: c.value for c in topic.configs}
        services.admin.check_request(topic.name, configs)
        if assignments and (partitions != -1 or factor != -1):
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             "Both numPartitions or replicationFactor and replicasAssignments "
                             "were set. Both cannot be used at the same time.")
        if partitions == -1:
            partitions = services.config["num.partitions"]
        if factor == -1:
            factor = services.config["default.replication.factor"]
        created = services.admin.create_topic(topic.name, partitions, factor, assignments,
                                            configs, validate_only=request.validate_only,
                                            quota=quota)
    except KafkaError as err:
        return _failed(topic.name, err.code, err.message)
    first = next(iter(created.partitions.values()), None)
    # Kafka gives a topic its id only when it creates it, so validate_only answers none.
    topic_id = None if request.validate_only else created.topic_id
    return _Result(name=topic.name, topic_id=topic_id, error_code=0, error_message=None,
                   num_partitions=len(created.partitions),
                   replication_factor=len(first.replicas) if first else -1,
                   configs=_configs(services, created.configs) if ctx.api_version >= 5 else [])


def _hide_configs(ctx, results) -> None:
    """Kafka answers a created topic's configs and layout only to a principal with
    DESCRIBE_CONFIGS on it; else topic_config_error_code TOPIC_AUTHORIZATION_FAILED."""
    created = [r.name for r in results if r.error_code == 0]
    allowed = authz.filter_allowed(ctx, authz.DESCRIBE_CONFIGS, authz.TOPIC, created)
    for r in results:
        if r.error_code == 0 and r.name not in allowed:
            r.topic_config_error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            r.configs, r.num_partitions, r.replication_factor = None, -1, -1


def _configs(services, overrides: dict[str, str]):
    return [_Config(name=e.name, value=e.value, read_only=e.read_only,
                    config_source=e.source, is_sensitive=e.is_sensitive)
            for e in describe_topic(services.config, overrides)]


def _failed(name: str, code: int, message: str | None):
    return _Result(name=name, topic_id=None, error_code=code, error_message=message,
                   num_partitions=-1, replication_factor=-1, configs=[])
