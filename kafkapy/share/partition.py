"""``SharePartition``: Kafka's share-partition leader state of one (group, topic partition).

Kafka's SharePartition, pure: no I/O, no timers, no locks.  The caller (the share
partition manager) passes the persister's read to ``maybe_initialize``, reads the log
from ``next_fetch_offset()`` and hands the batch boundaries it read to ``acquire``,
persists ``state_batches()`` after every call whose ``Transition.changed`` is set,
appends dead-letter candidates and confirms them, and keeps one timer at
``next_deadline()`` that calls ``expire_locks()``.  Times are the injected clock's
monotonic milliseconds.

Model (Kafka's):
- The share-partition start offset (SPSO, ``start_offset``) is the first offset not
  delivered to completion; the end offset (SPEO, ``end_offset``) the last offset in
  flight (SPSO when nothing is).  The offsets from SPSO to SPEO are *in flight*, kept as
  runs of one state (``kafkapy.share.in_flight``).
- Record states: AVAILABLE 0, ACQUIRED 1, ACKNOWLEDGED 2, ARCHIVED 4.  AVAILABLE ->
  ACQUIRED (delivery count + 1, owner, lock until now + ``lock_duration_ms``);
  ACQUIRED -> AVAILABLE (RELEASE or lock expiry: count kept; the member's session
  closed: count - 1, as Kafka's releaseAcquiredRecords), ACKNOWLEDGED (ACCEPT) or
  ARCHIVED (REJECT, GAP; a RELEASE or lock expiry at ``delivery_count_limit``).
  ACKNOWLEDGED and ARCHIVED are final.  RENEW moves the lock to now + lock duration.
- SPSO moves past leading ACKNOWLEDGED/ARCHIVED offsets, which are then forgotten.
- New offsets are acquired while the in-flight window (SPEO - SPSO + 1) is below
  ``max_in_flight_records`` (``group.share.partition.max.record.locks``); AVAILABLE
  in-flight records can always be re-acquired.  New offsets are acquired up to the end
  of a fetched log batch (BATCH_OPTIMIZED: ``max_records`` is soft) or exactly
  ``max_records`` (RECORD_LIMIT: the rest of the log batch stays AVAILABLE).
- Kafka 4.2's delivery throttling: an in-flight record delivered at least
  max(2, ceil(limit / 2)) times is re-acquired only at the head of a response, in
  halving groups (run size >> (count - threshold + 1)), and on its last attempt alone.
- read_committed (``aborted_transactions`` given): the acquired records of aborted
  transactions (Kafka's Fetch rules: producer ids, abort markers) are archived and left
  out of the answer.
- Offsets the log no longer has (compaction: between the fetch offset and the first
  fetched batch, or between SPEO and the first new batch) are archived; offsets below a
  new log start offset are dropped (``update_log_start_offset``).
- Kafka rolls a change back when its persister write fails; here a change is applied at
  once and the caller's next successful write (the whole state) carries it.

Beyond Kafka:
- Backoff: with ``backoff_ms`` > 0, a record released (RELEASE, lock expiry) after
  delivery count n is acquirable only from now + min(backoff_ms * 2**(n-1),
  ``backoff_max_ms``) (no cap when that is 0); ``acquire`` and ``next_fetch_offset``
  skip it without blocking later offsets; ``next_deadline()`` includes the moment it
  becomes acquirable, when ``expire_locks`` reports ``Transition.available``.
- Dead letters: with ``dead_letters`` on, a record REJECTed, or released or expired at
  the delivery count limit, is archived *pending its dead-letter append*: never
  acquired again, not complete (SPSO stops at it), reported once in
  ``Transition.dead_letters`` and listed by ``pending_dead_letters()`` until the caller
  appends it to the dead-letter topic and calls ``confirm_dead_lettered``.  It is
  persisted as AVAILABLE with a delivery count at or above the limit, so a new leader
  loading it (with ``dead_letters`` on) makes it pending again rather than delivering
  it (and Kafka, reading the same state, archives it): max(its count, the limit) for
  the limit reached, ``REJECTED_MARK`` + its count for a REJECT, so the new leader's
  dead letter names the same reason and delivery count.  A record reaches the
  dead-letter topic at least once and is never delivered again; the dead-letter
  writer's look into the dead-letter partition keeps a leader change between the
  append and the persisted confirmation from writing it twice.  With ``dead_letters``
  off (Kafka) such records are archived at once.
"""
from __future__ import annotations

