"""DeleteRecords (key 21): move partitions' log start offsets forward.

Versions 0-2 (Kafka 3.9 and 4.0).  Per partition (Kafka's
Partition.deleteRecordsOnLeader): offset -1 means the high watermark; a
negative offset or one beyond the high watermark -> OFFSET_OUT_OF_RANGE; a
topic whose cleanup.policy lacks ``delete`` -> POLICY_VIOLATION; unknown
partition -> UNKNOWN_TOPIC_OR_PARTITION; not the leader ->
NOT_LEADER_OR_FOLLOWER.  On success the answer carries the low watermark (the
new log start offset; with a single replica, the leader's).  Records below it
are no longer served at once; the segments wholly below it are renamed
``.deleted`` by the next retention pass (log.retention.check.interval.ms) and
the log start offset is checkpointed to ``log-start-offset-checkpoint``.
"""
from __future__ import annotations

from kafkapy.security import authz
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.protocol.messages import RESPONSES

API_KEY = 21
MIN_VERSION = 0
MAX_VERSION = 2

HIGH_WATERMARK = -1

_R = RESPONSES[API_KEY]
_Topic = _R.DeleteRecordsTopicResult
_Partition = _Topic.DeleteRecordsPartitionResult


def handle(ctx, request):
    topics = []
    allowed = None
    if ctx.services.authorizer is not None:
        allowed = authz.filter_allowed(ctx, authz.DELETE, authz.TOPIC, [t.name for t in request.topics])
    for topic in request.topics:
        if allowed is not None and topic.name not in allowed:
            parts = [_Partition(partition_index=p.partition_index, low_watermark=-1,
                                error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED) for p in topic.partitions]
        else:
            parts = [_delete(ctx.services, topic.name, p.partition_index, p.offset)
                     for p in topic.partitions]
        topics.append(_Topic(name=topic.name, partitions=parts))
    return ctx.response(throttle_time_ms=0, topics=topics)


def _delete(services, topic: str, index: int, offset: int):
    try:
        partition = services.replica_manager.leader_partition(topic, index)
        log = partition.log
        if "delete" not in log.config.cleanup_policy:
            raise KafkaError(ErrorCode.POLICY_VIOLATION,
                             f"Records of partition {topic}-{index} can not be deleted due "
                             f"to the configured policy")
        hw = log.high_watermark
        target = hw if offset == HIGH_WATERMARK else offset
        if target < 0 or target > hw:
            raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE,
                             f"Cannot increment the log start offset to {target} of partition "
                             f"{topic}-{index} since it is larger than the high watermark {hw}")
        log.maybe_increment_log_start_offset(target)
        return _Partition(partition_index=index, low_watermark=log.log_start_offset,
                          error_code=0)
    except KafkaError as err:
        return _Partition(partition_index=index, low_watermark=-1, error_code=err.code)
