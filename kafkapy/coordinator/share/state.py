"""The share coordinator's state of one ``__share_group_state`` partition, as Kafka's
ShareCoordinatorShard keeps it: pure, synchronous, changed only by ``replay``.

Every key (``ShareKey``: group, topic id, partition) holds a ``ShareGroupOffset`` (the
snapshot epoch, state epoch, leader epoch, start offset, delivery complete count,
timestamps and the non-overlapping ``StateBatch`` list), the highest leader epoch and
state epoch seen (the fences), and how many ShareUpdate records followed its last
ShareSnapshot.

An operation (``initialize``, ``write``, ``read``, ``read_summary``, ``delete``)
answers a ``Decision``: the answer and the records (``StateRecord``) to append.  It
changes nothing itself; the caller appends the records and replays each, so the state
is always what the log replays to.  The records:

- ShareSnapshot (``SNAPSHOT``): the key's whole state.  Written by ``initialize`` (the
  next snapshot epoch, the request's state epoch and start offset, leader epoch -1, no
  batches), by a write once the key's update count (Kafka's snapshotUpdateCount: none
  until the first ShareUpdate, which counts 0; back to 0 at the snapshot it causes)
  reaches ``updates_per_snapshot`` (the stored batches combined with the written ones,
  snapshot epoch + 1), and by ``cold_snapshots`` (the same state again).
- ShareUpdate (``UPDATE``): the written batches only (combined among themselves and
  cut at the request's start offset), the snapshot epoch of the last snapshot, the
  request's leader epoch and start offset; replay combines them into the stored ones.
- tombstone (``TOMBSTONE``: the ShareSnapshot key, no value): ``delete`` and
  ``deleted_topic_tombstones``; replay forgets the key.

Pruning (Kafka's ShareCoordinatorOffsetsManager): replay given the record's offset keeps
each key's latest snapshot (or tombstone) offset; ``last_redundant_offset`` is the
smallest of them, below which no record is needed to rebuild the state.

Checks, in Kafka's order (the first that fails answers):
- initialize: negative partition INVALID_REQUEST; a stored state epoch above the
  request's FENCED_STATE_EPOCH; the topic partition unknown UNKNOWN_TOPIC_OR_PARTITION.
- write: negative partition; key not initialized INVALID_REQUEST; stored leader epoch
  above the request's FENCED_LEADER_EPOCH; stored state epoch above the request's
  FENCED_STATE_EPOCH; unknown topic partition.
- read: negative partition; key not initialized INVALID_REQUEST; stored leader epoch
  above the request's FENCED_LEADER_EPOCH; unknown topic partition.  A read with a
  higher leader epoch writes a ShareUpdate (no batches) carrying it, which fences the
  older leader's later writes.
- read_summary: negative partition; unknown topic partition; a key never initialized
  answers start offset -1, state epoch 0 without an error.
- delete: negative partition; unknown topic partition; a key never initialized is no
  error and writes nothing.
A request's epoch of -1 skips that epoch's check.
"""
from __future__ import annotations

import binascii
import enum
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from kafkapy.coordinator.share.batches import combine
from kafkapy.coordinator.share.persister import (
    DEFAULT_STATE_EPOCH,
    UNINITIALIZED_START_OFFSET,
    UNKNOWN_DELIVERY_COMPLETE_COUNT,
    ShareState,
    StateBatch,
)
from kafkapy.metadata.topics import parse_topic_id, topic_id_text
from kafkapy.protocol.errors import ErrorCode

_NO_OFFSET = 2**63 - 1
#: Kafka's Errors.message() of the errors the checks answer with it.
KAFKA_MESSAGES = {
    ErrorCode.FENCED_LEADER_EPOCH:
        "The leader epoch in the request is older than the epoch on the broker.",
    ErrorCode.FENCED_STATE_EPOCH: "The share coordinator rejected the request because the "
                                  "share-group state epoch did not match.",
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
}
_NEGATIVE_PARTITION = "The partition id cannot be a negative number."
_READ_UNINITIALIZED = "Read on uninitialized share partition."
_WRITE_UNINITIALIZED = "Write on uninitialized share partition."


@dataclass(frozen=True, slots=True)
class ShareKey:
    """A share partition's key (Kafka's SharePartitionKey)."""

    group_id: str
    topic_id: uuid.UUID
    partition: int

    def coordinator_key(self) -> str:
        """``"<group>:<topic id as Kafka's Uuid text>:<partition>"``: what FindCoordinator
        names and what is hashed to the key's ``__share_group_state`` partition."""
        return f"{self.group_id}:{topic_id_text(self.topic_id)}:{self.partition}"

    @classmethod
    def parse(cls, text: str | None) -> ShareKey:
        """A coordinator key read back (Kafka's SharePartitionKey.validate and
        getInstance): three ``:``-separated parts, none blank, the topic id as Kafka's
        Uuid text, the partition a Java int; ValueError otherwise."""
        if not text:
            raise ValueError("Share partition key cannot be empty")
        tokens = text.split(":")
        while tokens and not tokens[-1]:    # Java's String.split drops trailing empties
            tokens.pop()
        if len(tokens) != 3 or any(not t.strip() for t in tokens):
            raise ValueError("Invalid key format: expected - <groupId>:<topicId>:<partition>, "
                             f"found -  {text}")
        group_id, topic, partition = tokens
        return cls(group_id, _parse_topic_id(topic), _parse_java_int(partition))


