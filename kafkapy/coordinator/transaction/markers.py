"""Writing transaction markers into data partitions (the WriteTxnMarkers path).

``write_markers`` appends one control batch (COMMIT or ABORT; key = version 0 +
type, value = version 0 + coordinator epoch; producer id/epoch of the
transaction, sequence -1, transactional + control attributes) to each named
partition this broker leads, exactly like Kafka's coordinator-origin append:
- a marker whose producer epoch is below the partition's current epoch for
  that producer -> INVALID_PRODUCER_EPOCH; a marker of a v2 transaction
  (``transaction_version`` 2: its coordinator bumped the epoch for it) must be above
  that epoch, except a marker at that epoch once the producer's transaction there is
  over (a retry of a marker already written, written again), as Kafka 4's leader;
- a coordinator epoch below the one last seen for the producer ->
  TRANSACTION_COORDINATOR_FENCED;
- an ISR below the topic's min.insync.replicas -> NOT_ENOUGH_REPLICAS (acks=-1);
- a partition this broker does not host -> NOT_LEADER_OR_FOLLOWER when the
  metadata cache knows it (Kafka's ReplicaManager.getPartitionOrError), else
  UNKNOWN_TOPIC_OR_PARTITION; hosted as a follower -> NOT_LEADER_OR_FOLLOWER.
The log indexes an ABORT in ``.txnindex`` and the LSO moves past the
transaction; waiting fetches are woken.  Markers landing in
``__consumer_offsets`` are handed to the ``offsets_listeners`` once durable
(``replicate``) so the group coordinator can materialise or drop the
transaction's pending offsets.
Used by the local coordinator for the partitions this broker leads (through
``marker_channel.MarkerChannel``, which sends the others to their leaders) and
by the WriteTxnMarkers handler.
"""
from __future__ import annotations

from typing import Callable, Iterable

from kafkapy.metadata.topics import OFFSETS_TOPIC
from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.protocol.topic_partition import TopicPartition
from kafkapy.records.record import CONTROL_ABORT, CONTROL_COMMIT, build_control_batch
from kafkapy.replication import acks


OffsetsListener = Callable[[int, list[int], bool], None]  # (producer id, partitions, commit)


def write_markers(replica_manager, clock, producer_id: int, producer_epoch: int,
                  coordinator_epoch: int, commit: bool,
                  partitions: Iterable[TopicPartition],
                  offsets_listeners: list[OffsetsListener] = (),
                  appended: dict | None = None, replicate=None,
                  transaction_version: int = 0) -> dict[TopicPartition, int]:
    """{partition: error code}; ``appended`` (when given) receives the AppendResult of
    each written marker (its ``last_offset`` is what replication must reach).

    ``replicate(key, result)`` (``kafkapy.coordinator.internal_topic.replicated``): the
    listeners hear of a marker in ``__consumer_offsets`` only once it is durable, as Kafka
    materialises transactional offsets in the acks=-1 append's callback; without it, at
    once."""
    results: dict[TopicPartition, int] = {}
    offsets_done: list[tuple[TopicPartition, object]] = []
    for key in partitions:
        code, result = _write_one(replica_manager, clock, producer_id, producer_epoch,
                                  coordinator_epoch, commit, key, transaction_version)
        results[key] = code
        if code == 0 and appended is not None:
            appended[key] = result
        if code == 0 and key[0] == OFFSETS_TOPIC:
            offsets_done.append((key, result))
    for key, result in offsets_done:
        def materialise(code: int, index: int = key[1]) -> None:
            if code == 0:
                for listener in offsets_listeners:
                    listener(producer_id, [index], commit)
        if replicate is None:
            materialise(0)
        else:
            acks.then(replicate(key, result), materialise)
    return results


def _write_one(replica_manager, clock, producer_id: int, producer_epoch: int,
               coordinator_epoch: int, commit: bool, key: TopicPartition,
               transaction_version: int) -> tuple[int, object]:
    partition = replica_manager.partitions.get(key)
    if partition is None:
        # Known to the cache but not hosted (yet): a leader change in flight; the
        # coordinator retries NOT_LEADER_OR_FOLLOWER but drops UNKNOWN_TOPIC_OR_PARTITION.
        cache = getattr(replica_manager, "cache", None)
        if cache is not None and cache.partition(*key) is not None:
            return E.NOT_LEADER_OR_FOLLOWER, None
        return E.UNKNOWN_TOPIC_OR_PARTITION, None
    if not partition.is_leader:
        return E.NOT_LEADER_OR_FOLLOWER, None
    # Kafka appends markers with acks=-1: an ISR below min.insync.replicas refuses them
    # (NOT_ENOUGH_REPLICAS, which the coordinator retries) before the log looks at them.
    refused = acks.min_isr_error(partition, *key)
    if refused is not None:
        return refused.error_code, None
    entry = partition.log.producer_state.last_entry(producer_id)
    if entry is not None and entry.coordinator_epoch > coordinator_epoch:
        return E.TRANSACTION_COORDINATOR_FENCED, None
    if (transaction_version >= 2 and entry is not None and producer_epoch <= entry.epoch
            and not (producer_epoch == entry.epoch and entry.current_txn_first_offset < 0)):
        return E.INVALID_PRODUCER_EPOCH, None
    batch = build_control_batch(CONTROL_COMMIT if commit else CONTROL_ABORT, coordinator_epoch,
                                producer_id, producer_epoch, clock.time_ms())
    result = partition.append_internal(batch)
    if result.error_code:
        return result.error_code, result
    entry = partition.log.producer_state.last_entry(producer_id)
    if entry is not None:
        entry.coordinator_epoch = coordinator_epoch
    replica_manager.appended(key)
    return 0, result
