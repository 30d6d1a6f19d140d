"""ListOffsets (key 2): offsets by timestamp, earliest, latest and max timestamp.

Versions 1 (Kafka 4.0's minimum) to 9 (Kafka 3.9).  Special timestamps:
-2 earliest (log start offset), -1 latest (high watermark, or the last stable
offset for read_committed), -3 max timestamp (v7+: the offset and timestamp of
the record with the largest timestamp), -4 earliest local (v8+: same as
earliest without tiered storage).  Any other timestamp: the first offset whose
timestamp is >= it, or offset -1 / timestamp -1 when none is.
A partition asked for twice gets INVALID_REQUEST for both; a follower-only
replica id or a non-leader gets NOT_LEADER_OR_FOLLOWER.
"""
from __future__ import annotations

from kafkapy.handlers.common import repeated
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.protocol.messages import RESPONSES

API_KEY = 2
MIN_VERSION = 1
MAX_VERSION = 9

EARLIEST, LATEST, MAX_TIMESTAMP, EARLIEST_LOCAL = -2, -1, -3, -4
READ_COMMITTED = 1

_R = RESPONSES[API_KEY]
_Topic = _R.ListOffsetsTopicResponse
_Partition = _Topic.ListOffsetsPartitionResponse


def handle(ctx, request):
    topics = []
    for topic in request.topics:
        duplicated = repeated(p.partition_index for p in topic.partitions)
        parts = [_lookup(ctx, request, topic.name, p, p.partition_index in duplicated)
                 for p in topic.partitions]
        topics.append(_Topic(name=topic.name, partitions=parts))
    return ctx.response(throttle_time_ms=0, topics=topics)


def _lookup(ctx, request, name, p, duplicated: bool):
    index = p.partition_index
    if duplicated:
        return _result(index, ErrorCode.INVALID_REQUEST)
    try:
        partition = ctx.broker.replica_manager.leader_partition(name, index,
                                                                p.current_leader_epoch)
    except KafkaError as err:
        return _result(index, err.code)
    log = partition.log
    ts = p.timestamp
    epoch = partition.leader_epoch
    if ts in (EARLIEST, EARLIEST_LOCAL):
        return _result(index, 0, -1, log.log_start_offset, epoch)
    if ts == LATEST:
        latest = (partition.last_stable_offset if request.isolation_level == READ_COMMITTED
                  else partition.high_watermark)
        return _result(index, 0, -1, latest, epoch)
    if ts == MAX_TIMESTAMP:
        found = log.max_timestamp_and_offset()
    elif ts < 0:
        return _result(index, ErrorCode.INVALID_REQUEST)
    else:
        found = log.offset_for_timestamp(ts)
    if found is None or found[0] >= partition.high_watermark:
        return _result(index, 0, -1, -1, -1)
    offset, timestamp = found
    return _result(index, 0, timestamp, offset, epoch)


def _result(index: int, error: int, timestamp: int = -1, offset: int = -1, epoch: int = -1):
    return _Partition(partition_index=index, error_code=error, timestamp=timestamp,
                      offset=offset, leader_epoch=epoch)