import enum
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from kafkapy.clock import Clock
from kafkapy.coordinator.share.persister import ShareState, StateBatch
from kafkapy.protocol.errors import ErrorCode
from kafkapy.share.in_flight import InFlightRuns, RecordState, Run

__all__ = [
    "AcknowledgeType", "AcknowledgementBatch", "AcquireMode", "AcquiredRecords",
    "ArchivedRecords", "FetchedBatch", "InFlightRange", "REASON_DELIVERY_COUNT_LIMIT",
    "REASON_REJECTED", "RecordState", "SharePartition", "SharePartitionState",
    "Transition", "persister_error", "redelivery_delay_ms",
]


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
    """Kafka's SharePartitionState (INITIALIZING is the caller's await of the read)."""

    EMPTY = "EMPTY"
    ACTIVE = "ACTIVE"
    FAILED = "FAILED"
    FENCED = "FENCED"


class FetchedBatch(NamedTuple):
    """One record batch the caller read from the log: inclusive offsets and what
    read_committed needs (``is_abort_marker``: a control batch whose record is an ABORT
    marker).  A plain ``(base_offset, last_offset)`` pair is accepted too."""

    base_offset: int
    last_offset: int
    producer_id: int = -1
    is_transactional: bool = False
    is_control: bool = False
    is_abort_marker: bool = False


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


class InFlightRange(NamedTuple):
    """A read-only view of in-flight offsets in one state (``SharePartition.in_flight``);
    ``member_id`` is the owner while ACQUIRED, ``dead_letter`` the reason while pending."""

    first_offset: int
    last_offset: int
    state: RecordState
    delivery_count: int
    member_id: str
    dead_letter: str | None


REASON_REJECTED = "rejected"
REASON_DELIVERY_COUNT_LIMIT = "delivery_count_limit"
#: Added to the delivery count a REJECTed record pending its dead letter is persisted
#: with: above any delivery count limit (at most 10), within the field's int16.
REJECTED_MARK = 1000


@dataclass(slots=True)
class Transition:
    """What a call changed.

    ``error``: 0 or the Kafka error code for the partition (nothing changed then).
    ``changed``: state the caller must persist (``state_batches()``).
    ``available``: records became acquirable (wake delayed share fetches).
    ``dead_letters``: records newly pending for the dead-letter topic."""

    error: int = 0
    changed: bool = False
    available: bool = False
    dead_letters: list[ArchivedRecords] = field(default_factory=list)


ResetResolver = Callable[[], int]

_MIN_THROTTLE_DELIVERY_COUNT = 2
_ACK_TYPES = frozenset(int(t) for t in AcknowledgeType)


def redelivery_delay_ms(delivery_count: int, backoff_ms: int, backoff_max_ms: int) -> int:
    """The backoff before a record released after ``delivery_count`` deliveries is
    acquirable again: backoff_ms * 2**(count-1), at most ``backoff_max_ms`` (> 0)."""
    if backoff_ms <= 0 or delivery_count <= 0:
        return 0
    if backoff_max_ms > 0 and delivery_count > 62:
        return backoff_max_ms
    delay = backoff_ms << (delivery_count - 1)
    return min(delay, backoff_max_ms) if backoff_max_ms > 0 else delay


def persister_error(code: int) -> int:
    """The error a share-partition leader answers for a persister's error (Kafka's
    SharePartition.fetchPersisterError)."""
    match code:
        case ErrorCode.NOT_COORDINATOR | ErrorCode.COORDINATOR_NOT_AVAILABLE | \
                ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        case ErrorCode.GROUP_ID_NOT_FOUND | ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            return code
        case ErrorCode.FENCED_LEADER_EPOCH | ErrorCode.FENCED_STATE_EPOCH:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        case _:
            return ErrorCode.UNKNOWN


