"""Offset operations of the group coordinator: commit, fetch, delete, expire.

A mixin of ``GroupCoordinator`` (uses its groups, validation and store).
Commits are checked like Kafka's classic groups: a standalone commit
(generation < 0) is accepted for an Empty or unknown group; otherwise the
member must be known, of the current generation, and the group not
CompletingRebalance.  Accepted commits are written as one batch and become
visible only once it is durable (the high watermark passed it: the answer is
then a future while followers catch up, Kafka's storeOffsets); deletions write
tombstones without waiting (Kafka's acks=0 cleanup).  Offsets of Empty groups expire
offsets.retention.minutes after the group became Empty (or after the commit,
for groups without a protocol); an Empty group left without offsets (by expiry,
by OffsetDelete, or because a topic was deleted) is removed, in one batch of
tombstones as Kafka's cleanupGroupMetadata writes it.
"""
from __future__ import annotations

from kafkapy.coordinator.group import records as R
from kafkapy.coordinator.group.consumer.changes import deletion_entries
from kafkapy.coordinator.group.consumer.group import ConsumerGroup
from kafkapy.coordinator.group.group import CONSUMER_PROTOCOL_TYPE, GroupMetadata, GroupState
from kafkapy.coordinator.group.kafka_order import commit_order
from kafkapy.coordinator.group.offsets import OffsetAndMetadata
from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.protocol.topic_partition import TopicPartition
from kafkapy.replication import acks

_S = GroupState


