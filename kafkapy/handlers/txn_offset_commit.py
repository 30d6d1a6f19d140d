"""TxnOffsetCommit (key 28): offsets committed as part of a transaction.

Versions 0-5.  Sent to the group coordinator after AddOffsetsToTxn (v0-4); the offsets are written to ``__consumer_offsets`` as a
transactional batch of the producer and stay pending (invisible to
OffsetFetch) until the transaction's COMMIT marker makes them the group's
committed offsets; an ABORT drops them (``kafkapy.coordinator.group.txn_offsets``).
v3+ carry generation / member id / group instance id, checked like Kafka.
Partitions of unknown topics answer UNKNOWN_TOPIC_OR_PARTITION.

With ``transaction.partition.verification.enable`` (KIP-890 part 1), a producer
without an open transaction in the group's offsets partition is first checked
with the transaction coordinator, as Kafka's replica manager does: an unknown
producer id answers INVALID_PRODUCER_ID_MAPPING, a stale epoch
INVALID_PRODUCER_EPOCH, an offsets partition not added to the transaction
(no AddOffsetsToTxn) INVALID_TXN_STATE (TRANSACTION_ABORTABLE from v4).

v5 is transactions v2: the client sends no AddOffsetsToTxn, so before the commit the
group's offsets partition is added to the transaction by its coordinator (wherever it
runs, ``coordinator.transaction.partition_adder``), unless the producer has an open
transaction of that epoch in the partition, as Kafka 4's add-partition operation; its
errors are answered for every partition as those of the v0-4 check.

One deliberate difference from Kafka 3.9: Kafka skips that check when the producer
id has an open transaction in the offsets partition, whatever the epoch of the
request (UnifiedLog.hasOngoingTransaction), and its append then refuses only an
older epoch.  A newer epoch than the coordinator's is answered NONE and written;
the producer state of the offsets partition moves to that epoch, so the
coordinator's COMMIT marker (the real, older epoch) is refused with
INVALID_PRODUCER_EPOCH and the coordinator stops sending its markers: the
transaction stays in PrepareCommit, the offsets committed in it never become
visible and the transactional id answers CONCURRENT_TRANSACTIONS to InitProducerId.  kafkapy skips the check
only for an open transaction of the same epoch, so a newer epoch is checked with the
coordinator and refused with INVALID_PRODUCER_EPOCH, and the transaction commits.
"""
from __future__ import annotations

from kafkapy.security import authz
from kafkapy.coordinator.group.offsets import OffsetAndMetadata
from kafkapy.coordinator.transaction.service import fenced_for_version
from kafkapy.handlers._txn import service
from kafkapy.metadata.topics import OFFSETS_TOPIC
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES
from kafkapy.protocol.topic_partition import TopicPartition
from kafkapy.replication import acks

API_KEY = 28
MIN_VERSION = 0
MAX_VERSION = 5
FIRST_V2 = 5

_R = RESPONSES[API_KEY]
_Topic = _R.TxnOffsetCommitResponseTopic
_Partition = _Topic.TxnOffsetCommitResponsePartition


