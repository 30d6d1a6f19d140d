"""DescribeProducers (key 61): the active producers of partitions this broker leads.

Version 0.  Per topic, as Kafka checks it: an illegal name ->
INVALID_TOPIC_EXCEPTION with the reason, a topic the cluster does not have ->
UNKNOWN_TOPIC_OR_PARTITION with Kafka's default message, for each partition.
Per partition: UNKNOWN_TOPIC_OR_PARTITION / NOT_LEADER_OR_FOLLOWER without a
message, else each producer id in the partition's producer state, in Kafka's
(hash map) order, with its epoch, last sequence, last timestamp, coordinator
epoch and the first offset of its open transaction (-1 if none).
"""
from __future__ import annotations

from kafkapy.jvm import java_hash_order, long_hash
from kafkapy.metadata.topics import invalid_topic_reason
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.protocol.messages import RESPONSES
from kafkapy.security import authz

API_KEY = 61
MIN_VERSION = 0
MAX_VERSION = 0

_Topic = RESPONSES[API_KEY].TopicResponse
_Partition = _Topic.PartitionResponse
_Producer = _Partition.ProducerState


def handle(ctx, request):
    replicas = ctx.services.replica_manager
    topics = []
    for topic in request.topics:
        parts = []
        topic_error = _topic_error(ctx, topic.name)
        for index in topic.partition_indexes:
            if topic_error is not None:
                parts.append(_Partition(partition_index=index, error_code=topic_error[0],
                                        error_message=topic_error[1], active_producers=[]))
                continue
            try:
                partition = replicas.leader_partition(topic.name, index)
            except KafkaError as err:
                parts.append(_Partition(partition_index=index, error_code=err.code,
                                        error_message=None, active_producers=[]))
                continue
            producers = [
                _Producer(producer_id=e.producer_id, producer_epoch=e.epoch,
                          last_sequence=e.last_seq, last_timestamp=e.last_timestamp,
                          coordinator_epoch=e.coordinator_epoch,
                          current_txn_start_offset=e.current_txn_first_offset)
                for e in _java_hash_order(partition.log.producer_state.producers)]
            parts.append(_Partition(partition_index=index, error_code=0, error_message=None,
                                    active_producers=producers))
        topics.append(_Topic(name=topic.name, partitions=parts))
    return ctx.response(throttle_time_ms=0, topics=topics)


def _topic_error(ctx, name: str) -> tuple[int, str] | None:
    if not authz.allowed(ctx, authz.READ, authz.TOPIC, name):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."
    reason = invalid_topic_reason(name)
    if reason:
        return ErrorCode.INVALID_TOPIC_EXCEPTION, reason
    if ctx.services.cache.topic(name) is None:
        return (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                "This server does not host this topic-partition.")
    return None


def _java_hash_order(producers: dict) -> list:
    """The producers in the order Kafka lists them: its ProducerStateManager keeps them
    in a java.util.HashMap keyed by producer id, iterated bucket by bucket (a bucket is
    the spread Long hash masked by the table size, which starts at 16 and doubles past
    a 0.75 load), insertion order within a bucket."""
    return [producers[pid] for pid in java_hash_order(producers, long_hash)]
