"""WriteTxnMarkers (key 27): the coordinator asks a partition leader to write markers.

Versions 0-2 (v1 is v0 in the flexible encoding; v2 adds each marker's
TransactionVersion, Kafka 4's: a marker of a v2 transaction must carry an epoch above
its producer's epoch on the partition, see ``markers``; below v2 it is 0).  Each marker is written to each of its
partitions through ``kafkapy.coordinator.transaction.markers.write_markers``
(the path the local coordinator uses too), with a per-partition error code; as Kafka
appends them with acks=-1, the answer waits (up to request.timeout.ms) until
the high watermark of every written partition covers its marker
(REQUEST_TIMED_OUT / NOT_LEADER_OR_FOLLOWER otherwise, which the coordinator
retries).
"""
from __future__ import annotations

from kafkapy.security import authz
from kafkapy.handlers._txn import service
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES

API_KEY = 27
MIN_VERSION = 0
MAX_VERSION = 2
FIRST_WITH_VERSION = 2

_R = RESPONSES[API_KEY]
_Result = _R.WritableTxnMarkerResult
_TopicResult = _Result.WritableTxnMarkerTopicResult
_PartitionResult = _TopicResult.WritableTxnMarkerPartitionResult


def handle(ctx, request):
    txns = service(ctx)
    if not authz.cluster(ctx, authz.CLUSTER_ACTION):
        txns = None     # every partition CLUSTER_AUTHORIZATION_FAILED, as Kafka's
    per_marker = []
    appended: dict = {}   # (topic, partition) -> the latest marker's AppendResult there
    for marker in request.markers:
        wanted = [(t.name, p) for t in marker.topics for p in t.partition_indexes]
        if txns is None:
            results = {tp: ErrorCode.CLUSTER_AUTHORIZATION_FAILED for tp in wanted}
        else:
            written: dict = {}
            version = marker.transaction_version \
                if ctx.api_version >= FIRST_WITH_VERSION else 0
            results = txns.write_markers(marker.producer_id, marker.producer_epoch,
                                         marker.coordinator_epoch,
                                         bool(marker.transaction_result), wanted,
                                         appended=written, transaction_version=version)
            appended.update(written)   # a later marker on a partition lies further on
        per_marker.append(results)
    if not appended:
        return _response(ctx, request, per_marker, {})
    # Kafka appends markers with acks=-1: answered once the high watermark covers them.
    return ctx.services.replica_manager.await_replication(
        [(t, p, r) for (t, p), r in appended.items()],
        ctx.services.config["request.timeout.ms"],
        lambda final: _response(ctx, request, per_marker,
                                {(t, p): r.error_code for t, p, r in final}))


def _response(ctx, request, per_marker: list[dict], replicated: dict):
    out = []
    for marker, results in zip(request.markers, per_marker):
        out.append(_Result(producer_id=marker.producer_id, topics=[
            _TopicResult(name=t.name, partitions=[
                _PartitionResult(partition_index=p, error_code=results[(t.name, p)]
                                 or replicated.get((t.name, p), 0))
                for p in t.partition_indexes])
            for t in marker.topics]))
    return ctx.response(markers=out)
