"""AddPartitionsToTxn (key 24): add partitions to the producer's ongoing transaction.

Versions 0-3 (the client versions; v4-5 are broker-to-broker batches, not
served).  Partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION and then
every other partition OPERATION_NOT_ATTEMPTED (nothing is added); otherwise
every partition gets the coordinator's answer (see
``kafkapy.coordinator.transaction.coordinator``), PRODUCER_FENCED being sent as
INVALID_PRODUCER_EPOCH below v2.
"""
from __future__ import annotations

from kafkapy.handlers._txn import fenced_for_version, service
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES

API_KEY = 24
MIN_VERSION = 0
MAX_VERSION = 3

_R = RESPONSES[API_KEY]
_TopicResult = _R.AddPartitionsToTxnTopicResult
_PartitionResult = _TopicResult.AddPartitionsToTxnPartitionResult


def handle(ctx, request):
    topics = [(t.name, list(t.partitions)) for t in request.v3_and_below_topics]
    txns = service(ctx)
    if txns is None:
        return _respond(ctx, topics, lambda tp: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    cache = ctx.broker.cache
    unknown = {(name, p) for name, parts in topics for p in parts
               if cache.partition(name, p) is None}
    if unknown:
        return _respond(ctx, topics, lambda tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                        if tp in unknown else ErrorCode.OPERATION_NOT_ATTEMPTED)
    error = txns.coordinator.add_partitions(
        request.v3_and_below_transactional_id, request.v3_and_below_producer_id,
        request.v3_and_below_producer_epoch, [(n, p) for n, parts in topics for p in parts])
    error = fenced_for_version(error, ctx.api_version, 2)
    return _respond(ctx, topics, lambda tp: error)


def _respond(ctx, topics, error_of):
    return ctx.response(throttle_time_ms=0, results_by_topic_v3_and_below=[
        _TopicResult(name=name, results_by_partition=[
            _PartitionResult(partition_index=p, partition_error_code=error_of((name, p)))
            for p in parts])
        for name, parts in topics])