class SharePartition:
    """One share partition's in-flight records; see the module docstring.

    Kafka's SharePartition without its persister, timer and replica manager.  The
    configs are attributes the caller may change at any time (group configs are
    dynamic): ``lock_duration_ms`` (new locks), ``delivery_count_limit``,
    ``max_in_flight_records``, ``backoff_ms``, ``backoff_max_ms``, ``dead_letters``
    (set it before ``maybe_initialize``: loading reads it)."""

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
        self._state = SharePartitionState.EMPTY
        self._state_epoch = 0
        self._runs = InFlightRuns(0)

    # -- life cycle --------------------------------------------------------------

    @property
    def state(self) -> SharePartitionState:
        """EMPTY until ``maybe_initialize``; ACTIVE, FAILED or FENCED after."""
        return self._state

    def maybe_initialize(self, state: ShareState, *, resolve_reset: ResetResolver,
                         log_start_offset: int | None = None) -> int:
        """Load the persister's read (ReadShareGroupState) into an EMPTY partition.

        ``state.error`` != 0 leaves the partition FAILED and answers
        ``persister_error(state.error)``.  Start offset -1: ``resolve_reset()`` answers
        the offset of ``share.auto.offset.reset`` (latest, earliest, by_duration).
        Batches are clipped to the start offset; offsets between the start offset and
        the batches, or between batches, are AVAILABLE with delivery count 0 (Kafka's
        read gap window); AVAILABLE at the delivery count limit with ``dead_letters`` on
        become pending dead letters.  A ``log_start_offset`` above the start offset
        moves it (``update_log_start_offset``).  The state epoch is kept for writes.
        Answers 0 when ACTIVE (also when it already was); LEADER_NOT_AVAILABLE when
        FENCED, UNKNOWN_SERVER_ERROR when FAILED (Kafka: the partition is dropped and
        made anew)."""
        if self._state is not SharePartitionState.EMPTY:
            return self._inactive_error(initializing=True)
        if state.error:
            self._state = SharePartitionState.FAILED
            return persister_error(state.error)
        start = state.start_offset if state.start_offset >= 0 else resolve_reset()
        if start < 0:
            self._state = SharePartitionState.FAILED
            return ErrorCode.UNKNOWN
        self._state_epoch = state.state_epoch
        self._load(start, state.batches)
        self._state = SharePartitionState.ACTIVE
        if log_start_offset is not None:
            self.update_log_start_offset(log_start_offset)
        return ErrorCode.NO_ERROR

    def fence(self) -> None:
        """The partition is no longer led here, or a write was fenced: FENCED; every
        call after answers an error or nothing."""
        self._state = SharePartitionState.FENCED

    # -- views -------------------------------------------------------------------

    @property
    def start_offset(self) -> int:
        """SPSO: the first offset not delivered to completion."""
        return self._runs.start

    @property
    def end_offset(self) -> int:
        """SPEO: the last offset in flight (== start_offset when nothing is)."""
        return self._runs.end

    @property
    def next_new_offset(self) -> int:
        """The first offset past the in-flight ones (SPSO when nothing is in flight):
        where new offsets are acquired from."""
        return self._runs.next_new_offset

    @property
    def state_epoch(self) -> int:
        """The persisted state epoch (write with it)."""
        return self._state_epoch

    @property
    def delivery_complete_count(self) -> int:
        """ACKNOWLEDGED or ARCHIVED offsets at or above SPSO (the v1 write's count)."""
        return sum(run.size for run in self._runs if run.terminal)

    @property
    def in_flight_count(self) -> int:
        """SPEO - SPSO + 1 when anything is in flight, else 0 (Kafka's count)."""
        return self._runs.end - self._runs.start + 1 if len(self._runs) else 0

    @property
    def acquired_count(self) -> int:
        """Offsets ACQUIRED right now."""
        return sum(run.size for run in self._runs if run.state == RecordState.ACQUIRED)

    @property
    def pending_dead_letter_count(self) -> int:
        """Offsets waiting for ``confirm_dead_lettered``."""
        return sum(run.size for run in self._runs if run.dead_letter is not None)

    def in_flight(self) -> list[InFlightRange]:
        """The in-flight offsets, in ranges of one state."""
        return [InFlightRange(run.first, run.last, run.state, run.delivery_count,
                              run.member_id, run.dead_letter) for run in self._runs]

    def next_fetch_offset(self) -> int:
        """Where the next log read starts: the first in-flight offset acquirable now,
        else the offset after SPEO (SPSO when nothing is in flight)."""
        now = self._now()
        for run in self._runs:
            if run.acquirable(now):
                return run.first
        return self._runs.next_new_offset

    def can_acquire(self) -> bool:
        """ACTIVE and either an in-flight record is acquirable now or the in-flight
        window has room for new offsets (Kafka's canAcquireRecords)."""
        if self._state is not SharePartitionState.ACTIVE:
            return False
        if self.next_fetch_offset() != self._runs.end + 1:
            return True
        return self.in_flight_count < self.max_in_flight_records

    def next_deadline(self) -> int | None:
        """The earliest acquisition lock expiry or backoff end (monotonic ms), None if
        there is none: when the caller's one timer calls ``expire_locks``."""
        times = [run.deadline for run in self._runs if run.state == RecordState.ACQUIRED]
        times += [run.available_at for run in self._runs
                  if run.state == RecordState.AVAILABLE and run.available_at]
        return min(times, default=None)

    # -- acquire -----------------------------------------------------------------

    def acquire(self, member_id: str, batches: Sequence[FetchedBatch | tuple[int, int]], *,
                max_records: int, batch_size: int | None = None,
                mode: AcquireMode = AcquireMode.BATCH_OPTIMIZED,
                aborted_transactions: Sequence[tuple[int, int]] | None = None,
                fetch_offset: int | None = None) -> list[AcquiredRecords]:
        """Acquire for ``member_id`` the records of the log batches the caller read
        from ``fetch_offset`` (default: the first batch's base offset), in offset order.

        In-flight records acquirable now are re-acquired (delivery count + 1); offsets
        past SPEO become new in-flight records, acquired up to the end of a log batch
        (split into answers of about ``batch_size`` at log batch boundaries in
        BATCH_OPTIMIZED mode), within the in-flight window.  ``max_records`` bounds the
        count (BATCH_OPTIMIZED may exceed it by the rest of a log batch, as Kafka does).
        ``aborted_transactions`` (``(producer_id, first_offset)`` pairs as Fetch answers
        them) means read_committed: acquired records of aborted transactions are
        archived and left out.  Answers the acquired ranges (empty when nothing could
        be, or the partition is not ACTIVE)."""
        if self._state is not SharePartitionState.ACTIVE or max_records <= 0 or not batches:
            return []
        fetched = [_as_fetched(batch) for batch in batches]
        fetch_offset = fetched[0].base_offset if fetch_offset is None else fetch_offset
        limit, last = self._acquire_window(max_records, fetch_offset, fetched[-1].last_offset)
        if limit <= 0:
            return []
        self._archive_compacted(fetch_offset, fetched[0].base_offset)
        acquisition = _Acquisition(member_id, self._now(), limit, mode, fetched)
        first = max(fetched[0].base_offset, self._runs.start)
        if len(self._runs) and first <= self._runs.end:
            self._reacquire(acquisition, first, min(last, self._runs.end))
        if not acquisition.stopped and acquisition.count < limit and last >= self._runs.next_new_offset:
            self._acquire_new(acquisition, fetch_offset, last, batch_size)
        result = acquisition.result
        if aborted_transactions:
            result = self._archive_aborted(result, fetched, aborted_transactions)
        self._settle()
        return result

    def _acquire_window(self, max_records: int, fetch_offset: int, last: int) -> tuple[int, int]:
        """Kafka's lastOffsetAndMaxRecordsToAcquire: how many records and up to which
        offset, within the in-flight window."""
        limit = min(max_records, self.max_in_flight_records - self.in_flight_count)
        if limit > 0:
            return limit, last
        if len(self._runs) and fetch_offset <= self._runs.end:
            return (min(max_records, self._runs.end - fetch_offset + 1),
                    min(last, self._runs.end))
        return 0, last

    def _reacquire(self, acq: _Acquisition, first: int, last: int) -> None:
        offset = first
        while offset <= last and acq.count < acq.limit and not acq.stopped:
            run = self._runs.run_at(offset)
            end = min(run.last, last)
            if run.acquirable(acq.now):
                end = self._reacquire_run(acq, run, offset, end)
            offset = end + 1

    def _reacquire_run(self, acq: _Acquisition, run: Run, first: int, last: int) -> int:
        """Acquire [first, last] of ``run`` or its head; answers the last offset seen."""
        count = run.delivery_count
        remaining = acq.limit - acq.count
        if count >= self._throttle_threshold():
            if acq.count:
                acq.stopped = True
                return last
            take = max(1, (last - first + 1) >> (count - self._throttle_threshold() + 1))
            if self.delivery_count_limit > 2 and count == self.delivery_count_limit - 1:
                take = 1
            if acq.mode == AcquireMode.RECORD_LIMIT:
                take = min(take, remaining)
            acq.stopped = True
            last = min(last, first + take - 1)
        elif last - first + 1 > remaining:
            if acq.mode == AcquireMode.RECORD_LIMIT:
                last = first + remaining - 1
            else:
                last = min(last, _batch_last(acq.fetched, first + remaining - 1))
        for part in self._runs.carve(first, last):
            part.state = RecordState.ACQUIRED
            part.delivery_count += 1
            part.member_id = acq.member_id
            part.deadline = acq.now + self.lock_duration_ms
            part.available_at = 0
            acq.add(part.first, part.last, part.delivery_count)
        return last

    def _acquire_new(self, acq: _Acquisition, fetch_offset: int, last: int,
                     batch_size: int | None) -> None:
        """New offsets from the first fetched batch past SPEO to ``last``.  Offsets
        between SPEO and that batch are archived when the read covered them (the log no
        longer has them), else left AVAILABLE to be read again."""
        first = self._runs.next_new_offset
        base = next((max(batch.base_offset, first) for batch in acq.fetched
                     if batch.last_offset >= first), None)
        if base is None or base > last:
            return
        if base > first:
            skipped = RecordState.ARCHIVED if fetch_offset <= first else RecordState.AVAILABLE
            self._runs.append(Run(first, base - 1, skipped, 0))
        remaining = acq.limit - acq.count
        end = last
        if remaining < last - base + 1:
            end = _batch_last(acq.fetched, base + remaining - 1)
        acquired_end = end
        if acq.mode == AcquireMode.RECORD_LIMIT and end - base + 1 > remaining:
            acquired_end = base + remaining - 1
        self._runs.append(Run(base, acquired_end, RecordState.ACQUIRED, 1, acq.member_id,
                              acq.now + self.lock_duration_ms))
        if acquired_end < end:
            self._runs.append(Run(acquired_end + 1, end, RecordState.AVAILABLE, 0))
        split = batch_size if acq.mode == AcquireMode.BATCH_OPTIMIZED else None
        for piece_first, piece_last in _split_at_batches(base, acquired_end, acq.fetched, split):
            acq.add(piece_first, piece_last, 1)

    def _archive_compacted(self, fetch_offset: int, base_offset: int) -> None:
        """Kafka's maybeArchiveStaleBatches: AVAILABLE offsets from the fetch offset to the
        first fetched batch are gone from the log."""
        if fetch_offset >= base_offset:
            return
        stale = [(max(run.first, fetch_offset), min(run.last, base_offset - 1))
                 for run in self._runs.overlapping(fetch_offset, base_offset - 1)
                 if run.state == RecordState.AVAILABLE]
        for first, last in stale:
            for part in self._runs.carve(first, last):
                self._finish(part, RecordState.ARCHIVED)

    def _archive_aborted(self, result: list[AcquiredRecords], fetched: list[FetchedBatch],
                         aborted_transactions: Sequence[tuple[int, int]]) -> list[AcquiredRecords]:
        """Archive acquired records of aborted transactions; answer the rest."""
        aborted = _aborted_batches(fetched, aborted_transactions)
        if not aborted:
            return result
        kept: list[AcquiredRecords] = []
        for acquired in result:
            pieces = _subtract(acquired.first_offset, acquired.last_offset, aborted)
            kept += [AcquiredRecords(a, b, acquired.delivery_count) for a, b in pieces]
            for first, last in _subtract(acquired.first_offset, acquired.last_offset, pieces):
                for part in self._runs.carve(first, last):
                    self._finish(part, RecordState.ARCHIVED)
        return kept

    def _throttle_threshold(self) -> int:
        return max(_MIN_THROTTLE_DELIVERY_COUNT, math.ceil(self.delivery_count_limit / 2))

    # -- acknowledge and release ---------------------------------------------------

    def acknowledge(self, member_id: str,
                    batches: Sequence[AcknowledgementBatch]) -> Transition:
        """Apply ShareFetch/ShareAcknowledge acknowledgements of ``member_id``.

        All or nothing (Kafka rolls back the whole request): INVALID_REQUEST for a
        malformed batch (first > last, no types, a type list of the wrong length, an
        unknown type, batches overlapping) or offsets past SPEO; INVALID_RECORD_STATE
        when an offset is not ACQUIRED by the member or nothing is in flight.  Offsets
        below SPSO are skipped.  ACCEPT -> ACKNOWLEDGED, RELEASE -> AVAILABLE (archived
        at the limit), REJECT -> ARCHIVED (a dead letter when on), GAP -> ARCHIVED,
        RENEW -> lock extended to now + lock duration (still ACQUIRED, nothing to
        persist)."""
        if self._state is not SharePartitionState.ACTIVE:
            return Transition(error=self._inactive_error())
        error = self._check_acknowledgements(member_id, batches)
        if error:
            return Transition(error=error)
        transition = Transition()
        now = self._now()
        for batch in batches:
            for first, last, ack_type in _ack_segments(batch):
                self._apply_ack(first, last, ack_type, now, transition)
        self._settle()
        return transition

    def _check_acknowledgements(self, member_id: str,
                                batches: Sequence[AcknowledgementBatch]) -> int:
        previous_last = None
        for batch in sorted(batches, key=lambda b: b.first_offset):
            if not _well_formed(batch) or (previous_last is not None
                                           and batch.first_offset <= previous_last):
                return ErrorCode.INVALID_REQUEST
            previous_last = batch.last_offset
            if batch.last_offset < self._runs.start:
                continue
            if not len(self._runs):
                return ErrorCode.INVALID_RECORD_STATE
            if batch.last_offset > self._runs.end:
                return ErrorCode.INVALID_REQUEST
            for run in self._runs.overlapping(batch.first_offset, batch.last_offset):
                if run.state != RecordState.ACQUIRED or run.member_id != member_id:
                    return ErrorCode.INVALID_RECORD_STATE
        return ErrorCode.NO_ERROR

    def _apply_ack(self, first: int, last: int, ack_type: int, now: int,
                   transition: Transition) -> None:
        for part in self._runs.carve(first, last):
            if ack_type == AcknowledgeType.RENEW:
                part.deadline = now + self.lock_duration_ms
                continue
            transition.changed = True
            if ack_type == AcknowledgeType.ACCEPT:
                self._finish(part, RecordState.ACKNOWLEDGED)
            elif ack_type == AcknowledgeType.GAP:
                self._finish(part, RecordState.ARCHIVED)
            elif ack_type == AcknowledgeType.REJECT:
                self._archive_or_dead_letter(part, REASON_REJECTED, transition)
            else:
                self._release(part, now, transition)

    def release_acquired(self, member_id: str) -> Transition:
        """The member's share session closed or it left: its ACQUIRED records become
        AVAILABLE with delivery count - 1 (Kafka: they were not delivered), no backoff."""
        transition = Transition()
        if self._state is not SharePartitionState.ACTIVE:
            return transition
        owned = [(run.first, run.last) for run in self._runs
                 if run.state == RecordState.ACQUIRED and run.member_id == member_id]
        for first, last in owned:
            for part in self._runs.carve(first, last):
                self._make_available(part, max(0, part.delivery_count - 1), 0)
            transition.changed = transition.available = True
        self._settle()
        return transition

    def expire_locks(self, now: int | None = None) -> Transition:
        """Acquisition locks expired by ``now`` (default: the clock): those records become
        AVAILABLE (backoff applied), or are archived at the delivery count limit; backoffs
        ended by ``now`` end (``Transition.available``)."""
        transition = Transition()
        if self._state is not SharePartitionState.ACTIVE:
            return transition
        now = self._now() if now is None else now
        expired = [(run.first, run.last) for run in self._runs
                   if run.state == RecordState.ACQUIRED and run.deadline <= now]
        for first, last in expired:
            for part in self._runs.carve(first, last):
                self._release(part, now, transition)
            transition.changed = True
        for run in self._runs:
            if run.state == RecordState.AVAILABLE and 0 < run.available_at <= now:
                run.available_at = 0
                transition.available = True
        self._settle()
        return transition

    def _release(self, run: Run, now: int, transition: Transition) -> None:
        """ACQUIRED -> AVAILABLE with the delivery count kept, or archived at the limit."""
        if run.delivery_count >= self.delivery_count_limit:
            self._archive_or_dead_letter(run, REASON_DELIVERY_COUNT_LIMIT, transition)
            return
        delay = redelivery_delay_ms(run.delivery_count, self.backoff_ms, self.backoff_max_ms)
        self._make_available(run, run.delivery_count, now + delay if delay else 0)
        transition.available = transition.available or not delay

    def _archive_or_dead_letter(self, run: Run, reason: str, transition: Transition) -> None:
        self._finish(run, RecordState.ARCHIVED)
        if self.dead_letters:
            run.dead_letter = reason
            _add_merged(transition.dead_letters,
                        ArchivedRecords(run.first, run.last, run.delivery_count, reason))

    @staticmethod
    def _make_available(run: Run, delivery_count: int, available_at: int) -> None:
        run.state = RecordState.AVAILABLE
        run.delivery_count = delivery_count
        run.member_id = ""
        run.deadline = 0
        run.available_at = available_at

    @staticmethod
    def _finish(run: Run, state: RecordState) -> None:
        run.state = state
        run.member_id = ""
        run.deadline = 0
        run.available_at = 0

    # -- dead letters and the log start --------------------------------------------

    def pending_dead_letters(self) -> list[ArchivedRecords]:
        """Every record waiting for ``confirm_dead_lettered`` (after a failed append, or
        found at the delivery count limit when the state was loaded)."""
        pending: list[ArchivedRecords] = []
        for run in self._runs:
            if run.dead_letter is not None:
                _add_merged(pending, ArchivedRecords(run.first, run.last, run.delivery_count,
                                                     run.dead_letter))
        return pending

    def confirm_dead_lettered(self, first_offset: int, last_offset: int) -> Transition:
        """The caller appended [first, last] to the dead-letter topic: those pending are
        archived for good (others in the range are left alone)."""
        transition = Transition()
        pending = [(max(run.first, first_offset), min(run.last, last_offset))
                   for run in self._runs.overlapping(first_offset, last_offset)
                   if run.dead_letter is not None]
        for first, last in pending:
            for part in self._runs.carve(first, last):
                # Archived at the count it was persisted with while pending: the share
                # coordinator keeps, of two states of one offset, the one with the higher
                # delivery count (then state), so a lower count would lose to the pending one.
                part.delivery_count = self._persisted(part)[1]
                part.dead_letter = None
            transition.changed = True
        self._settle()
        return transition

    def update_log_start_offset(self, log_start_offset: int) -> Transition:
        """The log's start offset moved past SPSO (retention, DeleteRecords): offsets below
        it are forgotten, whatever their state (Kafka archives them), and SPSO moves to it."""
        if log_start_offset <= self._runs.start:
            return Transition()
        self._runs.trim_below(log_start_offset)
        self._settle()
        return Transition(changed=True)

    # -- persistence ---------------------------------------------------------------

    def state_batches(self) -> list[StateBatch]:
        """The persister's write: the in-flight offsets from SPSO in ranges of one
        persisted state and delivery count, as Kafka's persisted state would hold them:
        ACQUIRED as AVAILABLE with the count before the acquisition, pending dead letters
        as AVAILABLE at max(count, limit)."""
        batches: list[StateBatch] = []
        for run in self._runs:
            state, count = self._persisted(run)
            if (batches and batches[-1].delivery_state == state
                    and batches[-1].delivery_count == count):
                batches[-1] = StateBatch(batches[-1].first_offset, run.last, state, count)
            else:
                batches.append(StateBatch(run.first, run.last, state, count))
        return batches

    def _persisted(self, run: Run) -> tuple[int, int]:
        if run.dead_letter == REASON_REJECTED:
            return int(RecordState.AVAILABLE), REJECTED_MARK + run.delivery_count
        if run.dead_letter is not None:
            return int(RecordState.AVAILABLE), max(run.delivery_count, self.delivery_count_limit)
        if run.state == RecordState.ACQUIRED:
            return int(RecordState.AVAILABLE), max(0, run.delivery_count - 1)
        return int(run.state), run.delivery_count

    def _load(self, start: int, batches: Iterable[StateBatch]) -> None:
        self._runs.clear(start)
        for batch in sorted(batches, key=lambda b: b.first_offset):
            first = max(batch.first_offset, self._runs.next_new_offset)
            if batch.last_offset < first:
                continue
            if first > self._runs.next_new_offset:   # Kafka's read gap: fetch it again
                self._runs.append(Run(self._runs.next_new_offset, first - 1,
                                      RecordState.AVAILABLE, 0))
            self._runs.append(self._loaded_run(first, batch))
        self._settle()

    def _loaded_run(self, first: int, batch: StateBatch) -> Run:
        state = RecordState(batch.delivery_state) if batch.delivery_state in (2, 4) \
            else RecordState.AVAILABLE
        run = Run(first, batch.last_offset, state, batch.delivery_count)
        if (state == RecordState.AVAILABLE and self.dead_letters
                and batch.delivery_count >= self.delivery_count_limit):
            run.state = RecordState.ARCHIVED
            run.dead_letter = REASON_DELIVERY_COUNT_LIMIT
            if batch.delivery_count >= REJECTED_MARK:
                run.dead_letter = REASON_REJECTED
                run.delivery_count = batch.delivery_count - REJECTED_MARK
        return run

    # -- helpers -------------------------------------------------------------------

    def _settle(self) -> None:
        self._runs.coalesce()
        self._runs.advance_start()

    def _now(self) -> int:
        return self._clock.monotonic_ms()

    def _inactive_error(self, initializing: bool = False) -> int:
        match self._state:
            case SharePartitionState.ACTIVE:
                return ErrorCode.NO_ERROR
            case SharePartitionState.FENCED:
                return ErrorCode.LEADER_NOT_AVAILABLE if initializing \
                    else ErrorCode.NOT_LEADER_OR_FOLLOWER
            case SharePartitionState.FAILED:
                return ErrorCode.UNKNOWN
            case _:
                return ErrorCode.LEADER_NOT_AVAILABLE