def _parse_topic_id(text: str) -> uuid.UUID:
    try:
        topic_id = parse_topic_id(text)
    except (ValueError, binascii.Error):
        raise ValueError(f"Invalid topic id: {text}") from None
    if topic_id_text(topic_id) != text:
        raise ValueError(f"Invalid topic id: {text}")
    return topic_id


def _parse_java_int(text: str) -> int:
    """Java's Integer.parseInt: an optional sign and decimal digits, within int32."""
    body = text[1:] if text[:1] in "+-" else text
    if not body or not body.isascii() or not body.isdigit():
        raise ValueError(f"For input string: \"{text}\"")
    value = int(text)
    if not -2**31 <= value < 2**31:
        raise ValueError(f"For input string: \"{text}\"")
    return value


@dataclass(frozen=True, slots=True)
class ShareGroupOffset:
    """One key's stored state (Kafka's ShareGroupOffset)."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    batches: tuple[StateBatch, ...] = ()
    delivery_complete_count: int = UNKNOWN_DELIVERY_COMPLETE_COUNT
    create_timestamp: int = -1
    write_timestamp: int = -1


class RecordKind(enum.IntEnum):
    """The record type (Kafka's key version) of a ``__share_group_state`` record."""

    SNAPSHOT = 0
    UPDATE = 1
    TOMBSTONE = 2   # not a record type on disk: a ShareSnapshot key with no value


@dataclass(frozen=True, slots=True)
class StateRecord:
    """One record to append: a ShareSnapshot or ShareUpdate of ``key`` (``value`` has
    the fields that record type carries), or the key's tombstone (``value`` None)."""

    kind: RecordKind
    key: ShareKey
    value: ShareGroupOffset | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    """What an operation answers (an error code or a ``ShareState``) and what must be
    appended (and replayed) before the answer is given."""

    answer: int | ShareState
    records: tuple[StateRecord, ...] = ()
    message: str | None = None


@dataclass(slots=True)
class _Entry:
    offset: ShareGroupOffset
    leader_epoch: int          # the fence: the highest leader epoch seen
    state_epoch: int           # the fence: the highest state epoch seen
    # ShareUpdates since the last snapshot taken for their number (Kafka's
    # snapshotUpdateCount: absent until the first update, which counts 0)
    updates: int | None = None


@dataclass(slots=True)
class ShareStateShard:
    """The keys of one ``__share_group_state`` partition; see the module docstring."""

    updates_per_snapshot: int
    time_ms: Callable[[], int]
    partition_exists: Callable[[uuid.UUID, int], bool] = lambda _t, _p: True
    _entries: dict[ShareKey, _Entry] = field(default_factory=dict)
    _snapshot_offsets: dict[ShareKey, int] = field(default_factory=dict)
    _redundant: int = _NO_OFFSET

    # -- what the log says ---------------------------------------------------------------
    def replay(self, record: StateRecord, offset: int = -1) -> None:
        """Apply one record read from (or appended to) the log at ``offset`` (-1:
        unknown, then not counted for pruning)."""
        if record.kind is RecordKind.TOMBSTONE or record.value is None:
            self._entries.pop(record.key, None)
            self._track_snapshot(record.key, offset, deleted=True)
        elif record.kind is RecordKind.SNAPSHOT:
            self._replay_snapshot(record.key, record.value)
            self._track_snapshot(record.key, offset, deleted=False)
        else:
            self._replay_update(record.key, record.value)

    def _replay_snapshot(self, key: ShareKey, value: ShareGroupOffset) -> None:
        entry = self._entries.get(key)
        if entry is None:
            self._entries[key] = _Entry(value, value.leader_epoch, value.state_epoch)
            return
        entry.offset = value
        entry.leader_epoch = max(entry.leader_epoch, value.leader_epoch)
        entry.state_epoch = max(entry.state_epoch, value.state_epoch)
        if entry.updates is not None and entry.updates >= self.updates_per_snapshot:
            entry.updates = 0

    def _replay_update(self, key: ShareKey, value: ShareGroupOffset) -> None:
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _Entry(value, value.leader_epoch, value.state_epoch)
        else:
            entry.offset = _merge_update(entry.offset, value)
            entry.leader_epoch = max(entry.leader_epoch, value.leader_epoch)
        entry.updates = 0 if entry.updates is None else entry.updates + 1

    def _track_snapshot(self, key: ShareKey, offset: int, *, deleted: bool) -> None:
        """Kafka's ShareCoordinatorOffsetsManager.updateState: the offset of each key's
        latest snapshot (or tombstone); the smallest of them is the first offset still
        needed, everything below it is redundant."""
        if offset < 0:
            return
        self._redundant = min(self._redundant, offset)
        self._snapshot_offsets[key] = offset
        lowest = min(self._snapshot_offsets.values())
        self._redundant = lowest
        if deleted:
            del self._snapshot_offsets[key]

    def last_redundant_offset(self) -> int | None:
        """The offset below which every record of the partition is superseded (Kafka's
        lastRedundantOffset), or None when nothing can be pruned yet."""
        value = self._redundant
        return None if value <= 0 or value == _NO_OFFSET else value

    def state(self, key: ShareKey) -> ShareGroupOffset | None:
        """The stored state of ``key``, or None."""
        entry = self._entries.get(key)
        return None if entry is None else entry.offset

    def keys(self) -> list[ShareKey]:
        return list(self._entries)

    # -- operations ----------------------------------------------------------------------
    def initialize(self, key: ShareKey, *, state_epoch: int, start_offset: int) -> Decision:
        if key.partition < 0:
            return Decision(ErrorCode.INVALID_REQUEST, message=_NEGATIVE_PARTITION)
        entry = self._entries.get(key)
        if state_epoch != -1 and entry is not None and entry.state_epoch > state_epoch:
            return _refused(ErrorCode.FENCED_STATE_EPOCH)
        if not self.partition_exists(key.topic_id, key.partition):
            return _refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        now = self.time_ms()
        value = ShareGroupOffset(
            snapshot_epoch=0 if entry is None else entry.offset.snapshot_epoch + 1,
            state_epoch=state_epoch, leader_epoch=-1, start_offset=start_offset,
            delivery_complete_count=(UNKNOWN_DELIVERY_COMPLETE_COUNT
                                     if start_offset == UNINITIALIZED_START_OFFSET else 0),
            create_timestamp=now, write_timestamp=now)
        return Decision(0, (StateRecord(RecordKind.SNAPSHOT, key, value),))

    def write(self, key: ShareKey, *, state_epoch: int, leader_epoch: int, start_offset: int,
              batches: Sequence[StateBatch],
              delivery_complete_count: int = UNKNOWN_DELIVERY_COMPLETE_COUNT) -> Decision:
        if key.partition < 0:
            return Decision(ErrorCode.INVALID_REQUEST, message=_NEGATIVE_PARTITION)
        entry = self._entries.get(key)
        if entry is None:
            return Decision(ErrorCode.INVALID_REQUEST, message=_WRITE_UNINITIALIZED)
        fenced = self._fenced(entry, leader_epoch=leader_epoch, state_epoch=state_epoch)
        if fenced:
            return _refused(fenced)
        if not self.partition_exists(key.topic_id, key.partition):
            return _refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        record = self._progress_record(key, entry, state_epoch=state_epoch,
                                       leader_epoch=leader_epoch, start_offset=start_offset,
                                       batches=batches,
                                       delivery_complete_count=delivery_complete_count)
        return Decision(0, (record,))

    def read(self, key: ShareKey, *, leader_epoch: int) -> Decision:
        if key.partition < 0:
            return Decision(ShareState(ErrorCode.INVALID_REQUEST, message=_NEGATIVE_PARTITION))
        entry = self._entries.get(key)
        if entry is None:
            return Decision(ShareState(ErrorCode.INVALID_REQUEST, message=_READ_UNINITIALIZED))
        if self._fenced(entry, leader_epoch=leader_epoch, state_epoch=-1):
            return Decision(_failed(ErrorCode.FENCED_LEADER_EPOCH))
        if not self.partition_exists(key.topic_id, key.partition):
            return Decision(_failed(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
        stored = entry.offset
        answer = ShareState(0, state_epoch=stored.state_epoch, start_offset=stored.start_offset,
                            leader_epoch=stored.leader_epoch, batches=stored.batches,
                            delivery_complete_count=stored.delivery_complete_count)
        if leader_epoch == -1 or leader_epoch == entry.leader_epoch:
            return Decision(answer)
        record = self._progress_record(key, entry, state_epoch=stored.state_epoch,
                                       leader_epoch=leader_epoch,
                                       start_offset=stored.start_offset, batches=(),
                                       delivery_complete_count=stored.delivery_complete_count)
        return Decision(answer, (record,))

    def read_summary(self, key: ShareKey) -> ShareState:
        if key.partition < 0:
            return ShareState(ErrorCode.INVALID_REQUEST, message=_NEGATIVE_PARTITION)
        if not self.partition_exists(key.topic_id, key.partition):
            return _failed(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        entry = self._entries.get(key)
        if entry is None:
            return ShareState(0, state_epoch=DEFAULT_STATE_EPOCH,
                              start_offset=UNINITIALIZED_START_OFFSET, leader_epoch=-1)
        stored = entry.offset
        return ShareState(0, state_epoch=stored.state_epoch, start_offset=stored.start_offset,
                          leader_epoch=stored.leader_epoch,
                          delivery_complete_count=stored.delivery_complete_count)

    def delete(self, key: ShareKey) -> Decision:
        if key.partition < 0:
            return Decision(ErrorCode.INVALID_REQUEST, message=_NEGATIVE_PARTITION)
        if not self.partition_exists(key.topic_id, key.partition):
            return _refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if key not in self._entries:
            return Decision(0)
        return Decision(0, (StateRecord(RecordKind.TOMBSTONE, key),))

    def cold_snapshots(self, interval_ms: int) -> list[StateRecord]:
        """Kafka's snapshotColdPartitions: when some key has never been snapshotted again
        since its creation (create timestamp = write timestamp), a new snapshot (snapshot
        epoch + 1, the same state, write timestamp now) of every key whose last snapshot
        is at least ``interval_ms`` old, so idle keys stop holding back pruning."""
        if all(e.offset.create_timestamp != e.offset.write_timestamp
               for e in self._entries.values()):
            return []
        now = self.time_ms()
        return [StateRecord(RecordKind.SNAPSHOT, key, replace(
                    entry.offset, snapshot_epoch=entry.offset.snapshot_epoch + 1,
                    write_timestamp=now))
                for key, entry in self._entries.items()
                if now - entry.offset.write_timestamp >= interval_ms]

    def deleted_topic_tombstones(self, topic_ids: set[uuid.UUID]) -> list[StateRecord]:
        """Kafka's maybeCleanupShareState: a tombstone for every key of a deleted topic."""
        return [StateRecord(RecordKind.TOMBSTONE, key) for key in self._entries
                if key.topic_id in topic_ids]

    # -- helpers -------------------------------------------------------------------------
    @staticmethod
    def _fenced(entry: _Entry, *, leader_epoch: int, state_epoch: int) -> int:
        if leader_epoch != -1 and entry.leader_epoch > leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        if state_epoch != -1 and entry.state_epoch > state_epoch:
            return ErrorCode.FENCED_STATE_EPOCH
        return 0

    def _progress_record(self, key: ShareKey, entry: _Entry, *, state_epoch: int,
                         leader_epoch: int, start_offset: int, batches: Sequence[StateBatch],
                         delivery_complete_count: int) -> StateRecord:
        """A write's record (Kafka's generateShareStateRecord): a ShareSnapshot once
        enough updates followed the last one, else a ShareUpdate."""
        stored = entry.offset
        if (entry.updates or 0) >= self.updates_per_snapshot:
            start = stored.start_offset if start_offset == -1 else start_offset
            now = self.time_ms()
            value = ShareGroupOffset(
                snapshot_epoch=stored.snapshot_epoch + 1,
                state_epoch=stored.state_epoch if state_epoch == -1 else state_epoch,
                leader_epoch=stored.leader_epoch if leader_epoch == -1 else leader_epoch,
                start_offset=start, batches=tuple(combine(stored.batches, batches, start)),
                delivery_complete_count=delivery_complete_count,
                create_timestamp=now, write_timestamp=now)
            return StateRecord(RecordKind.SNAPSHOT, key, value)
        value = ShareGroupOffset(
            snapshot_epoch=stored.snapshot_epoch, state_epoch=stored.state_epoch,
            leader_epoch=leader_epoch, start_offset=start_offset,
            batches=tuple(combine((), batches, start_offset)),
            delivery_complete_count=delivery_complete_count)
        return StateRecord(RecordKind.UPDATE, key, value)


def _refused(code: int) -> Decision:
    return Decision(code, message=KAFKA_MESSAGES.get(code))


def _failed(code: int) -> ShareState:
    return ShareState(code, message=KAFKA_MESSAGES.get(code))


def _merge_update(stored: ShareGroupOffset, update: ShareGroupOffset) -> ShareGroupOffset:
    """A ShareUpdate applied to the stored state (Kafka's ShareCoordinatorShard.merge)."""
    start = stored.start_offset if update.start_offset == -1 else update.start_offset
    return replace(
        stored,
        start_offset=start,
        leader_epoch=stored.leader_epoch if update.leader_epoch == -1 else update.leader_epoch,
        delivery_complete_count=update.delivery_complete_count,
        batches=tuple(combine(stored.batches, update.batches, start)))
