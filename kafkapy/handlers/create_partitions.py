"""CreatePartitions (key 37): grow a topic's partition count (never shrink).

Versions 0-3, answered as Kafka 3.9's ZooKeeper-mode KafkaApis / ZkAdminManager:
a broker that is not the active controller answers every topic NOT_CONTROLLER.
On the controller: fewer or equal partitions -> INVALID_PARTITIONS; assignments
naming unknown brokers, or not matching the new partitions in number or
replication factor -> INVALID_REPLICA_ASSIGNMENT; unknown topic ->
UNKNOWN_TOPIC_OR_PARTITION; a topic queued for deletion -> INVALID_TOPIC_EXCEPTION;
a reassignment in progress -> REASSIGNMENT_IN_PROGRESS.  A topic named twice gets
one INVALID_REQUEST result, after the other topics' results, and a topic queued
for deletion comes last (Kafka's order).
Growing a topic by more than 10,000 partitions in one request is refused with
POLICY_VIOLATION, the bound Kafka's controller puts on one batch.

The new assignment is written to ``/brokers/topics/T`` (``services.admin``); the
answer waits until this broker's metadata cache shows a leader for every
partition of the topic (Kafka's DelayedCreatePartitions), else REQUEST_TIMED_OUT
at timeout_ms; with timeout_ms <= 0 the partitions are added but answered
REQUEST_TIMED_OUT at once, as Kafka does.  validate_only answers at once.

The partitions added count in the client's controller mutation quota
(``quota.controller_mutation``; validate_only counts nothing), topic by topic in request
order: from v3 the quota is strict (once it is exhausted the next topics are answered
THROTTLING_QUOTA_EXCEEDED, no message), below v3 permissive.  The answer carries the
quota's throttle time, and the connection is muted for it.
"""
from __future__ import annotations

from kafkapy.handlers import _mutation_quota as mutation_quota
from kafkapy.security import authz
from kafkapy.handlers.common import repeated
from kafkapy.handlers.create_topics import (MAX_PARTITIONS_PER_REQUEST, TOO_MANY_PARTITIONS,
                                            late_topics)
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.protocol.messages import RESPONSES

API_KEY = 37
MIN_VERSION = 0
MAX_VERSION = 3
STRICT_QUOTA_SINCE = 3      # older versions: the controller mutation quota is permissive

_R = RESPONSES[API_KEY]
_Result = _R.CreatePartitionsTopicResult


async def handle(ctx, request):
    if not ctx.services.controller.is_active:
        return ctx.response(throttle_time_ms=0, results=[
            _Result(name=name, error_code=ErrorCode.NOT_CONTROLLER, error_message=None)
            for name in dict.fromkeys(t.name for t in request.topics)])
    duplicated = repeated(t.name for t in request.topics)
    admin = ctx.services.admin
    queued = [t.name for t in request.topics
              if t.name not in duplicated and admin.is_queued_for_deletion(t.name)]
    created: dict[str, int] = {}
    refused: list[str] = []
    if ctx.services.authorizer is not None:
        names = [t.name for t in request.topics if t.name not in duplicated and t.name not in queued]
        allowed = authz.filter_allowed(ctx, authz.ALTER, authz.TOPIC, names)
        refused = list(dict.fromkeys(n for n in names if n not in allowed))
    quota = mutation_quota.quota_for(ctx, STRICT_QUOTA_SINCE)
    results = [_create(ctx, request, topic, created, quota) for topic in request.topics
               if topic.name not in duplicated and topic.name not in queued and topic.name not in refused]
    late = await late_topics(ctx, request, created)
    for r in results:
        if r.name in late:
            r.error_code, r.error_message = ErrorCode.REQUEST_TIMED_OUT, None
    # Kafka answers each repeated name once, after the others.
    results += [_Result(name=name, error_code=ErrorCode.INVALID_REQUEST,
                        error_message="Duplicate topic in request.")
                for name in dict.fromkeys(t.name for t in request.topics if t.name in duplicated)]
    results += [_Result(name=name, error_code=ErrorCode.INVALID_TOPIC_EXCEPTION,
                        error_message="The topic is queued for deletion.") for name in queued]
    results += [_Result(name=name, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                        error_message="The topic authorization is failed.") for name in refused]
    return ctx.response(throttle_time_ms=mutation_quota.throttle(ctx, quota), results=results)


def _create(ctx, request, topic, created: dict[str, int], quota):
    # A null assignments array means "let the controller place them"; an empty one is
    # checked (and refused) like any other manual assignment, as in Kafka.
    assignments = (None if topic.assignments is None
                   else [list(a.broker_ids) for a in topic.assignments])
    services = ctx.services
    current = services.cache.topic(topic.name)
    if current is not None and topic.count - len(current.partitions) > MAX_PARTITIONS_PER_REQUEST:
        return _Result(name=topic.name, error_code=ErrorCode.POLICY_VIOLATION,
                       error_message=TOO_MANY_PARTITIONS)
    try:
        assignment = services.admin.create_partitions(topic.name, topic.count, assignments,
                                                    validate_only=request.validate_only,
                                                    quota=quota)
    except KafkaError as err:
        return _Result(name=topic.name, error_code=err.code, error_message=err.message)
    created[topic.name] = len(assignment)
    return _Result(name=topic.name, error_code=0, error_message=None)
