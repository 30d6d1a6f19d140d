"""``SharePartitionManager``: the share-partition leader's side of ShareFetch and
ShareAcknowledge (Kafka's SharePartitionManager, DelayedShareFetch and ShareFetchUtils).

It keeps one ``SharePartition`` per (share group, topic partition) this broker leads and
has been asked about, and serves the handlers:

- Sessions (``kafkapy.share.session``): ``new_context`` / ``acknowledge_session_update``
  check and move each member's share session; ``release_session`` closes one and
  releases the member's acquired records.
- ``fetch_messages``: for each partition whose share partition can acquire, read the
  log from its next fetch offset up to the high watermark (the last stable offset when
  the group's ``share.isolation.level`` is read_committed) through the replica
  manager's one door for reads (``ReplicaManager.fetch_messages``, never waiting
  there); walk the batch headers of what was read (one pread per header chunk, no
  record is decoded except a control batch's marker under read_committed), only as far
  as acquisition can go (the in-flight offsets, then ``max_records`` new ones: a read
  of ``max_bytes`` may hold far more), and hand their boundaries to
  ``SharePartition.acquire``; answer the whole batches spanning the
  acquired records as file slices (sent with sendfile where the listener can) and the
  AcquiredRecords.  ``max_bytes`` is shared evenly by the partitions read (Kafka's
  uniform strategy), ``max_records`` by all of them in turn, starting each request at a
  partition rotated by the session epoch (Kafka's round robin).  When nothing can be
  acquired, or fewer than ``min_bytes`` are there, the fetch waits as a
  ``DelayedShareFetch`` in the share fetch purgatory until an append, a high watermark
  move, a release, a lock expiry, a backoff end or a loaded state lets it acquire,
  or ``max_wait_ms`` passes (then it answers what there is).
- ``acknowledge``: applies acknowledgements at once (a ShareFetch's piggy-backed ones
  come before its fetch reads, so released records can be fetched again in the same
  request) and answers once the new state is written through the persister, as Kafka
  does: an acknowledged record is never delivered again after a failover.

The share partition's state (Kafka's persisted share state) is read through the
persister on first use (``read`` with the partition's leader epoch); a start offset of
-1 is resolved by the group's ``share.auto.offset.reset`` (latest: the high watermark;
earliest: the log start; by_duration: the first offset at or after now - duration by
the time index, else the high watermark) and written at once.  Every change Kafka
persists (acknowledgements, releases, lock expiries, archives, start offset moves) is
written (``persister.write`` with ``SharePartition.state_batches()``), one write at a
time per share partition: a change made while a write is in flight goes in the next
one, which carries the whole state.  A write answered FENCED_STATE_EPOCH,
FENCED_LEADER_EPOCH, GROUP_ID_NOT_FOUND or UNKNOWN_TOPIC_OR_PARTITION drops the share
partition (Kafka's fenced share partition handler); so does leadership lost (the
replica manager's append listener: not leader any more, or a new leader epoch) - the
next leader reads the state afresh.

Each share partition has one timer task on the broker's timing wheel, armed at
``SharePartition.next_deadline()`` (its earliest lock expiry or backoff end) and
re-armed after every change.  Dead letters (``kafkapy.share.dead_letters``): records the
share partition gives up on are persisted as pending, appended to the group's
dead-letter topic, then confirmed and persisted again, one round at a time per share
partition.

Everything runs on the event loop; the awaits are the persister's and the dead-letter
appends'.
"""
from __future__ import annotations

import asyncio
import os
import struct
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog

from kafkapy.config.group_configs import ShareGroupConfig
from kafkapy.coordinator.share.persister import Persister, ShareState
from kafkapy.log.segment import FetchSlice
from kafkapy.protocol.errors import ErrorCode, KafkaError, error_name
from kafkapy.purgatory.purgatory import Purgatory
from kafkapy.records.batch import HEADER_SIZE, MIN_BATCH_LENGTH, BatchHeader, read_header
from kafkapy.records.record import CONTROL_ABORT, decode_records
from kafkapy.replication.fetch_session import PartitionRequest, TopicIdPartition
from kafkapy.replication.replica_manager import READ_COMMITTED, FetchParams, LogReadResult
from kafkapy.share import session as sessions
from kafkapy.share.dead_letters import (DeadLetter, DeadLetterError, DeadLetterSource,
                                        DeadLetterWriter)
