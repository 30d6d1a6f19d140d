"""``SharePartition``: Kafka's share-partition leader state of one (group, topic partition).

Kafka's SharePartition, pure: no I/O, no timers, no locks.  The caller (the share
partition manager) reads the log and hands the batch boundaries it read to ``acquire``,
persists ``state_batches()`` after every call that answers ``changed``, writes dead-letter
candidates and confirms them, and schedules one timer at ``next_deadline()`` that calls
``expire_locks()``.  Every time comes from the injected clock (monotonic milliseconds).

Model (Kafka's):
- The share-partition start offset (SPSO, ``start_offset``) is the first offset not yet
  delivered to completion; the end offset (SPEO, ``end_offset``) the last offset ever
  acquired (or SPSO when nothing is in flight).  Records between them are *in flight*,
  kept as batches keyed by first offset: a batch holds one state for all its offsets
  until an operation touches part of it, then it keeps one state per offset.
- Record states: AVAILABLE 0, ACQUIRED 1, ACKNOWLEDGED 2, ARCHIVED 4.  Transitions:
  AVAILABLE -> ACQUIRED (delivery count + 1, lock until now + lock duration, owner set);
  ACQUIRED -> AVAILABLE (RELEASE, lock expiry, member gone), ACKNOWLEDGED (ACCEPT) or
  ARCHIVED (REJECT, GAP, or a release at the delivery count limit).  ACKNOWLEDGED and
  ARCHIVED are final.
- Offsets below SPSO are complete; SPSO moves past leading ACKNOWLEDGED/ARCHIVED offsets
  and the in-flight batches below it are dropped.
- The in-flight limit (``max_in_flight_records``, Kafka's
  ``group.share.partition.max.record.locks``) bounds ``end_offset - start_offset + 1``
  for acquiring new offsets; re-acquiring AVAILABLE in-flight records is always allowed.

Beyond Kafka:
- Backoff: with ``backoff_ms`` > 0, a record released (RELEASE, lock expiry, member gone)
  after delivery count n is acquirable only from now + min(backoff_ms * 2**(n-1),
  backoff_max_ms); ``acquire`` skips it without blocking later offsets, and
  ``next_deadline()`` includes the moment it becomes acquirable.
- Dead letters: with ``dead_letters`` on, a record REJECTed or released at the delivery
  count limit is not archived at once but *pending* (never acquired again, SPSO stops
  at it), reported in ``Transition.dead_letters``; the caller appends it to the
  dead-letter topic and calls ``confirm_dead_lettered``, which archives it.  A pending
  record is persisted as AVAILABLE with delivery count max(its count, the limit), so a
  new leader rebuilding from the persisted state finds it at the limit and reports it
  as a dead-letter candidate again (``pending_dead_letters()``) rather than delivering
  it: it reaches the dead-letter topic at least once and is never delivered again
  (twice only if a leader dies between the append and the persisted confirmation).
  With ``dead_letters`` off (Kafka's behaviour) such records are archived at once.
"""
from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from kafkapy.clock import Clock
from kafkapy.coordinator.share.persister import ShareState, StateBatch


class RecordState(enum.IntEnum):
    """Kafka's RecordState ids (persisted: AVAILABLE, ACKNOWLEDGED, ARCHIVED)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AcknowledgeType(enum.IntEnum):
    """ShareFetch/ShareAcknowledge acknowledge types (0 is a gap: no record there)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


class AcquireMode(enum.IntEnum):
    """ShareFetch v2's ShareAcquireMode: BATCH_OPTIMIZED may exceed ``max_records`` to
    keep whole log batches; RECORD_LIMIT never does."""

    BATCH_OPTIMIZED = 0
    RECORD_LIMIT = 1


class SharePartitionState(enum.Enum):
    """Kafka's SharePartitionState."""

    EMPTY = "EMPTY"
    ACTIVE = "ACTIVE"
    FAILED = "FAILED"
    FENCED = "FENCED"


class FetchedBatch(NamedTuple):
    """One record batch the caller read from the log: inclusive offsets and what
    read_committed needs (a plain ``(base_offset, last_offset)`` pair is accepted too)."""

    base_offset: int
    last_offset: int
    producer_id: int = -1
    is_transactional: bool = False
    is_control: bool = False


class AcquiredRecords(NamedTuple):
    """ShareFetchResponse's AcquiredRecords: an inclusive range and its delivery count."""

    first_offset: int
    last_offset: int
    delivery_count: int