class OffsetOps:
    def commit_offsets(self, group_id: str, member_id: str, instance_id: str | None,
                       generation: int, offsets: dict[TopicPartition, OffsetAndMetadata],
                       api_version: int = 9) -> dict[TopicPartition, int]:
        """``generation``: the classic generation, or a consumer group member's epoch."""
        error = self._group_error(group_id, allow_empty=True)
        group = self._groups.get(group_id)
        if not error and group is None:
            if generation >= 0:
                error = E.ILLEGAL_GENERATION
            else:
                group = self._new_group(group_id)
        if not error:
            error = self._commit_error(group, member_id, instance_id, generation, api_version)
        if error:
            return {tp: error for tp in offsets}
        errors, valid = self._split_oversized(offsets)
        if not valid:
            return errors
        pending = group.pending_offset_commits
        for tp in valid:
            pending[tp] = pending.get(tp, 0) + 1
        written = self._write_offsets(group, valid)

        def finish(error: int) -> dict[TopicPartition, int]:
            # Kafka's putCacheCallback: visible once durable, unless the group died meanwhile.
            for tp in valid:
                left = pending.get(tp, 0) - 1
                if left > 0:
                    pending[tp] = left
                else:
                    pending.pop(tp, None)
            if not error and not group.is_(_S.DEAD):
                group.offsets.update(valid)
            errors.update({tp: error for tp in valid})
            return errors

        return acks.then(written, finish)

    def _split_oversized(self, offsets: dict) -> tuple[dict, dict]:
        """(OFFSET_METADATA_TOO_LARGE per partition whose metadata is over
        offset.metadata.max.bytes, the offsets that may be written)."""
        limit = self.settings.metadata_max_bytes
        errors = {tp: E.OFFSET_METADATA_TOO_LARGE for tp, om in offsets.items()
                  if om.metadata is not None and len(om.metadata) > limit}
        return errors, {tp: om for tp, om in offsets.items() if tp not in errors}

    def _commit_error(self, group: GroupMetadata, member_id: str, instance_id: str | None,
                      generation: int, api_version: int = 9) -> int:
        if group.is_(_S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        if isinstance(group, ConsumerGroup):
            return group.commit_error(member_id, generation, False, api_version)[0]
        if group.is_static_member_fenced(instance_id, member_id):
            return E.FENCED_INSTANCE_ID
        if generation < 0 and group.is_(_S.EMPTY):
            return 0
        if not group.has(member_id):
            return E.UNKNOWN_MEMBER_ID
        if generation != group.generation:
            return E.ILLEGAL_GENERATION
        if group.is_(_S.COMPLETING_REBALANCE):
            return E.REBALANCE_IN_PROGRESS
        self._schedule_heartbeat(group, group.get(member_id))
        return 0

    def _write_offsets(self, group: GroupMetadata, offsets: dict) -> int:
        # Kafka's record order, and its base sequence 0 for commit batches.
        entries = [(R.offset_key(group.group_id, t, p), R.offset_value(offsets[(t, p)]))
                   for t, p in commit_order(list(offsets))]
        return self._store.write(self.partition_for(group.group_id), entries, for_offsets=True,
                                 base_sequence=0)

    def fetch_offsets(self, group_id: str, partitions: list[TopicPartition] | None,
                      require_stable: bool = False, *, member_id: str | None = None,
                      member_epoch: int = -1
                      ) -> tuple[int, list[tuple[TopicPartition, OffsetAndMetadata | None]]]:
        """(group error, [(partition, committed offset or None)]); all partitions if None.
        A consumer group's member (OffsetFetch v9+) must name its current epoch."""
        error = self._group_error(group_id, allow_empty=True)
        if error:
            return error, []
        group = self._groups.get(group_id)
        if isinstance(group, ConsumerGroup) and not group.dead:
            error = group.fetch_error(member_id, member_epoch)[0]
            if error:
                return error, []
        offsets = group.offsets if group is not None and not group.is_(_S.DEAD) else {}
        if partitions is None:
            return 0, sorted(offsets.items())
        return 0, [(tp, offsets.get(tp)) for tp in partitions]

    def delete_offsets(self, group_id: str, partitions: list[TopicPartition]
                       ) -> tuple[int, dict[TopicPartition, int]]:
        error = self._group_error(group_id)
        group = self._groups.get(group_id)
        if not error and (group is None or group.is_(_S.DEAD)):
            error = E.GROUP_ID_NOT_FOUND
        if not error and not group.is_(_S.EMPTY) and group.protocol_type != CONSUMER_PROTOCOL_TYPE:
            error = E.NON_EMPTY_GROUP
        if error:
            return error, {}
        results, removable = {}, []
        for tp in partitions:
            if not group.is_(_S.EMPTY) and group.is_subscribed_to(tp[0]):
                results[tp] = E.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                results[tp] = 0
                removable.append(tp)
        error = self._cleanup(group, removable, drop_pending=True)
        if error:
            return error, {}
        return 0, results

    def handle_deleted_topic(self, topic: str) -> None:
        """A topic was deleted: every group here loses its offsets for it, and every Empty
        group then left without offsets goes (Kafka's handleDeletedPartitions)."""
        for group in list(self._groups.values()):
            if self.partition_for(group.group_id) in self._owned:
                gone = [tp for tp in group.offsets if tp[0] == topic]
                gone += [tp for tp in self._pending_of(group.group_id) if tp[0] == topic]
                self._cleanup(group, gone, drop_pending=True)

    def _is_spent(self, group: GroupMetadata) -> bool:
        return (group.is_(_S.EMPTY) and not group.offsets and not group.pending_offset_commits
                and not self.has_pending_txn_offsets(group.group_id))

    def _cleanup(self, group: GroupMetadata, partitions: list[TopicPartition],
                 drop_pending: bool = False) -> int:
        """Kafka's cleanupGroupMetadata for one group: the offsets of ``partitions`` go
        (pending transactional ones too with ``drop_pending``), and an Empty group left
        without offsets goes Dead.  One batch of tombstones: the offsets', then the
        group's -- unless it never had a generation (a group only storing offsets)."""
        if drop_pending:
            for by_group in self._pending_txn().values():
                for tp in partitions:
                    by_group.get(group.group_id, {}).pop(tp, None)
        present = [tp for tp in dict.fromkeys(partitions) if tp in group.offsets]
        dead = (group.is_(_S.EMPTY) and len(present) == len(group.offsets)
                and not group.pending_offset_commits
                and not self.has_pending_txn_offsets(group.group_id))
        entries = [(R.offset_key(group.group_id, t, p), None) for t, p in present]
        if dead:
            entries += _group_tombstones(group)
        if entries:
            # Kafka appends these tombstones with acks=0: no wait.
            error = self._store.write(self.partition_for(group.group_id), entries,
                                      for_offsets=True, wait=False)
            if error:
                return error
        for tp in present:
            group.offsets.pop(tp, None)
        if dead:
            group.transition_to(_S.DEAD, self._clock.time_ms())
            self._groups.pop(group.group_id, None)
        return 0

    def _pending_of(self, group_id: str) -> list[TopicPartition]:
        return [tp for by_group in self._pending_txn().values()
                for tp in by_group.get(group_id, {})]

    # -- retention ------------------------------------------------------------------------
    def start_offset_expiry(self) -> None:
        self._cleanup_task = self._deadlines.schedule(self.settings.retention_check_interval_ms,
                                                      self._expiry_tick)

    def _expiry_tick(self) -> None:
        self.expire_offsets()
        if self._active:
            self.start_offset_expiry()

    def expire_offsets(self) -> int:
        """Remove expired offsets (and then-empty groups); returns how many offsets went."""
        now = self._clock.time_ms()
        removed = 0
        for group in list(self._groups.values()):
            if self.partition_for(group.group_id) not in self._owned:
                continue
            expired = self._expired(group, now)
            # pending transactional offsets keep an Empty group, as in Kafka
            if not self._cleanup(group, expired):
                removed += len(expired)
        return removed

    def _expired(self, group: GroupMetadata, now: int) -> list[TopicPartition]:
        retention = self.settings.offsets_retention_ms
        if group.protocol_type is None:
            base = None
        elif group.is_(_S.EMPTY):
            base = group.state_timestamp
        else:
            return []
        out = []
        for tp, om in group.offsets.items():
            if om.expire_timestamp is not None:
                if now >= om.expire_timestamp:
                    out.append(tp)
            elif now - (om.commit_timestamp if base is None else base) >= retention:
                out.append(tp)
        return out

    def _remove_group(self, group: GroupMetadata) -> int:
        """Mark Dead, write the offset tombstones and the group's (not for a group that
        never had a generation, as in Kafka), forget it."""
        entries = [(R.offset_key(group.group_id, t, p), None) for t, p in group.offsets]
        entries += _group_tombstones(group)
        error = (self._store.write(self.partition_for(group.group_id), entries, for_offsets=False,
                                   wait=False) if entries else 0)
        if error:
            return error
        group.transition_to(_S.DEAD, self._clock.time_ms())
        group.offsets.clear()
        self._groups.pop(group.group_id, None)
        return 0


def _group_tombstones(group) -> list:
    """The group's own records as tombstones: a consumer group's every record, a classic
    group's metadata (none for a group that never had a generation: it only stored
    offsets, as in Kafka)."""
    if isinstance(group, ConsumerGroup):
        return deletion_entries(group)
    return [(R.group_key(group.group_id), None)] if group.generation > 0 else []
