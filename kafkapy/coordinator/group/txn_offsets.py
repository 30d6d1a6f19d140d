"""Transactional offset commits (TxnOffsetCommit) for the group coordinator.

A mixin of ``GroupCoordinator`` (``TxnOffsetOps``).  Offsets sent
with TxnOffsetCommit are written to the group's ``__consumer_offsets``
partition as a *transactional* batch of the producer (producer id and epoch,
no sequence; a stale epoch is refused by the partition's producer state with
INVALID_PRODUCER_EPOCH) and kept pending per producer id, invisible to
OffsetFetch.  When the transaction's marker lands in that partition
(``complete_txn_offsets``, called by the marker path) a COMMIT moves them into
the group's committed offsets and an ABORT drops them (Kafka's
GroupMetadata.pendingTransactionalOffsetCommits).

Loading (``route_batch``): records of transactional batches are held per
producer id until that producer's COMMIT (then replayed in place) or ABORT
(dropped); what is still open at the end of the log is installed as pending.

The write is durable (acks=-1): the answer -- a future of it while the high
watermark catches up -- comes once it replicated, and only then are the offsets
pending for the transaction.

Validation (Kafka's doTxnCommitOffsets): Dead group -> COORDINATOR_NOT_AVAILABLE,
fenced static member -> FENCED_INSTANCE_ID, a non-empty member id unknown to
the group -> UNKNOWN_MEMBER_ID, generation >= 0 not the group's ->
ILLEGAL_GENERATION; an unknown group is created Empty.  Before those checks the
caller's ``verify`` (the transaction check of KIP-890 part 1) may refuse the commit.
"""
from __future__ import annotations

from kafkapy.coordinator.group import records as R
from kafkapy.coordinator.group.group import GroupState
from kafkapy.coordinator.group.kafka_order import commit_order
from kafkapy.coordinator.group.offsets import OffsetAndMetadata
from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.protocol.topic_partition import TopicPartition
from kafkapy.records.record import build_batch, decode_records
from kafkapy.replication import acks