from kafkapy.share.delayed import CallbackTask, DelayedShareFetch, group_key, partition_key
from kafkapy.share.partition import (AcknowledgementBatch, AcquiredRecords, AcquireMode,
                                     FetchedBatch, SharePartition, SharePartitionState,
                                     Transition, persister_error)

_log = structlog.get_logger("kafkapy.share.manager")

# Fetch reads made for a ShareFetch: the leader only (a consumer's Fetch below v11 may not
# read a follower) and the first batch whole even past the limits (v3+, KIP-74).
_LEADER_ONLY_FETCH_VERSION = 10
_HEADER_CHUNK = 16 * 1024
_RETRY_S = 0.5
# Persister answers after which the share partition is dropped (Kafka's fenced handler).
_FENCING = frozenset({ErrorCode.FENCED_STATE_EPOCH, ErrorCode.FENCED_LEADER_EPOCH,
                      ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION})


class ShareGroupConfigs(Protocol):
    """Where a share group's effective configs come from (``GroupConfigs``)."""

    def share(self, group_id: str) -> ShareGroupConfig: ...


@dataclass(frozen=True, slots=True)
class ShareFetchParams:
    """One ShareFetch's limits, capped as KafkaApis caps them (``max_bytes`` by
    fetch.max.bytes, ``min_bytes`` by ``max_bytes``)."""

    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    max_records: int
    batch_size: int
    acquire_mode: int = AcquireMode.BATCH_OPTIMIZED


@dataclass(slots=True)
class PartitionFetch:
    """One partition's ShareFetch answer: an error, or the whole log batches spanning
    the acquired records (file slices) and the acquired ranges."""

    error_code: int = 0
    records: list[FetchSlice] = field(default_factory=list)
    acquired: list[AcquiredRecords] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(s.size for s in self.records)

    def read_bytes(self) -> bytes:
        return b"".join(s.read_bytes() for s in self.records)


@dataclass(eq=False, slots=True)
class _Entry:
    """One share partition led here, with what the manager keeps beside it."""

    group_id: str
    tip: TopicIdPartition
    partition: SharePartition
    leader_epoch: int
    ready: bool = False             # its state is loaded
    error: int = 0                  # it was dropped (or failed to load) with this error
    writer: Any = None              # _StateWriter
    timer: Any = None               # CallbackTask at next_deadline()
    armed_at: int | None = None
    dead_letter_target: str | None = None
    dead_letter_task: Any = None
    verify_dead_letters: bool = False

    @property
    def key(self) -> tuple[str, uuid.UUID, int]:
        return (self.group_id, self.tip.topic_id, self.tip.partition)

    @property
    def topic_partition(self) -> tuple[str, int]:
        return (self.tip.topic, self.tip.partition)