class AcknowledgementBatch(NamedTuple):
    """Kafka's ShareAcknowledgementBatch: one type for the whole inclusive range, or one
    type per offset (``len(acknowledge_types) == last_offset - first_offset + 1``)."""

    first_offset: int
    last_offset: int
    acknowledge_types: tuple[int, ...]


class ArchivedRecords(NamedTuple):
    """Records to append to the dead-letter topic before they are archived: an inclusive
    range, the delivery count they reached, and ``reason`` (``rejected`` or
    ``delivery_count_limit``, the ``__dlq.errors.reason`` header)."""

    first_offset: int
    last_offset: int
    delivery_count: int
    reason: str


REASON_REJECTED = "rejected"
REASON_DELIVERY_COUNT_LIMIT = "delivery_count_limit"


@dataclass(slots=True)
class Transition:
    """What a call changed.

    ``error``: 0 or the Kafka error code for the partition (nothing changed then).
    ``changed``: state the caller must persist (``state_batches()``).
    ``available``: records became acquirable (wake delayed share fetches).
    ``dead_letters``: records now pending for the dead-letter topic."""

    error: int = 0
    changed: bool = False
    available: bool = False
    dead_letters: list[ArchivedRecords] = field(default_factory=list)


ResetResolver = Callable[[], int]


