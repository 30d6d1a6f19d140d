"""AddPartitionsToTxn (key 24): add partitions to a producer's ongoing transaction.

Versions 0-5 (Kafka 3.9).  v0-3 come from producers: one transaction at the
top level.  v4-5 (KIP-890 part 1) are the broker-to-broker form: a batch of
transactions, each either added like a client's or, with ``verify_only``, only
checked -- each partition answers NONE when it is in the transaction and
TRANSACTION_ABORTABLE when not, or the transaction's error (unknown id or
producer id INVALID_PRODUCER_ID_MAPPING, stale epoch PRODUCER_FENCED, a
transaction being completed CONCURRENT_TRANSACTIONS).  As Kafka 3.9, v4+ is
served to a principal holding CLUSTER_ACTION (every client without an authorizer),
else answered CLUSTER_AUTHORIZATION_FAILED; with an authorizer, adding (not
``verify_only``) needs WRITE on the transactional id and on each topic.

A v4-5 transaction that is not ``verify_only`` is a partition leader adding the
partition a transactions v2 client wrote to (Produce v12, TxnOffsetCommit v5;
``coordinator.transaction.partition_adder``): added with transaction version 2.

Per transaction: partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION
and every other partition OPERATION_NOT_ATTEMPTED (nothing is added);
otherwise every partition gets the coordinator's answer (see
``kafkapy.coordinator.transaction.coordinator``), PRODUCER_FENCED being sent
as INVALID_PRODUCER_EPOCH below v2.
"""
from __future__ import annotations

from kafkapy.security import authz
from kafkapy.coordinator.transaction.service import fenced_for_version
from kafkapy.coordinator.transaction.state import TV_2
from kafkapy.handlers._txn import service
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES
from kafkapy.replication.acks import is_pending, then

API_KEY = 24
MIN_VERSION = 0
MAX_VERSION = 5
FIRST_BATCHED = 4

_R = RESPONSES[API_KEY]
_TxnResult = _R.AddPartitionsToTxnResult
_TopicResult = _R.AddPartitionsToTxnTopicResult
_PartitionResult = _TopicResult.AddPartitionsToTxnPartitionResult


def handle(ctx, request):
    if ctx.api_version < FIRST_BATCHED:
        topics = [(t.name, list(t.partitions)) for t in request.v3_and_below_topics]
        errors = _transaction(ctx, request.v3_and_below_transactional_id,
                              request.v3_and_below_producer_id,
                              request.v3_and_below_producer_epoch, False, topics)
        # Answered once the new state is durable (a future while it replicates).
        return then(errors, lambda done: ctx.response(
            throttle_time_ms=0, results_by_topic_v3_and_below=_topic_results(topics, done)))
    if not authz.cluster(ctx, authz.CLUSTER_ACTION):
        # v4+ batches come from brokers (transaction verification): Kafka wants CLUSTER_ACTION.
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                            results_by_transaction=[])
    answers = []
    for txn in request.transactions:
        topics = [(t.name, list(t.partitions)) for t in txn.topics]
        answers.append((txn.transactional_id, topics, _transaction(
            ctx, txn.transactional_id, txn.producer_id, txn.producer_epoch,
            bool(txn.verify_only), topics)))
    if any(is_pending(errors) for _, _, errors in answers):
        return _batched(ctx, answers)
    return _batched_response(ctx, answers)


async def _batched(ctx, answers):
    done = [(txn_id, topics, await errors if is_pending(errors) else errors)
            for txn_id, topics, errors in answers]
    return _batched_response(ctx, done)


def _batched_response(ctx, answers):
    results = [_TxnResult(transactional_id=txn_id, topic_results=_topic_results(topics, errors))
               for txn_id, topics, errors in answers]
    return ctx.response(throttle_time_ms=0, error_code=0, results_by_transaction=results)


def _transaction(ctx, txn_id, producer_id, epoch, verify_only: bool, topics) -> dict:
    """Each partition's error for one transaction of the request."""
    wanted = [(name, p) for name, parts in topics for p in parts]
    txns = service(ctx)
    if txns is None:
        return {tp: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED for tp in wanted}
    if ctx.services.authorizer is not None and not verify_only:
        # Kafka: WRITE on the transactional id, then on each topic.
        if not authz.allowed(ctx, authz.WRITE, authz.TRANSACTIONAL_ID, txn_id):
            return {tp: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED for tp in wanted}
        allowed = authz.filter_allowed(ctx, authz.WRITE, authz.TOPIC, [t for t, _ in wanted])
        if any(t not in allowed for t, _ in wanted):
            return {tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED if tp[0] not in allowed
                    else ErrorCode.OPERATION_NOT_ATTEMPTED for tp in wanted}
    cache = ctx.services.cache
    unknown = {tp for tp in wanted if cache.partition(*tp) is None}
    if unknown:
        return {tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown
                else ErrorCode.OPERATION_NOT_ATTEMPTED for tp in wanted}
    if verify_only:
        return txns.coordinator.verify_partitions(txn_id, producer_id, epoch, wanted)
    # v0-3 come from a client speaking transactions v1; v4+ from a leader adding for v2.
    client_tv = TV_2 if ctx.api_version >= FIRST_BATCHED else 0
    added = txns.coordinator.add_partitions(txn_id, producer_id, epoch, wanted,
                                            client_tv=client_tv)

    def per_partition(error: int) -> dict:
        error = fenced_for_version(error, ctx.api_version, 2)
        return {tp: error for tp in wanted}

    return then(added, per_partition)


def _topic_results(topics, errors: dict):
    return [_TopicResult(name=name, results_by_partition=[
        _PartitionResult(partition_index=p, partition_error_code=errors[(name, p)])
        for p in parts])
        for name, parts in topics]
