"""CreatePartitions (key 37): grow a topic's partition count (never shrink).

Versions 0-3.  Fewer or equal partitions -> INVALID_PARTITIONS; assignments
that do not match the new partitions -> INVALID_REPLICA_ASSIGNMENT; a topic
named twice -> INVALID_REQUEST; unknown topic -> UNKNOWN_TOPIC_OR_PARTITION.
"""
from __future__ import annotations

from kafkapy.handlers.common import repeated
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.protocol.messages import RESPONSES

API_KEY = 37
MIN_VERSION = 0
MAX_VERSION = 3

_R = RESPONSES[API_KEY]
_Result = _R.CreatePartitionsTopicResult


def handle(ctx, request):
    duplicated = repeated(t.name for t in request.topics)
    results = []
    for topic in request.topics:
        if topic.name in duplicated:
            results.append(_Result(name=topic.name, error_code=ErrorCode.INVALID_REQUEST,
                                   error_message="Duplicate topic in request."))
            continue
        assignments = ([list(a.broker_ids) for a in topic.assignments]
                       if topic.assignments else None)
        try:
            ctx.broker.controller.create_partitions(topic.name, topic.count, assignments,
                                                    validate_only=request.validate_only)
        except KafkaError as err:
            results.append(_Result(name=topic.name, error_code=err.code,
                                   error_message=err.message))
            continue
        results.append(_Result(name=topic.name, error_code=0, error_message=None))
    return ctx.response(throttle_time_ms=0, results=results)
