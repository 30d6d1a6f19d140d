"""Produce (key 0): append record batches to partition leaders.

Versions 0-12: Kafka 3.9's range and v12, transactions v2 (a client sends it only
while ``transaction.version`` 2 is finalized): the same request, whose transactional
batches have their partition added to the transaction by the leader (step 4).  v0-2 carry magic 0/1 message sets (or v2
batches); the leader up-converts them to one v2 batch (``records.legacy``).

Checks in Kafka's order (KafkaApis.handleProduceRequest, then ReplicaManager):
0. the first entry of each partition's records is read, in request order, until a
   transactional batch (RequestUtils.hasTransactionalRecords): a size field below 14
   or a magic byte outside 0-2 fails the whole request, every partition answering
   CORRUPT_MESSAGE with Kafka's message ("Record size 0 is less than the minimum
   record overhead (14)", "Invalid magic found in record: 5"), nothing appended;
1. transactional batches need a transactional id (and transactions enabled),
   else every partition gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
2. per partition: unknown topic/partition -> UNKNOWN_TOPIC_OR_PARTITION; then
   ProduceRequest.validateRecords (v3+: exactly one magic-2 batch, zstd from
   v7) -> INVALID_RECORD / CORRUPT_MESSAGE / UNSUPPORTED_COMPRESSION_TYPE;
3. acks not in (-1, 0, 1) -> INVALID_REQUIRED_ACKS for the partitions left;
then one call to the replica manager (``ReplicaManager.append_records``), which for
the partitions left does what Kafka's ReplicaManager does:
4. transactional batches are verified against the transaction coordinator
   (KIP-890 part 1, ``replication.txn_verification``) unless the producer already
   has an open transaction on the partition; from v12 the coordinator adds the
   partition instead, unless the producer's open transaction there is of the batch's
   epoch;
5. per partition: internal topic -> INVALID_TOPIC_EXCEPTION (unless the client id is
   ``__admin_client``); not the leader -> NOT_LEADER_OR_FOLLOWER; then the leader's
   append (``Partition``): header checks, compacted-topic key check (INVALID_RECORD
   with record_errors), idempotent sequence checks.
Errors of steps 0-3 carry no log start offset (-1), as in Kafka; error_message
is sent only where Kafka sends one (step 0, record errors, transaction verification).
acks=0 gets no response; if anything failed the connection is closed instead,
as Kafka does.  Null records are answered when their partition is refused by step 2
(unknown topic or partition, topic authorization) and the request fails nowhere as a
whole; otherwise Kafka hits a NullPointerException and never answers, and kafkapy
closes the connection.
acks=-1 (``kafkapy.replication.acks``, run by the replica manager): a leader whose
ISR is smaller than the topic's effective min.insync.replicas refuses the partition
with NOT_ENOUGH_REPLICAS before appending (after the checks above, as Kafka's
Partition.appendRecordsToLeader); otherwise the answer waits until the high
watermark passes the appended offsets (at once with a single replica):
NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR is then below min ISR,
REQUEST_TIMED_OUT at timeout_ms, one answer per partition named; a request with no
partitions is answered at once.
Client quota (``kafkapy.quota.client``, Kafka's produce ClientQuotaManager): once the
append is done, the request's size is recorded against the client's producer_byte_rate;
over it, the answer carries the throttle time and the connection reads nothing more for
that long (acks=0 too, without an answer).  With no producer quota configured this is one
attribute test.  The request quota (``kafkapy.quota.request``) is applied by the listener
once the answer is ready, the larger throttle answered; acks=0 is exempt from it, as in
Kafka.
"""
from __future__ import annotations

from kafkapy.quota import request as request_quota
from kafkapy.quota.client import session_user
from kafkapy.security import authz
from kafkapy.api.context import CloseConnection
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES
from kafkapy.records.batch import ATTR_TRANSACTIONAL, MAGIC_OFFSET, RecordError, \
    check_produce_request, next_entry_size
from kafkapy.replication import stage_trace
from kafkapy.replication.partition import AppendResult

API_KEY = 0
MIN_VERSION = 0
MAX_VERSION = 12

_ATTRIBUTES_AT = 21

_R = RESPONSES[API_KEY]
_TopicResponse = _R.TopicProduceResponse
_PartitionResponse = _TopicResponse.PartitionProduceResponse
_RecordError = _PartitionResponse.BatchIndexAndErrorMessage

# Kafka lets only this client id write to internal topics (its AdminUtils.ADMIN_CLIENT_ID;
# the admin tools of old used it to repair them).
ADMIN_CLIENT_ID = "__admin_client"