class SharePartitionManager:
    """See the module docstring."""

    def __init__(self, *, config, clock, replica_manager, cache, persister: Persister,
                 group_configs: ShareGroupConfigs, timer,
                 dead_letters: DeadLetterWriter | None = None) -> None:
        self._config = config
        self._clock = clock
        self._replicas = replica_manager
        self._cache = cache
        self._persister = persister
        self._group_configs = group_configs
        self._timer = timer
        self._dead_letters = dead_letters
        self.sessions = sessions.ShareSessionCache(
            config["group.share.max.share.sessions"],
            idle_ms=config.get("group.share.session.timeout.ms", 45000))
        self.purgatory = Purgatory("ShareFetch", timer,
                                   config["share.fetch.purgatory.purge.interval.requests"])
        self._entries: dict[tuple, _Entry] = {}
        self._by_partition: dict[tuple[str, int], set[_Entry]] = {}
        self._tasks: set[asyncio.Task] = set()
        self._closed = False
        replica_manager.add_append_listener(self._partition_event)

    # -- views --------------------------------------------------------------------------
    def share_partition(self, group_id: str, topic_id: uuid.UUID, partition: int
                        ) -> SharePartition | None:
        """The share partition led here, once its state is loaded."""
        entry = self._entries.get((group_id, topic_id, partition))
        return entry.partition if entry is not None and entry.ready else None

    def record_lock_duration_ms(self, group_id: str) -> int:
        """AcquisitionLockTimeoutMs: the group's record lock duration."""
        return self._settings(group_id).record_lock_duration_ms

    # -- sessions -----------------------------------------------------------------------
    def new_context(self, group_id: str, member_id: str, epoch: int,
                    partitions: Sequence[TopicIdPartition], forgotten: Sequence[TopicIdPartition],
                    acknowledgements: bool) -> sessions.ShareFetchContext:
        """Kafka's newContext (``kafkapy.share.session.new_context``); raises KafkaError."""
        return sessions.new_context(self.sessions, group_id, member_id, epoch, partitions,
                                    forgotten, acknowledgements, self._clock.monotonic_ms())

    def acknowledge_session_update(self, group_id: str, member_id: str, epoch: int) -> None:
        """Kafka's acknowledgeSessionUpdate for ShareAcknowledge; raises KafkaError."""
        sessions.acknowledge_session_update(self.sessions, group_id, member_id, epoch,
                                            self._clock.monotonic_ms())

    def release_session(self, group_id: str, member_id: str) -> bool:
        """Close the member's session and release its acquired records in the session's
        partitions (persisted in the background); the group's last session here closing
        drops its share partitions (Kafka's onGroupEmpty: they are loaded afresh when a
        member comes back).  False when the member had no session."""
        session = self.sessions.remove(sessions.ShareSessionKey(group_id, member_id))
        if session is None:
            return False
        for tip in session.topic_id_partitions():
            entry = self._entries.get((group_id, tip.topic_id, tip.partition))
            if entry is not None and entry.ready:
                self._after(entry, entry.partition.release_acquired(member_id))
        if not self.sessions.members(group_id):
            for entry in [e for e in self._entries.values() if e.group_id == group_id]:
                self._drop(entry, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        return True

    def release_member(self, group_id: str, member_id: str) -> None:
        """The member left its group or was fenced: its session (if any) closes and its
        acquired records are released (Kafka's ShareGroupListener.onMemberLeave)."""
        self.release_session(group_id, member_id)

    def idle_wait(self, delay_ms: int) -> asyncio.Future:
        """A future done after ``delay_ms`` on the broker's timer (Kafka's
        IdleShareFetchTimerTask: a fetch refused for the session limit waits first)."""
        future = asyncio.get_running_loop().create_future()
        if delay_ms <= 0:
            future.set_result(None)
            return future
        self._timer.add(CallbackTask(delay_ms, lambda: future.done() or future.set_result(None)))
        return future

    # -- fetch --------------------------------------------------------------------------
    def fetch_messages(self, group_id: str, member_id: str, params: ShareFetchParams,
                       partitions: Sequence[TopicIdPartition], session_epoch: int = 0
                       ) -> asyncio.Future:
        """Acquire records of ``partitions`` (known topics, authorized) for the member; a
        future of {TopicIdPartition: PartitionFetch} in ``partitions``' order."""
        future = asyncio.get_running_loop().create_future()
        fetch = _ShareFetch(self, group_id, member_id, params, future)
        for tip in _rotated(list(partitions), session_epoch):
            try:
                fetch.add(tip, self._entry_for(group_id, tip))
            except KafkaError as err:
                fetch.add_error(tip, err.code)
        fetch.order = list(partitions)
        if params.max_wait_ms <= 0 or not fetch.entries:
            fetch.complete(fetch.try_read(final=True))
            return future
        operation = DelayedShareFetch(params.max_wait_ms, fetch.try_read, fetch.complete)
        self.purgatory.try_complete_else_watch(operation, fetch.watch_keys())
        return future

    # -- acknowledge --------------------------------------------------------------------
    def acknowledge(self, group_id: str, member_id: str,
                    acknowledgements: dict[TopicIdPartition, list[AcknowledgementBatch]]
                    ) -> asyncio.Future:
        """Apply the member's acknowledgements now; a future of {TopicIdPartition: error
        code} answered once each changed share partition's state is written."""
        loop = asyncio.get_running_loop()
        results: dict[TopicIdPartition, int] = {}
        writes = []
        for tip, batches in acknowledgements.items():
            entry = self._entries.get((group_id, tip.topic_id, tip.partition))
            if entry is None:
                results[tip] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            self._configure(entry)
            transition = entry.partition.acknowledge(member_id, batches)
            if transition.error:
                results[tip] = transition.error
                continue
            results[tip] = ErrorCode.NO_ERROR
            writes.append((tip, self._after(entry, transition)))
        future = loop.create_future()
        if not writes:
            future.set_result(results)
            return future

        async def written():
            for tip, write in writes:
                if write is not None:
                    results[tip] = await write
            return results
        self._spawn(written()).add_done_callback(lambda t: _chain(t, future))
        return future

    # -- shutdown -----------------------------------------------------------------------
    def shutdown(self) -> None:
        self._closed = True
        self.purgatory.shutdown()
        for entry in list(self._entries.values()):
            if entry.timer is not None:
                entry.timer.cancel()
        for task in list(self._tasks):
            task.cancel()

    # -- share partitions ------------------------------------------------------------------
    def _entry_for(self, group_id: str, tip: TopicIdPartition) -> _Entry:
        """The group's share partition of ``tip``, made (and its state read) on first use;
        raises KafkaError when this broker does not lead the partition."""
        entry = self._entries.get((group_id, tip.topic_id, tip.partition))
        if entry is not None:
            return entry
        partition = self._replicas.partitions.get((tip.topic, tip.partition))
        if partition is None or not partition.is_leader:
            known = self._cache.partition(tip.topic, tip.partition) is not None
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER if known
                             else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        settings = self._settings(group_id)
        share = SharePartition(
            group_id, tip.topic_id, tip.topic, tip.partition, clock=self._clock,
            max_in_flight_records=settings.partition_max_record_locks,
            delivery_count_limit=settings.delivery_count_limit,
            lock_duration_ms=settings.record_lock_duration_ms,
            leader_epoch=partition.leader_epoch)
        entry = _Entry(group_id, tip, share, partition.leader_epoch)
        entry.writer = _StateWriter(self._persister, entry)
        entry.timer = CallbackTask(0, lambda: self._expire(entry))
        self._entries[entry.key] = entry
        self._by_partition.setdefault(entry.topic_partition, set()).add(entry)
        self._configure(entry)
        self._spawn(self._load(entry))
        return entry

    async def _load(self, entry: _Entry) -> None:
        """Read the state through the persister and make the share partition ACTIVE."""
        try:
            state = await self._persister.read(entry.group_id, entry.tip.topic_id,
                                               entry.tip.partition,
                                               leader_epoch=entry.leader_epoch)
        except Exception:
            _log.exception("reading share state failed", group=entry.group_id,
                           partition=entry.topic_partition)
            state = ShareState(error=ErrorCode.UNKNOWN)
        if not self._alive(entry):
            return
        self._configure(entry)
        log = self._replicas.partitions[entry.topic_partition].log
        error = entry.partition.maybe_initialize(
            state, resolve_reset=lambda: self._reset_offset(entry),
            log_start_offset=log.log_start_offset)
        if not error and entry.partition.start_offset != state.start_offset:
            error = await self._persist(entry)
        if error:
            _log.info("share partition not loaded", group=entry.group_id,
                      partition=entry.topic_partition, error=error_name(error))
            self._drop(entry, error)
            return
        if not self._alive(entry):
            return
        entry.ready = True
        if entry.partition.pending_dead_letters():
            entry.verify_dead_letters = True    # the last leader may have appended them
            self._start_dead_letters(entry)
        self._arm(entry)
        self.purgatory.check_and_complete(group_key(entry.group_id, *entry.topic_partition))

    def _reset_offset(self, entry: _Entry) -> int:
        """Kafka's startOffsetDuringInitialization for share.auto.offset.reset."""
        partition = self._replicas.partitions[entry.topic_partition]
        settings = self._settings(entry.group_id)
        if settings.auto_offset_reset == "earliest":
            return partition.log.log_start_offset
        duration = settings.auto_offset_reset_duration_ms
        if duration is not None:
            found = partition.log.offset_for_timestamp(self._clock.time_ms() - duration)
            if found is not None and found[0] < partition.high_watermark:
                return found[0]
        return partition.high_watermark

    def _configure(self, entry: _Entry) -> None:
        """The group's current configs onto the share partition (they are dynamic)."""
        settings = self._settings(entry.group_id)
        share = entry.partition
        share.lock_duration_ms = settings.record_lock_duration_ms
        share.delivery_count_limit = settings.delivery_count_limit
        share.backoff_ms = settings.backoff_ms
        share.backoff_max_ms = settings.backoff_max_ms
        share.max_in_flight_records = settings.partition_max_record_locks
        target = None
        if self._dead_letters is not None:
            target = self._dead_letters.target(settings.dead_letter_topic)
        entry.dead_letter_target = target
        share.dead_letters = target is not None

    def _settings(self, group_id: str) -> ShareGroupConfig:
        return self._group_configs.share(group_id)

    def _alive(self, entry: _Entry) -> bool:
        """Still the manager's, and this broker still leads it at the same epoch."""
        if self._closed or self._entries.get(entry.key) is not entry:
            return False
        partition = self._replicas.partitions.get(entry.topic_partition)
        if (partition is None or not partition.is_leader or partition.log.offline
                or partition.leader_epoch != entry.leader_epoch):
            self._drop(entry, ErrorCode.NOT_LEADER_OR_FOLLOWER)
            return False
        return True

    def _drop(self, entry: _Entry, error: int) -> None:
        """Forget the share partition (a later request makes it anew from the persisted
        state); fetches waiting on it answer ``error``."""
        entry.error = error or ErrorCode.UNKNOWN
        if entry.partition.state is SharePartitionState.ACTIVE:
            entry.partition.fence()
        if entry.timer is not None:
            entry.timer.cancel()
        if self._entries.get(entry.key) is entry:
            del self._entries[entry.key]
            siblings = self._by_partition.get(entry.topic_partition)
            if siblings is not None:
                siblings.discard(entry)
                if not siblings:
                    del self._by_partition[entry.topic_partition]
        self.purgatory.check_and_complete(group_key(entry.group_id, *entry.topic_partition))

    def _partition_event(self, key) -> None:
        """The replica manager's append listener (appends, high watermark moves,
        leadership changes): share partitions whose leadership went are dropped, then
        the fetches waiting on the partition look again."""
        topic, index = key
        entries = self._by_partition.get((topic, index))
        if entries:
            for entry in list(entries):
                self._alive(entry)
        self.purgatory.check_and_complete(partition_key(topic, index))

    # -- changes --------------------------------------------------------------------------
    def _after(self, entry: _Entry, transition: Transition) -> asyncio.Task | None:
        """Persist, dead-letter, wake and re-arm after a change of ``entry``'s share
        partition; answers the write's task (its mapped error), if one was started."""
        write = None
        if transition.dead_letters:
            self._start_dead_letters(entry)
        if transition.changed:
            write = self._spawn(self._persist(entry))
        if transition.available or transition.changed:
            self.purgatory.check_and_complete(group_key(entry.group_id, *entry.topic_partition))
        self._arm(entry)
        return write

    async def _persist(self, entry: _Entry) -> int:
        """Write the share partition's state; the error a client is answered (0 when
        written).  A fencing answer drops the share partition."""
        code = await entry.writer.persist()
        if code in _FENCING and self._entries.get(entry.key) is entry:
            _log.info("share partition fenced by its persisted state", group=entry.group_id,
                      partition=entry.topic_partition, error=error_name(code))
            self._drop(entry, persister_error(code))
        return persister_error(code) if code else 0

    def _arm(self, entry: _Entry) -> None:
        """Keep the one timer task at the share partition's next deadline."""
        if not entry.ready or entry.error or self._closed:
            return
        deadline = entry.partition.next_deadline()
        if deadline is None:
            entry.timer.cancel()
            entry.armed_at = None
            return
        if entry.timer.is_scheduled and entry.armed_at == deadline:
            return
        entry.timer.delay_ms = max(0, deadline - self._clock.monotonic_ms())
        entry.armed_at = deadline
        self._timer.add(entry.timer)

    def _expire(self, entry: _Entry) -> None:
        entry.armed_at = None
        if self._entries.get(entry.key) is not entry or not entry.ready:
            return
        self._after(entry, entry.partition.expire_locks())

    # -- dead letters ---------------------------------------------------------------------
    def _start_dead_letters(self, entry: _Entry) -> None:
        if entry.dead_letter_task is None or entry.dead_letter_task.done():
            entry.dead_letter_task = self._spawn(self._dead_letter_rounds(entry))

    async def _dead_letter_rounds(self, entry: _Entry) -> None:
        """Persist the pending state, append, confirm, persist; until nothing is pending
        or the share partition is gone.  See ``kafkapy.share.dead_letters``."""
        share = entry.partition
        while self._entries.get(entry.key) is entry and share.pending_dead_letters():
            if await self._persist(entry):
                await asyncio.sleep(_RETRY_S)
                continue
            pending = share.pending_dead_letters()
            self._configure(entry)
            try:
                done = await self._write_dead_letters(entry, pending)
            except DeadLetterError as err:
                entry.verify_dead_letters = entry.verify_dead_letters or err.uncertain
                _log.warning("dead-letter append failed; retrying", group=entry.group_id,
                             partition=entry.topic_partition, error=str(err))
                await asyncio.sleep(_RETRY_S)
                continue
            if self._entries.get(entry.key) is not entry:
                return
            entry.verify_dead_letters = False
            for first, last in done:
                share.confirm_dead_lettered(first, last)
            self._after(entry, Transition(changed=True))

    async def _write_dead_letters(self, entry: _Entry, pending) -> list[tuple[int, int]]:
        target = entry.dead_letter_target
        if target is None:      # the topic is no longer usable: archived as Kafka does
            return [(p.first_offset, p.last_offset) for p in pending]
        log = self._replicas.partitions[entry.topic_partition].log
        source = DeadLetterSource(entry.group_id, entry.tip.topic, entry.tip.partition)
        letters = [DeadLetter(*p) for p in pending]
        return await self._dead_letters.write(source, log, target, letters,
                                              verify=entry.verify_dead_letters)

    # -- reading ----------------------------------------------------------------------------
    def _upper(self, entry: _Entry) -> int | None:
        """Where a read for the share partition stops (HW or LSO); None when this broker
        no longer leads it."""
        partition = self._replicas.partitions.get(entry.topic_partition)
        if partition is None or not partition.is_leader:
            return None
        if self._read_committed(entry.group_id):
            return partition.last_stable_offset
        return partition.high_watermark

    def _read_committed(self, group_id: str) -> bool:
        return self._settings(group_id).isolation_level == "read_committed"

    def _has_data(self, entry: _Entry) -> bool:
        """Ready, able to acquire, and records are there from its next fetch offset."""
        if not entry.ready or entry.error or not entry.partition.can_acquire():
            return False
        upper = self._upper(entry)
        if upper is None:
            return True     # the read answers NOT_LEADER_OR_FOLLOWER
        self._follow_log_start(entry)
        return entry.partition.next_fetch_offset() < upper

    def _follow_log_start(self, entry: _Entry) -> None:
        """Offsets below the log's start offset (retention, DeleteRecords) are dropped and
        the new start persisted; nothing is woken (a fetch is reading it right now)."""
        partition = self._replicas.partitions.get(entry.topic_partition)
        if partition is not None:
            moved = entry.partition.update_log_start_offset(partition.log.log_start_offset)
            if moved.changed:
                self._spawn(self._persist(entry))
                self._arm(entry)

    def _read(self, group_id: str, entries: list[_Entry], max_bytes: int) -> list[LogReadResult]:
        """One read of the entries' partitions through the replica manager."""
        if not entries:
            return []
        per_partition = max(1, max_bytes // len(entries))
        requests = [(entry.tip, PartitionRequest(entry.partition.next_fetch_offset(), -1,
                                                 per_partition, -1, -1)) for entry in entries]
        isolation = READ_COMMITTED if self._read_committed(group_id) else 0
        params = FetchParams(_LEADER_ONLY_FETCH_VERSION, -1, -1, 0, 0, max_bytes, isolation)
        return self._replicas.fetch_messages(params, requests, lambda results: results)

    def _acquire(self, entry: _Entry, member_id: str, read: LogReadResult,
                 params: ShareFetchParams, max_records: int) -> PartitionFetch:
        """Acquire what ``read`` found for the member (Kafka's processFetchResponse)."""
        if read.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
            self._follow_log_start(entry)       # the log start moved past: fetch again
            return PartitionFetch()
        if read.error_code:
            if read.error_code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH):
                self._alive(entry)
            return PartitionFetch(error_code=read.error_code)
        share = entry.partition
        headers = _batch_headers(read.found, share.next_new_offset, max_records)
        if not headers:
            return PartitionFetch()
        fetched = [_fetched_batch(fd, h, read.aborted is not None) for fd, h in headers]
        acquired = share.acquire(
            member_id, fetched, max_records=max_records, batch_size=params.batch_size or None,
            mode=AcquireMode(params.acquire_mode),
            aborted_transactions=[(t.producer_id, t.first_offset) for t in read.aborted or ()]
            if read.aborted is not None else None,
            fetch_offset=read.request.fetch_offset)
        self._arm(entry)
        if not acquired:
            return PartitionFetch()
        return PartitionFetch(records=_span(headers, acquired), acquired=acquired)

    def _spawn(self, coro) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            _log.error("share partition task failed", error=repr(task.exception()))


class _ShareFetch:
    """One ShareFetch's share partitions, reads and answer (Kafka's ShareFetch and the
    body of DelayedShareFetch)."""

    def __init__(self, manager: SharePartitionManager, group_id: str, member_id: str,
                 params: ShareFetchParams, future: asyncio.Future) -> None:
        self._manager = manager
        self._group_id = group_id
        self._member_id = member_id
        self._params = params
        self._future = future
        self.entries: list[tuple[TopicIdPartition, _Entry]] = []
        self._errors: dict[TopicIdPartition, int] = {}
        self.order: list[TopicIdPartition] = []

    def add(self, tip: TopicIdPartition, entry: _Entry) -> None:
        self.entries.append((tip, entry))

    def add_error(self, tip: TopicIdPartition, code: int) -> None:
        self._errors[tip] = code

    def watch_keys(self) -> list[tuple]:
        keys: list[tuple] = []
        for tip, _ in self.entries:
            keys.append(group_key(self._group_id, tip.topic, tip.partition))
            keys.append(partition_key(tip.topic, tip.partition))
        return keys

    def try_read(self, final: bool = False) -> list[LogReadResult] | None:
        """The reads to answer with now, or None to keep waiting (``final``: answer now
        whatever there is)."""
        manager = self._manager
        if any(entry.error for _, entry in self.entries):
            final = True
        readable = [entry for _, entry in self.entries if manager._has_data(entry)]
        if not readable:
            return [] if final else None
        reads = manager._read(self._group_id, readable, self._params.max_bytes)
        if final or any(r.error_code for r in reads):
            return reads
        if sum(r.size for r in reads) >= max(1, self._params.min_bytes):
            return reads
        return None

    def complete(self, reads: list[LogReadResult] | None) -> None:
        """Acquire from ``reads`` (None: read again, the wait is over) and answer."""
        if self._future.done():
            return
        try:
            answers = self._answers(self.try_read(final=True) if reads is None else reads)
        except Exception:    # a bug: every partition answers it, nothing hangs
            _log.exception("share fetch failed", group=self._group_id)
            answers = {tip: PartitionFetch(error_code=ErrorCode.UNKNOWN)
                       for tip, _ in self.entries}
            answers.update({tip: PartitionFetch(error_code=code)
                            for tip, code in self._errors.items()})
        self._future.set_result(answers)

    def _answers(self, reads: list[LogReadResult]) -> dict[TopicIdPartition, PartitionFetch]:
        by_key = {(r.tip.topic_id, r.tip.partition): r for r in reads}
        left = self._params.max_records
        out: dict[TopicIdPartition, PartitionFetch] = {}
        for tip, entry in self.entries:
            read = by_key.get((tip.topic_id, tip.partition))
            if entry.error:
                out[tip] = PartitionFetch(error_code=entry.error)
            elif read is None:
                out[tip] = PartitionFetch()
            else:
                out[tip] = self._manager._acquire(entry, self._member_id, read, self._params,
                                                  left)
                left -= sum(a.last_offset - a.first_offset + 1 for a in out[tip].acquired)
        for tip, code in self._errors.items():
            out[tip] = PartitionFetch(error_code=code)
        return {tip: out[tip] for tip in self.order if tip in out}


class _StateWriter:
    """One persister write at a time for one share partition; a change made during a
    write goes in the next one (which carries the whole state)."""

    def __init__(self, persister: Persister, entry: _Entry) -> None:
        self._persister = persister
        self._entry = entry
        self._requested = 0
        self._written = 0
        self._last_error = 0
        self._busy: asyncio.Task | None = None

    async def persist(self) -> int:
        """Write a state that includes every change made so far; the persister's error."""
        self._requested += 1
        target = self._requested
        while self._written < target:
            if self._busy is None:
                self._busy = asyncio.get_running_loop().create_task(self._write_once())
            await asyncio.shield(self._busy)
        return self._last_error

    async def _write_once(self) -> None:
        generation = self._requested
        entry = self._entry
        share = entry.partition
        try:
            code = await self._persister.write(
                entry.group_id, entry.tip.topic_id, entry.tip.partition,
                state_epoch=share.state_epoch, leader_epoch=entry.leader_epoch,
                start_offset=share.start_offset, batches=share.state_batches(),
                delivery_complete_count=share.delivery_complete_count)
        except Exception:
            _log.exception("writing share state failed", group=entry.group_id,
                           partition=entry.topic_partition)
            code = ErrorCode.UNKNOWN
        self._last_error = code
        self._written = generation
        self._busy = None


def _chain(task: asyncio.Task, future: asyncio.Future) -> None:
    if future.done():
        return
    if task.cancelled():
        future.cancel()
    elif task.exception() is not None:
        future.set_exception(task.exception())
    else:
        future.set_result(task.result())


def _rotated(partitions: list, epoch: int) -> list:
    """Kafka's round-robin PartitionRotateStrategy: start at epoch mod size."""
    if len(partitions) < 2 or epoch <= 0:
        return partitions
    shift = epoch % len(partitions)
    return partitions[shift:] + partitions[:shift]


def _batch_headers(found: list[FetchSlice], new_from: int = 0, max_records: int = 0
                   ) -> list[tuple[FetchSlice, BatchHeader]]:
    """The whole batches in the slices read (headers with their file positions); a
    batch cut short at the end of the read is left out.

    The walk stops once the batches cover every in-flight offset (below ``new_from``,
    the share partition's first new offset) and ``max_records`` (> 0) offsets from
    ``new_from`` on: acquisition never goes further (``max_records`` bounds it; the
    rest of the last log batch is all BATCH_OPTIMIZED may add), so a read of the
    whole ``max_bytes`` costs headers in proportion to what is acquired, not read."""
    out = []
    new = 0
    for piece in found:
        if max_records > 0 and new >= max_records:
            break
        pos, end = piece.position, piece.position + piece.size
        buf, buf_start, last_size = b"", pos, 0
        while pos + HEADER_SIZE <= end:
            off = pos - buf_start
            if off + HEADER_SIZE > len(buf):
                want = _HEADER_CHUNK if last_size < _HEADER_CHUNK // 4 else HEADER_SIZE
                buf = os.pread(piece.fd, min(want, end - pos), pos)
                buf_start, off = pos, 0
                if len(buf) < HEADER_SIZE:
                    break
            header = read_header(buf, off)
            if header.batch_length < MIN_BATCH_LENGTH or pos + header.size > end:
                break
            header.position = pos
            out.append((piece, header))
            last_size = header.size
            pos += last_size
            last = header.last_offset
            if last >= new_from:
                new += last - max(header.base_offset, new_from) + 1
                if max_records > 0 and new >= max_records:
                    break
    return out


def _fetched_batch(piece: FetchSlice, header: BatchHeader, read_committed: bool) -> FetchedBatch:
    abort = False
    if read_committed and header.is_control:
        data = os.pread(piece.fd, header.size, header.position)
        records = decode_records(data) if len(data) == header.size else []
        abort = bool(records) and records[0].key is not None and len(records[0].key) >= 4 \
            and struct.unpack_from(">h", records[0].key, 2)[0] == CONTROL_ABORT
    return FetchedBatch(header.base_offset, header.last_offset, header.producer_id,
                        header.is_transactional, header.is_control, abort)


def _span(headers: list[tuple[FetchSlice, BatchHeader]],
          acquired: list[AcquiredRecords]) -> list[FetchSlice]:
    """The whole batches from the one holding the first acquired offset to the one
    holding the last, as file slices (Kafka's maybeSliceFetchRecords)."""
    first, last = acquired[0].first_offset, acquired[-1].last_offset
    spanned = [(piece, h) for piece, h in headers
               if h.last_offset >= first and h.base_offset <= last]
    out: list[FetchSlice] = []
    for piece, h in spanned:
        if out and out[-1].fd == piece.fd and out[-1].position + out[-1].size == h.position:
            out[-1] = out[-1]._replace(size=out[-1].size + h.size)
        else:
            out.append(FetchSlice(piece.fd, h.position, h.size, h.base_offset))
    return out
