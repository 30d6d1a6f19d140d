"""CreatePartitions (key 37): grow a topic's partition count (never shrink).

Versions 0-3.  Fewer or equal partitions -> INVALID_PARTITIONS; assignments
naming unknown brokers, or not matching the new partitions in number or
replication factor -> INVALID_REPLICA_ASSIGNMENT; unknown topic ->
UNKNOWN_TOPIC_OR_PARTITION.  A topic named twice gets one INVALID_REQUEST
result, after the other topics' results (Kafka's order).  With timeout_ms <= 0
the partitions are added but answered REQUEST_TIMED_OUT, as Kafka does.  Growing a topic by more
than 10,000 partitions in one request is refused with POLICY_VIOLATION, the bound
Kafka's controller puts on one batch.
"""
from __future__ import annotations

from kafkapy.handlers.common import repeated
from kafkapy.handlers.create_topics import MAX_PARTITIONS_PER_REQUEST, TOO_MANY_PARTITIONS
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.protocol.messages import RESPONSES

API_KEY = 37
MIN_VERSION = 0
MAX_VERSION = 3

_R = RESPONSES[API_KEY]
_Result = _R.CreatePartitionsTopicResult


def handle(ctx, request):
    duplicated = repeated(t.name for t in request.topics)
    results = [_create(ctx, request, topic) for topic in request.topics
               if topic.name not in duplicated]
    if request.timeout_ms <= 0 and not request.validate_only:
        # Kafka does not wait for the new partitions' leaders then, and says so.
        for r in results:
            if r.error_code == 0:
                r.error_code = ErrorCode.REQUEST_TIMED_OUT
    # Kafka answers each repeated name once, after the others.
    results += [_Result(name=name, error_code=ErrorCode.INVALID_REQUEST,
                        error_message="Duplicate topic in request.")
                for name in dict.fromkeys(t.name for t in request.topics if t.name in duplicated)]
    return ctx.response(throttle_time_ms=0, results=results)


def _create(ctx, request, topic):
    # A null assignments array means "let the controller place them"; an empty one is
    # checked (and refused) like any other manual assignment, as in Kafka.
    assignments = (None if topic.assignments is None
                   else [list(a.broker_ids) for a in topic.assignments])
    current = ctx.broker.cache.topic(topic.name)
    if current is not None and topic.count - len(current.partitions) > MAX_PARTITIONS_PER_REQUEST:
        return _Result(name=topic.name, error_code=ErrorCode.POLICY_VIOLATION,
                       error_message=TOO_MANY_PARTITIONS)
    try:
        ctx.broker.controller.create_partitions(topic.name, topic.count, assignments,
                                                validate_only=request.validate_only)
    except KafkaError as err:
        return _Result(name=topic.name, error_code=err.code, error_message=err.message)
    return _Result(name=topic.name, error_code=0, error_message=None)
