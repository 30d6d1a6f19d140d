"""Produce (key 0): append record batches to partition leaders.

Versions: advertised 0-11 like Kafka 3.9's maximum, but v0-2 (message format
v0/v1) are rejected per partition with UNSUPPORTED_VERSION as Kafka 4 does;
old librdkafka checks that v0 is in the range before it compresses.
Per partition: unknown topic -> UNKNOWN_TOPIC_OR_PARTITION; not the leader ->
NOT_LEADER_OR_FOLLOWER; batch checks (CRC32C -> CORRUPT_MESSAGE, size ->
MESSAGE_TOO_LARGE, one magic-2 batch -> INVALID_RECORD, codec ->
UNSUPPORTED_COMPRESSION_TYPE); idempotent sequence checks (duplicate ->
original offsets, gap -> OUT_OF_ORDER_SEQUENCE_NUMBER, stale epoch ->
INVALID_PRODUCER_EPOCH).  acks must be -1, 0 or 1 (INVALID_REQUIRED_ACKS).
acks=0 gets no response; if anything failed the connection is closed instead,
as Kafka does.  acks=-1 completes when the high watermark passes the appended
offsets (at once with a single replica) or at timeout_ms.
"""
from __future__ import annotations

from kafkapy.handlers.base import CloseConnection
from kafkapy.metadata.topics import is_internal
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.protocol.messages import RESPONSES
from kafkapy.replication.partition import AppendResult

API_KEY = 0
MIN_VERSION = 0
MAX_VERSION = 11
REJECTED_BELOW = 3

_R = RESPONSES[API_KEY]
_TopicResponse = _R.TopicProduceResponse
_PartitionResponse = _TopicResponse.PartitionProduceResponse


def handle(ctx, request):
    version = ctx.api_version
    acks = request.acks
    if version < REJECTED_BELOW:
        error = ErrorCode.UNSUPPORTED_VERSION
    elif acks not in (-1, 0, 1):
        error = ErrorCode.INVALID_REQUIRED_ACKS
    elif request.transactional_id is not None and not ctx.broker.transactions_enabled:
        error = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    else:
        error = None
    if error is not None:
        return _all_failed(ctx, request, error)
    results = _append(ctx, request)
    if acks == 0:
        if any(r.error_code for _, _, r in results):
            raise CloseConnection("acks=0 produce failed")
        return None
    if acks == -1:
        return ctx.broker.await_replication(results, request.timeout_ms,
                                            lambda final: _response(ctx, final))
    return _response(ctx, results)


def _append(ctx, request) -> list[tuple[str, int, AppendResult]]:
    replicas = ctx.broker.replica_manager
    version = ctx.api_version
    results = []
    for topic_data in request.topic_data:
        name = topic_data.name
        for part in topic_data.partition_data:
            results.append((name, part.index, _append_one(ctx, replicas, name, part, version)))
    return results


def _append_one(ctx, replicas, name: str, part, version: int) -> AppendResult:
    if is_internal(name) and not ctx.broker.may_write_internal(ctx):
        return AppendResult(ErrorCode.INVALID_TOPIC_EXCEPTION)
    try:
        partition = replicas.leader_partition(name, part.index)
    except KafkaError as err:
        return AppendResult(err.code)
    if part.records is None:
        return AppendResult(ErrorCode.INVALID_RECORD, error_message="null records")
    result = partition.append_as_leader(part.records, version)
    if result.error_code == 0:
        replicas.appended((name, part.index))
    return result


def _response(ctx, results):
    by_topic: dict[str, list] = {}
    for name, index, r in results:
        by_topic.setdefault(name, []).append(_PartitionResponse(
            index=index, error_code=r.error_code, base_offset=r.base_offset,
            log_append_time_ms=r.log_append_time_ms, log_start_offset=r.log_start_offset,
            record_errors=[], error_message=r.error_message))
    return ctx.response(
        responses=[_TopicResponse(name=name, partition_responses=parts)
                   for name, parts in by_topic.items()],
        throttle_time_ms=0)


def _all_failed(ctx, request, error: int):
    results = [(t.name, p.index, AppendResult(error))
               for t in request.topic_data for p in t.partition_data]
    if request.acks == 0:
        raise CloseConnection(f"acks=0 produce failed: {ErrorCode(error).name}")
    return _response(ctx, results)