class TxnOffsetOps:
    # producer id -> group id -> partition -> offset
    def _pending_txn(self) -> dict[int, dict[str, dict[TopicPartition, OffsetAndMetadata]]]:
        pending = self.__dict__.get("_pending_txn_offsets")
        if pending is None:
            pending = self.__dict__["_pending_txn_offsets"] = {}
        return pending

    def commit_txn_offsets(self, group_id: str, producer_id: int, producer_epoch: int,
                           member_id: str, instance_id: str | None, generation: int,
                           offsets: dict[TopicPartition, OffsetAndMetadata],
                           verify=None) -> dict[TopicPartition, int]:
        """``verify``, when given, is called once the group is known and may answer an
        error for every partition, or a future of it (Kafka verifies the transaction with
        its coordinator at that point, before the member checks, and goes on once it
        answered: the group is looked at again then)."""
        error = self._group_error(group_id)
        group = self._groups.get(group_id) if not error else None
        if not error and group is None:
            group = self._new_group(group_id)
        if not error and verify is not None:
            error = verify()
            if acks.is_pending(error):
                return acks.then(error, lambda verified: (
                    {tp: verified for tp in offsets} if verified else
                    self.commit_txn_offsets(group_id, producer_id, producer_epoch, member_id,
                                            instance_id, generation, offsets)))
        if not error:
            if group.is_(GroupState.DEAD):
                error = E.COORDINATOR_NOT_AVAILABLE
            elif group.group_type == "consumer":   # the member's epoch, as Kafka 4.x
                error = group.commit_error(member_id, generation, True, 0)[0]
            elif group.is_static_member_fenced(instance_id, member_id):
                error = E.FENCED_INSTANCE_ID
            elif member_id and not group.has(member_id):
                error = E.UNKNOWN_MEMBER_ID
            elif generation >= 0 and generation != group.generation:
                error = E.ILLEGAL_GENERATION
        if error:
            return {tp: error for tp in offsets}
        errors, valid = self._split_oversized(offsets)
        if not valid:
            return errors
        entries = [(R.offset_key(group_id, t, p), R.offset_value(valid[(t, p)]))
                   for t, p in commit_order(list(valid))]  # Kafka's record order
        # Kafka's prepareTxnOffsetCommit: pending (invisible until the marker) from now;
        # a failed write takes them back (failPendingTxnOffsetCommit).
        pending = self._pending_txn().setdefault(producer_id, {}).setdefault(group_id, {})
        pending.update(valid)
        written = self._store.write_transactional(self.partition_for(group_id), entries,
                                                  producer_id, producer_epoch)

        def finish(error: int) -> dict[TopicPartition, int]:
            if error:
                self._fail_pending_txn_offsets(producer_id, group_id, valid)
            errors.update({tp: error for tp in valid})
            return errors

        return acks.then(written, finish)

    def _fail_pending_txn_offsets(self, producer_id: int, group_id: str, offsets: dict) -> None:
        by_group = self._pending_txn().get(producer_id, {})
        pending = by_group.get(group_id, {})
        for tp, om in offsets.items():
            if pending.get(tp) is om:
                del pending[tp]
        if not pending:
            by_group.pop(group_id, None)
        if not by_group:
            self._pending_txn().pop(producer_id, None)

    def complete_txn_offsets(self, producer_id: int, partitions: list[int], commit: bool) -> None:
        """A transaction marker of ``producer_id`` landed in these offsets partitions."""
        by_group = self._pending_txn().get(producer_id)
        if not by_group:
            return
        for group_id in [g for g in by_group if self.partition_for(g) in partitions]:
            offsets = by_group.pop(group_id)
            if not commit:
                continue
            group = self._groups.get(group_id)
            if group is None:
                group = self._new_group(group_id)
            group.offsets.update(offsets)
        if not by_group:
            self._pending_txn().pop(producer_id, None)

    def has_pending_txn_offsets(self, group_id: str, tp: TopicPartition | None = None) -> bool:
        for by_group in self._pending_txn().values():
            offsets = by_group.get(group_id)
            if offsets and (tp is None or tp in offsets):
                return True
        return False

    def install_pending_txn_offsets(self, pending: dict[int, list]) -> None:
        """After loading: offsets of transactions still open at the end of the log."""
        for producer_id, entries in pending.items():
            for key_bytes, value in entries:
                key = R.decode_key(key_bytes)
                if isinstance(key, R.OffsetKey) and value is not None:
                    self._pending_txn().setdefault(producer_id, {}).setdefault(
                        key.group, {})[(key.topic, key.partition)] = R.decode_offset_value(value)

    def drop_pending_txn_offsets(self, index: int) -> None:
        """Unloading partition ``index``: forget its groups' pending offsets."""
        for producer_id, by_group in list(self._pending_txn().items()):
            for group_id in [g for g in by_group if self.partition_for(g) == index]:
                del by_group[group_id]
            if not by_group:
                del self._pending_txn()[producer_id]


def write_transactional(store, index: int, entries, producer_id: int, producer_epoch: int):
    """Append ``entries`` as one transactional batch of the producer (no sequence): the
    client's error code, or a future of it while the high watermark catches up."""
    partition = store.partition(index)
    if partition is None:
        return E.NOT_COORDINATOR
    now = store._clock.time_ms()
    batch = build_batch([(k, v, None, now) for k, v in entries], compression=store._compression,
                        producer_id=producer_id, producer_epoch=producer_epoch,
                        base_sequence=-1, is_transactional=True)
    return store.append(index, partition, batch, for_offsets=True)


def route_batch(chunk, header, out: list, pending: dict[int, list]) -> None:
    """Loading: hold a transactional batch's records until its producer's marker."""
    pid = header.producer_id
    if header.is_control:
        held = pending.pop(pid, [])
        records = decode_records(chunk, header.position)
        key = records[0].key if records else None
        if key is not None and len(key) >= 4 and int.from_bytes(key[2:4], "big") == 1:
            out.extend(held)  # COMMIT
        return
    pending.setdefault(pid, []).extend(
        (r.key, r.value) for r in decode_records(chunk, header.position) if r.key is not None)