@dataclass(slots=True)
class _Acquisition:
    """One ``acquire`` call's progress."""

    member_id: str
    now: int
    limit: int
    mode: AcquireMode
    fetched: list[FetchedBatch]
    count: int = 0
    stopped: bool = False
    result: list[AcquiredRecords] = field(default_factory=list)

    def add(self, first: int, last: int, delivery_count: int) -> None:
        self.result.append(AcquiredRecords(first, last, delivery_count))
        self.count += last - first + 1


def _as_fetched(batch: FetchedBatch | tuple[int, int]) -> FetchedBatch:
    return batch if isinstance(batch, FetchedBatch) else FetchedBatch(*batch)


def _batch_last(fetched: Sequence[FetchedBatch], offset: int) -> int:
    """The last offset of the fetched batch holding ``offset``, else ``offset`` (Kafka's
    lastOffsetFromBatchWithRequestOffset)."""
    for batch in fetched:
        if batch.base_offset <= offset <= batch.last_offset:
            return batch.last_offset
    return offset


def _split_at_batches(first: int, last: int, fetched: Sequence[FetchedBatch],
                      batch_size: int | None) -> list[tuple[int, int]]:
    """Kafka's createBatches: [first, last] cut at log batch bases once a piece holds
    ``batch_size`` offsets."""
    if not batch_size or last - first + 1 <= batch_size:
        return [(first, last)]
    pieces = []
    current = first
    for batch in fetched:
        if batch.base_offset > last:
            break
        if batch.base_offset - current >= batch_size:
            pieces.append((current, batch.base_offset - 1))
            current = batch.base_offset
    pieces.append((current, last))
    return pieces


