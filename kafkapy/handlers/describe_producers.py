"""DescribeProducers (key 61): the active producers of partitions this broker leads.

Version 0.  Per partition: UNKNOWN_TOPIC_OR_PARTITION / NOT_LEADER_OR_FOLLOWER,
else each producer id in the partition's producer state with its epoch, last
sequence, last timestamp, coordinator epoch and the first offset of its open
transaction (-1 if none).
"""
from __future__ import annotations

from kafkapy.protocol.errors import KafkaError
from kafkapy.protocol.messages import RESPONSES

API_KEY = 61
MIN_VERSION = 0
MAX_VERSION = 0

_Topic = RESPONSES[API_KEY].TopicResponse
_Partition = _Topic.PartitionResponse
_Producer = _Partition.ProducerState


def handle(ctx, request):
    replicas = ctx.broker.replica_manager
    topics = []
    for topic in request.topics:
        parts = []
        for index in topic.partition_indexes:
            try:
                partition = replicas.leader_partition(topic.name, index)
            except KafkaError as err:
                parts.append(_Partition(partition_index=index, error_code=err.code,
                                        error_message=err.message, active_producers=[]))
                continue
            producers = [
                _Producer(producer_id=e.producer_id, producer_epoch=e.epoch,
                          last_sequence=e.last_seq, last_timestamp=e.last_timestamp,
                          coordinator_epoch=e.coordinator_epoch,
                          current_txn_start_offset=e.current_txn_first_offset)
                for e in partition.log.producer_state.producers.values()]
            parts.append(_Partition(partition_index=index, error_code=0, error_message=None,
                                    active_producers=producers))
        topics.append(_Topic(name=topic.name, partitions=parts))
    return ctx.response(throttle_time_ms=0, topics=topics)
