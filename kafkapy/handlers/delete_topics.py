"""DeleteTopics (key 20): delete topics by name (v1-5) or by name or id (v6).

Versions 1 (Kafka 4.0's minimum) to 6.  Unknown name ->
UNKNOWN_TOPIC_OR_PARTITION, unknown id -> UNKNOWN_TOPIC_ID, both name and id
or neither -> INVALID_REQUEST, delete.topic.enable=false ->
TOPIC_DELETION_DISABLED.  The logs are removed before the answer.
"""
from __future__ import annotations

from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES

API_KEY = 20
MIN_VERSION = 1
MAX_VERSION = 6

_R = RESPONSES[API_KEY]
_Result = _R.DeletableTopicResult


def handle(ctx, request):
    if ctx.api_version >= 6:
        wanted = [(t.name, t.topic_id) for t in request.topics]
    else:
        wanted = [(name, None) for name in request.topic_names]
    return ctx.response(throttle_time_ms=0,
                        responses=[_delete(ctx, name, topic_id) for name, topic_id in wanted])


def _delete(ctx, name, topic_id):
    broker = ctx.broker
    cache = broker.cache
    if (name is None) == (topic_id is None):
        return _Result(name=name, topic_id=topic_id, error_code=ErrorCode.INVALID_REQUEST,
                       error_message="Give either a topic name or a topic id.")
    if topic_id is not None:
        name = cache.topic_name(topic_id)
        if name is None:
            return _Result(name=None, topic_id=topic_id, error_code=ErrorCode.UNKNOWN_TOPIC_ID,
                           error_message=None)
    topic = cache.topic(name)
    if topic is None:
        return _Result(name=name, topic_id=topic_id,
                       error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, error_message=None)
    if not broker.config["delete.topic.enable"]:
        return _Result(name=name, topic_id=topic.topic_id,
                       error_code=ErrorCode.TOPIC_DELETION_DISABLED, error_message=None)
    broker.controller.delete_topic(name)
    return _Result(name=name, topic_id=topic.topic_id, error_code=0, error_message=None)