class SharePartition:
    """One share partition's in-flight records; see the module docstring.

    Kafka's SharePartition without its persister, timer and replica manager: the caller
    passes the persister's read to ``maybe_initialize``, persists ``state_batches()``,
    and calls ``expire_locks`` at ``next_deadline()``.  The configs are attributes the
    caller may change at any time (group configs are dynamic): ``lock_duration_ms``,
    ``delivery_count_limit``, ``backoff_ms``, ``backoff_max_ms``, ``dead_letters``.
    """

    def __init__(self, group_id: str, topic_id: object, topic: str, partition: int, *,
                 clock: Clock, max_in_flight_records: int, delivery_count_limit: int,
                 lock_duration_ms: int, backoff_ms: int = 0, backoff_max_ms: int = 0,
                 dead_letters: bool = False, leader_epoch: int = 0) -> None:
        self.group_id = group_id
        self.topic_id = topic_id
        self.topic = topic
        self.partition = partition
        self.leader_epoch = leader_epoch
        self.max_in_flight_records = max_in_flight_records
        self.delivery_count_limit = delivery_count_limit
        self.lock_duration_ms = lock_duration_ms
        self.backoff_ms = backoff_ms
        self.backoff_max_ms = backoff_max_ms
        self.dead_letters = dead_letters
        self._clock = clock

    # -- life cycle --------------------------------------------------------------

    @property
    def state(self) -> SharePartitionState:
        """EMPTY until ``maybe_initialize``; ACTIVE, FAILED or FENCED after."""
        raise NotImplementedError

    def maybe_initialize(self, state: ShareState, *, log_start_offset: int,
                         resolve_reset: ResetResolver) -> int:
        """Load the persister's read (ReadShareGroupState) into an EMPTY partition.

        ``state.error`` != 0 leaves the partition FAILED and answers Kafka's mapping of
        it (NOT_COORDINATOR / COORDINATOR_* -> COORDINATOR_NOT_AVAILABLE, FENCED_STATE_EPOCH,
        GROUP_ID_NOT_FOUND, UNKNOWN_TOPIC_OR_PARTITION kept; else UNKNOWN_SERVER_ERROR).
        Start offset -1: ``resolve_reset()`` answers the offset of ``share.auto.offset.reset``
        (latest, earliest, by_duration) and the change must be persisted.  A start offset
        below ``log_start_offset`` moves up to it.  The state epoch is kept for writes.
        Answers 0 when ACTIVE (also when it already was)."""
        raise NotImplementedError

    def fence(self) -> None:
        """The partition is no longer led here (or its state epoch was fenced): FENCED,
        every call after answers an error."""
        raise NotImplementedError

    # -- views -------------------------------------------------------------------

    @property
    def start_offset(self) -> int:
        """SPSO: the first offset not delivered to completion."""
        raise NotImplementedError

    @property
    def end_offset(self) -> int:
        """SPEO: the last offset in flight (== start_offset when nothing is)."""
        raise NotImplementedError

    @property
    def state_epoch(self) -> int:
        """The persisted state epoch (write with it)."""
        raise NotImplementedError

    @property
    def delivery_complete_count(self) -> int:
        """ACKNOWLEDGED or ARCHIVED offsets at or above SPSO (the v1 write's count)."""
        raise NotImplementedError

    @property
    def in_flight_count(self) -> int:
        """Offsets from SPSO to SPEO that are in flight (not complete)."""
        raise NotImplementedError

    @property
    def acquired_count(self) -> int:
        """Offsets ACQUIRED right now."""
        raise NotImplementedError

    def next_fetch_offset(self) -> int:
        """The offset the next log read starts at: the first acquirable in-flight offset,
        else the offset after SPEO (SPSO when nothing is in flight)."""
        raise NotImplementedError

    def can_acquire(self) -> bool:
        """ACTIVE and either an in-flight record is acquirable now or the in-flight
        window has room for new offsets (Kafka's canAcquireRecords)."""
        raise NotImplementedError

    def next_deadline(self) -> int | None:
        """The earliest acquisition lock expiry or backoff end (monotonic ms), None if
        there is none: the caller's one timer for ``expire_locks``."""
        raise NotImplementedError

    # -- operations --------------------------------------------------------------

    def acquire(self, member_id: str, batches: Sequence[FetchedBatch | tuple[int, int]], *,
                max_records: int, batch_size: int | None = None,
                mode: AcquireMode = AcquireMode.BATCH_OPTIMIZED,
                aborted_transactions: Sequence[tuple[int, int]] | None = None
                ) -> list[AcquiredRecords]:
        """Acquire for ``member_id`` the records of the log batches the caller read
        (offset order, starting at or before ``next_fetch_offset()``).

        In-flight AVAILABLE records in range are re-acquired (delivery count + 1; those in
        backoff skipped); offsets past SPEO become new in-flight batches acquired whole
        (split at ``batch_size`` when given), within the in-flight limit.
        ``max_records`` bounds the count (BATCH_OPTIMIZED may exceed it by the rest of a
        log batch, as Kafka does).  ``aborted_transactions`` (``(producer_id,
        first_offset)`` pairs as Fetch answers them) means read_committed: records of
        aborted transactions and control batches are archived, never acquired.
        Answers the acquired ranges (empty when nothing could be)."""
        raise NotImplementedError

    def acknowledge(self, member_id: str,
                    batches: Sequence[AcknowledgementBatch]) -> Transition:
        """Apply ShareFetch/ShareAcknowledge acknowledgements of ``member_id``.

        All or nothing: INVALID_RECORD_STATE when an offset is not ACQUIRED by the member
        (or is not in flight), INVALID_REQUEST for a malformed batch (first > last, a
        type list of the wrong length, an unknown type); nothing changes then.
        ACCEPT -> ACKNOWLEDGED, RELEASE -> AVAILABLE (ARCHIVED / dead letter at the
        limit), REJECT and GAP -> ARCHIVED (dead letter for REJECT), RENEW -> lock
        extended to now + lock duration (still ACQUIRED)."""
        raise NotImplementedError

    def release_acquired(self, member_id: str) -> Transition:
        """The member's session closed or it left: its ACQUIRED records become AVAILABLE
        (delivery count kept; ARCHIVED / dead letter at the limit)."""
        raise NotImplementedError

    def expire_locks(self, now: int | None = None) -> Transition:
        """Acquisition locks expired by ``now`` (default: the clock): those records
        become AVAILABLE (or ARCHIVED / dead letter at the limit); backoffs ended by
        ``now`` are dropped (``Transition.available`` set)."""
        raise NotImplementedError

    def pending_dead_letters(self) -> list[ArchivedRecords]:
        """Every record waiting for ``confirm_dead_lettered`` (after a failed append, or
        found at the delivery count limit when the state was loaded)."""
        raise NotImplementedError

    def confirm_dead_lettered(self, first_offset: int, last_offset: int) -> Transition:
        """The caller appended [first, last] to the dead-letter topic: archive them."""
        raise NotImplementedError

    def update_log_start_offset(self, log_start_offset: int) -> Transition:
        """The log's start offset moved (retention, DeleteRecords): offsets below it
        are archived and SPSO moves up to it."""
        raise NotImplementedError

    # -- persistence -------------------------------------------------------------

    def state_batches(self) -> list[StateBatch]:
        """The persister's write: in-flight offsets from SPSO grouped into ranges of one
        persisted state and delivery count (ACQUIRED written as AVAILABLE)."""
        raise NotImplementedError