def handle(ctx, request):
    services = ctx.services
    version = ctx.api_version
    now = services.clock.time_ms()
    results: dict[TopicPartition, int] = {}
    offsets = {}
    allowed = None
    if ctx.services.authorizer is not None:
        # Kafka: WRITE on the transactional id, READ on the group, then READ per topic.
        asked = [(t.name, p.partition_index) for t in request.topics for p in t.partitions]
        refusal = None
        if not authz.allowed(ctx, authz.WRITE, authz.TRANSACTIONAL_ID, request.transactional_id):
            refusal = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        elif not authz.allowed(ctx, authz.READ, authz.GROUP, request.group_id):
            refusal = ErrorCode.GROUP_AUTHORIZATION_FAILED
        if refusal is not None:
            return ctx.response(throttle_time_ms=0, topics=[_Topic(name=t.name, partitions=[
                _Partition(partition_index=p.partition_index, error_code=refusal) for p in t.partitions])
                for t in request.topics])
        allowed = authz.filter_allowed(ctx, authz.READ, authz.TOPIC, [t for t, _ in asked])
    for topic in request.topics:
        for p in topic.partitions:
            tp = (topic.name, p.partition_index)
            if allowed is not None and topic.name not in allowed:
                results[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                continue
            if services.cache.partition(topic.name, p.partition_index) is None:
                results[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            offsets[tp] = OffsetAndMetadata(
                p.committed_offset, p.committed_leader_epoch if version >= 2 else -1,
                p.committed_metadata if p.committed_metadata is not None else "", now)
    groups = services.groups
    committed: dict = {}
    if offsets:
        if groups is None:
            results.update({tp: ErrorCode.COORDINATOR_NOT_AVAILABLE for tp in offsets})
        else:
            member_id = request.member_id if version >= 3 else ""
            instance_id = request.group_instance_id if version >= 3 else None
            generation = request.generation_id if version >= 3 else -1
            if version >= FIRST_V2:
                committed = acks.then(_add_offsets_partition(ctx, request), lambda error: (
                    {tp: error for tp in offsets} if error else
                    groups.coordinator.commit_txn_offsets(
                        request.group_id, request.producer_id, request.producer_epoch,
                        member_id or "", instance_id, generation, offsets)))
            else:
                committed = groups.coordinator.commit_txn_offsets(
                    request.group_id, request.producer_id, request.producer_epoch,
                    member_id or "", instance_id, generation, offsets,
                    verify=lambda: _verify(ctx, request))

    def respond(written: dict):
        results.update(written)
        topics = []
        for topic in request.topics:
            topics.append(_Topic(name=topic.name, partitions=[
                _Partition(partition_index=p.partition_index,
                           error_code=fenced_for_version(
                               results[(topic.name, p.partition_index)], version, 2))
                for p in topic.partitions]))
        return ctx.response(throttle_time_ms=0, topics=topics)

    # Answered once the offsets are durable (a future while followers catch up).
    return acks.then(committed, respond)


# Kafka's GroupMetadataManager.maybeConvertOffsetCommitError, for the errors a
# verification can end in.
_OFFSET_COMMIT_ERROR = {
    ErrorCode.NETWORK_EXCEPTION: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
}


def _verify(ctx, request):
    """The transaction check Kafka makes before a transactional offset commit: 0, an
    error code, or a future of it while the transaction coordinator answers."""
    services = ctx.services
    if not services.config["transaction.partition.verification.enable"]:
        return 0
    index = services.groups.coordinator.partition_for(request.group_id)
    tp = (OFFSETS_TOPIC, index)
    partition = services.replica_manager.partitions.get(tp)
    if partition is None:
        return _OFFSET_COMMIT_ERROR[ErrorCode.NOT_LEADER_OR_FOLLOWER]
    entry = partition.log.producer_state.last_entry(request.producer_id)
    if (entry is not None and entry.current_txn_first_offset >= 0
            and entry.epoch == request.producer_epoch):
        # An open transaction here was verified when it started.  Kafka skips the check
        # for any epoch; another epoch is checked here (module docstring: accepting a
        # newer one wedges the transaction and loses its offsets).
        return 0
    txns = service(ctx)
    if txns is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    # The coordinator wherever it runs (AddPartitionsToTxn VerifyOnly to another broker).
    answer = txns.adder.verify(request.transactional_id, request.producer_id,
                               request.producer_epoch, tp)
    return acks.then(answer, lambda error: _verification_error(error, ctx.api_version))


def _verification_error(error: int, version: int) -> int:
    """The commit's answer for the transaction coordinator's ``error``."""
    if error == ErrorCode.PRODUCER_FENCED:
        error = ErrorCode.INVALID_PRODUCER_EPOCH
    elif error == ErrorCode.TRANSACTION_ABORTABLE and version < 4:
        error = ErrorCode.INVALID_TXN_STATE
    return _OFFSET_COMMIT_ERROR.get(error, error)


def _add_offsets_partition(ctx, request):
    """v5: the group's offsets partition added to the producer's transaction; 0, the
    error for every partition, or a future of it."""
    services = ctx.services
    index = services.groups.coordinator.partition_for(request.group_id)
    tp = (OFFSETS_TOPIC, index)
    partition = services.replica_manager.partitions.get(tp)
    if partition is None or not partition.is_leader:
        return 0   # the commit answers NOT_COORDINATOR
    if partition.has_ongoing_transaction(request.producer_id, request.producer_epoch):
        return 0
    txns = service(ctx)
    if txns is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    return acks.then(txns.adder.add(request.transactional_id, request.producer_id,
                                    request.producer_epoch, tp),
                     lambda error: _verification_error(error, ctx.api_version))
