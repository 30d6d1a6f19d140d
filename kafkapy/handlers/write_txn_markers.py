"""WriteTxnMarkers (key 27): the coordinator asks a partition leader to write markers.

Versions 0-1 (Kafka 3.9; v1 is v0 in the flexible encoding; v2, with
transaction.version, is Kafka 4's).  Each marker is written to each of its
partitions through ``kafkapy.coordinator.transaction.markers.write_markers``
(the path the local coordinator uses too), with a per-partition error code.
"""
from __future__ import annotations

from kafkapy.handlers._txn import service
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES

API_KEY = 27
MIN_VERSION = 0
MAX_VERSION = 1

_R = RESPONSES[API_KEY]
_Result = _R.WritableTxnMarkerResult
_TopicResult = _Result.WritableTxnMarkerTopicResult
_PartitionResult = _TopicResult.WritableTxnMarkerPartitionResult


def handle(ctx, request):
    txns = service(ctx)
    out = []
    for marker in request.markers:
        wanted = [(t.name, p) for t in marker.topics for p in t.partition_indexes]
        if txns is None:
            results = {tp: ErrorCode.CLUSTER_AUTHORIZATION_FAILED for tp in wanted}
        else:
            results = txns.write_markers(marker.producer_id, marker.producer_epoch,
                                         marker.coordinator_epoch,
                                         bool(marker.transaction_result), wanted)
        out.append(_Result(producer_id=marker.producer_id, topics=[
            _TopicResult(name=t.name, partitions=[
                _PartitionResult(partition_index=p, error_code=results[(t.name, p)])
                for p in t.partition_indexes])
            for t in marker.topics]))
    return ctx.response(markers=out)