def handle(ctx, request):
    transactional_id = request.transactional_id if ctx.api_version >= 3 else None
    try:
        transactional = _has_transactional_records(request)
    except RecordError as err:
        # Kafka's walk throws out of the handler: every partition gets the error, with its
        # message (ApiError.fromThrowable), and nothing is appended.
        return _all_failed(ctx, request, err.code, err.message)
    if (transactional and transactional_id is None) or (
            (transactional or transactional_id is not None)
            and ctx.services.txn_coordinator is None):
        return _all_failed(ctx, request, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if (transactional and ctx.services.authorizer is not None
            and not authz.allowed(ctx, authz.WRITE, authz.TRANSACTIONAL_ID, transactional_id)):
        return _all_failed(ctx, request, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    return _append(ctx, request, transactional_id)


def _has_transactional_records(request) -> bool:
    """Kafka's RequestUtils.hasTransactionalRecords, the first look at a request's records.

    In request order, the first entry of each partition's records (null records are
    skipped) until one is a transactional v2 batch.  Reading an entry is Kafka's
    ByteBufferLogInputStream: a size field below 14 or a magic byte outside 0-2 raises
    CORRUPT_MESSAGE (``RecordError``), a partial entry counts as none.  Partitions after
    the first transactional batch are not read here.
    """
    for topic_data in request.topic_data:
        for part in topic_data.partition_data:
            records = part.records
            if records is None:
                continue
            mv = records if isinstance(records, memoryview) else memoryview(records)
            if (next_entry_size(mv, 0, len(mv)) and mv[MAGIC_OFFSET] == 2
                    and mv[_ATTRIBUTES_AT + 1] & ATTR_TRANSACTIONAL):
                return True
    return False


def _append(ctx, request, transactional_id):
    """Run the request checks of the module docstring, then let the replica manager
    append what passed them; the response (a future of it while acks=-1 waits), or None
    for acks=0."""
    version = ctx.api_version
    parts = [(t.name, p) for t in request.topic_data for p in t.partition_data]
    if stage_trace.ENABLED:
        received = int(ctx.received * 1e9)
        for name, part in parts:
            stage_trace.event("Q", name, part.index, received)
    early = [_request_error(ctx, name, part, version) for name, part in parts]
    if ctx.services.authorizer is not None:
        # Kafka checks WRITE on the topic before anything else about the partition.
        allowed = authz.filter_allowed(ctx, authz.WRITE, authz.TOPIC, [name for name, _ in parts])
        early = [r if name in allowed else AppendResult(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                 for (name, _), r in zip(parts, early)]
    if any(part.records is None and r is None for (_, part), r in zip(parts, early)):
        # Null records that pass these checks reach Kafka's append path, which fails with
        # a NullPointerException and never answers; closing is the same outcome without
        # holding the connection open.  Null records refused here are answered.
        raise CloseConnection("null records")
    required_acks = request.acks
    if required_acks not in (-1, 0, 1):
        return _response(ctx, [(name, part.index,
                                r or AppendResult(ErrorCode.INVALID_REQUIRED_ACKS))
                               for (name, part), r in zip(parts, early)])
    return ctx.services.replica_manager.append_records(
        parts, early, required_acks=required_acks, timeout_ms=request.timeout_ms,
        produce_version=version, internal_topics_allowed=ctx.client_id == ADMIN_CLIENT_ID,
        transactional_id=transactional_id,
        respond=(lambda results: _no_response(ctx, results)) if required_acks == 0
        else lambda results: _response(ctx, results))


def _request_error(ctx, name: str, part, version: int) -> AppendResult | None:
    """KafkaApis' per-partition checks before the replica manager: unknown topic, records."""
    if ctx.services.cache.partition(name, part.index) is None:
        return AppendResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if part.records is None:
        return None  # ProduceRequest.validateRecords looks only at records it has
    try:
        check_produce_request(part.records, version)
    except RecordError as err:
        return AppendResult(err.code, error_message=err.message)
    return None


# -- response ------------------------------------------------------------------------------

def _no_response(ctx, results) -> None:
    """acks=0: no answer; if anything failed the connection is closed instead (Kafka)."""
    if any(r.error_code for _, _, r in results):
        raise CloseConnection("acks=0 produce failed")
    _throttle(ctx, answered=False)
    return None


def _throttle(ctx, answered: bool = True) -> int:
    """Kafka's produce and request quotas: the request's size recorded against the client's
    byte rate and, when it is answered, its time against the request quota; the larger
    throttle answered, counted in its sensor, and the connection muted for it."""
    quotas = ctx.services.client_quotas
    quota = quotas.produce
    if not quota.enabled and ctx.timer is None:     # no quota anywhere: the one check
        return 0
    user, client = session_user(ctx.session), ctx.client_id or ""
    bytes_ms = quota.record(user, client, ctx.size) if quota.enabled else 0
    if not answered:
        request_quota.exempt(ctx)       # acks=0: no request quota (Kafka)
    return request_quota.throttle_with(quotas.request, ctx, bytes_ms,
                                       lambda ms: quota.throttled(user, client, ms))


def _response(ctx, results):
    by_topic: dict[str, list] = {}
    for name, index, r in results:
        by_topic.setdefault(name, []).append(_PartitionResponse(
            index=index, error_code=r.error_code, base_offset=r.base_offset,
            log_append_time_ms=r.log_append_time_ms, log_start_offset=r.log_start_offset,
            record_errors=[_RecordError(batch_index=i, batch_index_error_message=m)
                           for i, m in r.record_errors],
            error_message=r.error_message if r.message_is_public else None))
    return ctx.response(
        responses=[_TopicResponse(name=name, partition_responses=parts)
                   for name, parts in by_topic.items()],
        throttle_time_ms=_throttle(ctx))


def _all_failed(ctx, request, error: int, message: str | None = None):
    """Kafka's ProduceRequest.getErrorResponse: ``error`` (and ``message``) for each
    partition named, once each; acks=0 closes the connection instead."""
    if any(p.records is None for t in request.topic_data for p in t.partition_data):
        # Kafka's error response sums the partitions' record sizes and fails (a
        # NullPointerException) on null records: it never answers.  Closed, as above.
        raise CloseConnection("null records")
    if request.acks == 0:
        raise CloseConnection(f"acks=0 produce failed: {ErrorCode(error).name}")
    named = dict.fromkeys((t.name, p.index) for t in request.topic_data for p in t.partition_data)
    results = [(name, index, AppendResult(error, error_message=message,
                                          message_is_public=message is not None))
               for name, index in named]
    return _response(ctx, results)