def _aborted_batches(fetched: Sequence[FetchedBatch],
                     aborted_transactions: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Kafka's fetchAbortedTransactionRecordBatches: the transactional batches of
    producers whose aborted transaction began at or before them, until the marker."""
    pending = sorted(aborted_transactions, key=lambda txn: txn[1])
    aborted_producers: set[int] = set()
    ranges = []
    for batch in fetched:
        if batch.producer_id < 0:
            continue
        while pending and pending[0][1] <= batch.last_offset:
            aborted_producers.add(pending.pop(0)[0])
        if batch.is_control and batch.is_abort_marker:
            aborted_producers.discard(batch.producer_id)
        elif batch.is_transactional and batch.producer_id in aborted_producers:
            ranges.append((batch.base_offset, batch.last_offset))
    return ranges


def _subtract(first: int, last: int, holes: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """[first, last] without the sorted, disjoint ``holes``."""
    pieces = []
    current = first
    for hole_first, hole_last in holes:
        if hole_last < current or hole_first > last:
            continue
        if hole_first > current:
            pieces.append((current, hole_first - 1))
        current = hole_last + 1
    if current <= last:
        pieces.append((current, last))
    return pieces


def _well_formed(batch: AcknowledgementBatch) -> bool:
    types = batch.acknowledge_types
    size = batch.last_offset - batch.first_offset + 1
    return (size > 0 and batch.first_offset >= 0 and len(types) in (1, size)
            and all(t in _ACK_TYPES for t in types))


def _ack_segments(batch: AcknowledgementBatch) -> list[tuple[int, int, int]]:
    """The batch as ranges of one acknowledge type."""
    types = batch.acknowledge_types
    if len(types) == 1:
        return [(batch.first_offset, batch.last_offset, types[0])]
    segments: list[tuple[int, int, int]] = []
    for index, ack_type in enumerate(types):
        offset = batch.first_offset + index
        if segments and segments[-1][2] == ack_type:
            segments[-1] = (segments[-1][0], offset, ack_type)
        else:
            segments.append((offset, offset, ack_type))
    return segments


def _add_merged(records: list[ArchivedRecords], new: ArchivedRecords) -> None:
    if records:
        last = records[-1]
        if (last.last_offset + 1 == new.first_offset and last.delivery_count == new.delivery_count
                and last.reason == new.reason):
            records[-1] = last._replace(last_offset=new.last_offset)
            return
    records.append(new)
