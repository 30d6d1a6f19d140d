"""One partition's log: ordered segments in ``<log dir>/<topic>-<partition>/``.

On disk: segment files ``<base:020d>.log/.index/.timeindex`` (see
``segment.py``), producer snapshots ``<offset:020d>.snapshot``,
``leader-epoch-checkpoint`` and ``partition.metadata``.

Invariants:
- segments are kept in a list sorted by base offset (``bisect`` finds the one
  holding an offset); the last is the active segment and the only one
  appended to; there is always at least one segment.
- ``log_start_offset <= high_watermark <= log_end_offset``; offsets below
  ``recovery_point`` are known to be fsynced.
- loading (Kafka's LogLoader): after a clean shutdown nothing is recovered; after
  an unclean one only the segment holding the recovery point and later ones are
  (a segment with an empty .log costs nothing), plus any non-empty segment
  without its index files; recovery does not fsync, the recovery point stays
  (capped at the log end) until the next flush.  Index files are opened lazily,
  on first use (``index_base``), so an untouched old segment costs one
  descriptor and no mapping.
- ``close`` writes a producer snapshot only when the log end moved since the last
  one (Kafka's takeSnapshot), so an idle or empty log's close writes nothing but
  its missing empty index files.
- appends write whole, already validated batches; offsets are assigned by
  patching the batch header in place (``patch_for_append``); nothing is
  decoded.  By default nothing is fsynced on append (page cache), unless
  flush.messages / flush.ms say otherwise.
- a roll happens before an append when the active segment would exceed
  segment.bytes, when the incoming batch's max timestamp minus the segment's
  first batch timestamp (wall time since creation if it has none) exceeds
  segment.ms minus this segment's jitter, when an index is full, or when the
  batch's last offset would not fit the segment's int32 relative offsets.
- one reader hands out file slices (``FetchSlice``: descriptor, position, size) for
  sendfile: ``read_for_fetch`` is Kafka's UnifiedLog.read (one segment, a byte count
  whose last batch may be cut short, aborted transactions for read_committed), what
  Fetch answers; ``read`` keeps whole batches across segments (the broker's own
  readers).
- removed segments are renamed ``*.deleted`` and closed/unlinked only after
  file.delete.delay.ms, so FetchSlice descriptors stay valid meanwhile.
- a log's dir is ``<topic>-<partition>``, or Kafka's ``<topic>-<partition>.<uuid
  hex>-future`` for a replica being moved to another log dir of the broker (renamed
  to the plain name by ``rename_dir`` when it replaces the current one; open
  descriptors and mmaps stay valid across the rename).
"""
from __future__ import annotations

import bisect
import os
import random
import shutil
import threading
import uuid
from typing import Any, NamedTuple

from kafkapy.clock import SYSTEM_CLOCK, Clock
from kafkapy.log.leader_epoch import LeaderEpochCache
from kafkapy.native import find_timestamp
from kafkapy.log.log_config import LogConfig
from kafkapy.log.partition_metadata import read_partition_metadata, write_partition_metadata
from kafkapy.log.producer_state import (DuplicateBatch, ProducerStateManager,
                                        ProducerStateManagerConfig)
from kafkapy.log.segment import (DELETED_SUFFIX, INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX,
                                 TXN_INDEX_SUFFIX, FetchSlice, LogSegment, filename_prefix)
from kafkapy.log.swap import recover_swap_files
from kafkapy.log import transaction_index
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.records.batch import BatchHeader, RecordError, patch_for_append
from kafkapy.records.record import decode_records

DELETE_DIR_SUFFIX = "-delete"
FUTURE_DIR_SUFFIX = "-future"
STRAY_DIR_SUFFIX = "-stray"
_CLEANUP_SUFFIXES = (DELETED_SUFFIX, ".cleaned", ".swap", ".tmp")


#: A read for Fetch (Kafka's FetchDataInfo): (file slices, the aborted transactions they
#: may hold with read_committed, else None).  A plain tuple: one per partition fetched.
FetchDataInfo = tuple[list[FetchSlice], "list[transaction_index.AbortedTxn] | None"]


class AppendInfo(NamedTuple):
    first_offset: int
    last_offset: int
    log_append_time_ms: int  # -1 for CreateTime (a duplicate reports its stored timestamp)
    log_start_offset: int
    duplicate: bool = False


def partition_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def parse_partition_dir_name(name: str) -> tuple[str, int] | None:
    """(topic, partition) of a ``<topic>-<partition>`` dir name, else None."""
    topic, sep, part = name.rpartition("-")
    if not sep or not topic or not part.isdigit():
        return None
    return topic, int(part)


def future_dir_name(topic: str, partition: int) -> str:
    """Kafka's UnifiedLog.logFutureDirName: ``<topic>-<p>.<uuid hex>-future``."""
    return f"{partition_dir_name(topic, partition)}.{uuid.uuid4().hex}{FUTURE_DIR_SUFFIX}"


def parse_log_dir_name(name: str) -> tuple[str, int] | None:
    """(topic, partition) of a plain log dir name or of one with Kafka's
    ``.<uuid hex>-delete/-future/-stray`` suffix (UnifiedLog.parseTopicPartitionName)."""
    for suffix in (DELETE_DIR_SUFFIX, FUTURE_DIR_SUFFIX, STRAY_DIR_SUFFIX):
        if name.endswith(suffix):
            stem, dot, unique = name[:-len(suffix)].rpartition(".")
            if not dot or len(unique) != 32:
                return None
            return parse_partition_dir_name(stem)
    return parse_partition_dir_name(name)


class Log:
    """A partition log.  Build with ``Log.load`` (it may recover segments)."""

    def __init__(self, dir_path: str, topic: str, partition: int, config: LogConfig,
                 clock: Clock = SYSTEM_CLOCK, *,
                 producer_state_config: ProducerStateManagerConfig | None = None) -> None:
        self.dir = dir_path
        self.topic = topic
        self.partition = partition
        self.config = config
        self.clock = clock
        self.segments: list[LogSegment] = []
        self._bases: list[int] = []
        self.log_start_offset = 0
        self.log_end_offset = 0
        self._high_watermark = 0
        self.recovery_point = 0
        self.last_flush_ms = clock.time_ms()
        self.producer_state = ProducerStateManager(dir_path, config=producer_state_config)
        self.leader_epoch_cache = LeaderEpochCache(None)
        self.topic_id: str | None = None
        self._topic_id_unsaved = False
        self.recovered_bytes_truncated = 0
        self.offline = False    # set by LogManager.fail_dir: its dir had an I/O error
        # Held by the flushing thread (LogManager.flush_dirty) around a flush and by a dir
        # rename on the loop, so no flush writes by path into a dir being renamed
        # (re-entrant: the swap holds it while it sends the old log to deletion).
        self.io_lock = threading.RLock()
        self._closed = False
        self._pending_deletes: list[tuple[int, LogSegment]] = []

    # ---------------------------------------------------------------- loading

    @classmethod
    def load(cls, dir_path: str, config: LogConfig | dict[str, Any] | None = None,
             clock: Clock = SYSTEM_CLOCK, *, recovery_point: int = 0,
             log_start_offset: int = 0, high_watermark: int = 0,
             had_clean_shutdown: bool = True, topic_id: str | None = None,
             producer_state_config: ProducerStateManagerConfig | None = None) -> "Log":
        """Open (or create) the log in ``dir_path``; blocking, may recover segments."""
        parsed = parse_log_dir_name(os.path.basename(os.path.normpath(dir_path)))
        if parsed is None:
            raise ValueError(f"not a partition directory name: {dir_path}")
        if not isinstance(config, LogConfig):
            config = LogConfig(config)
        log = cls(dir_path, parsed[0], parsed[1], config, clock,
                  producer_state_config=producer_state_config)
        os.makedirs(dir_path, exist_ok=True)
        log._load(recovery_point, log_start_offset, high_watermark, had_clean_shutdown)
        stored_id = read_partition_metadata(dir_path)
        if topic_id is not None:
            if stored_id is None:
                log.record_topic_id(topic_id)
                return log
            elif stored_id != topic_id:
                log.close()
                raise KafkaError(ErrorCode.INCONSISTENT_TOPIC_ID,
                                 f"Tried to assign topic ID {topic_id} to log {dir_path}, "
                                 f"but log already contained topic ID {stored_id}")
        log.topic_id = stored_id
        return log

    def _new_segment(self, base_offset: int, writable: bool = True) -> LogSegment:
        seg = LogSegment(self.dir, base_offset,
                         index_interval_bytes=self.config.index_interval_bytes,
                         max_index_size=self.config.max_index_size, clock=self.clock,
                         writable=writable)
        jitter = self.config.segment_jitter_ms
        seg.roll_jitter_ms = random.randrange(jitter) if jitter > 0 else 0
        return seg

    def _load(self, recovery_point: int, log_start_offset: int, high_watermark: int,
              had_clean_shutdown: bool) -> None:
        recover_swap_files(self.dir)  # finish or roll back an interrupted cleaner swap
        names = os.listdir(self.dir)
        bases: list[int] = []
        for name in names:
            path = os.path.join(self.dir, name)
            if name.endswith(_CLEANUP_SUFFIXES):
                _remove(path)
                continue
            stem, ext = os.path.splitext(name)
            if not stem.isdigit():
                continue
            if ext == LOG_SUFFIX:
                bases.append(int(stem))
            elif ext in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
                if f"{stem}{LOG_SUFFIX}" not in names:
                    _remove(path)  # orphan index
        bases.sort()
        present = set(names)
        for i, base in enumerate(bases):
            seg = self._new_segment(base, writable=(i == len(bases) - 1))
            # Kafka's LogLoader: a non-empty segment without its index is recovered (the
            # indexes themselves are opened lazily, on first use; a corrupt one is
            # rebuilt then, see LogSegment).
            stem = filename_prefix(base)
            if seg.size > 0 and (f"{stem}{INDEX_SUFFIX}" not in present
                                 or f"{stem}{TIME_INDEX_SUFFIX}" not in present):
                seg.needs_recovery = True
            self._append_segment(seg)
        # Recovery: after an unclean shutdown the segment holding the recovery point and
        # every later one (Kafka's LogLoader.recoverLog), and any segment whose index
        # was missing.
        i = 0
        if not had_clean_shutdown and self.segments:
            rp_index = max(0, bisect.bisect_right(self._bases, recovery_point) - 1)
        else:
            rp_index = len(self.segments)
        while i < len(self.segments):
            seg = self.segments[i]
            if i >= rp_index or seg.needs_recovery:
                truncated = seg.recover()
                self.recovered_bytes_truncated += truncated
                if truncated > 0 and i + 1 < len(self.segments):
                    # Corruption inside a segment: everything after it is suspect.
                    for later in self.segments[i + 1:]:
                        later.delete()
                    del self.segments[i + 1:]
                    del self._bases[i + 1:]
            i += 1
        if not self.segments:
            self._append_segment(self._new_segment(max(log_start_offset, 0)))
        active = self.segments[-1]
        active.resize_indexes(self.config.max_index_size)
        self.log_end_offset = active.next_offset
        self.log_start_offset = min(max(log_start_offset, self.segments[0].base_offset),
                                    self.log_end_offset)
        # After a clean shutdown everything was flushed: the LEO is durable.  After
        # recovery nothing is fsynced here (Kafka's LogLoader): the recovery point stays
        # where it was, so a second crash recovers the same segments again, and the
        # next flush (roll, flush.ms, shutdown) moves it.
        if had_clean_shutdown:
            self.recovery_point = self.log_end_offset
        else:
            self.recovery_point = max(min(recovery_point, self.log_end_offset),
                                      self.log_start_offset)
        self._high_watermark = min(max(high_watermark, self.log_start_offset),
                                   self.log_end_offset)
        self.leader_epoch_cache = LeaderEpochCache(self.dir)
        self.leader_epoch_cache.truncate_from_end(self.log_end_offset)
        # Kafka's LogLoader: snapshots at no segment's base offset go (the newest stray
        # one stays if it is past the last segment's base: the log end's snapshot).
        self.producer_state.remove_stray_snapshots(self._bases)
        self._rebuild_producer_state()

    def _rebuild_producer_state(self) -> None:
        """Latest snapshot at or below the LEO, then batch headers from there on."""
        ps = self.producer_state
        ps.producers.clear()
        ps.delete_snapshots_out_of_range(self.log_start_offset, self.log_end_offset)
        snap = ps.load_latest_snapshot(self.log_end_offset, self.clock.time_ms())
        if snap is None or snap < self.log_start_offset:
            ps.producers.clear()
            start = self.log_start_offset
            ps.last_snap_offset = start
        else:
            start = snap
        ps.map_end_offset = start
        for seg in self.segments:
            transaction_index.for_segment(seg).truncate_to(self.log_end_offset)
        for seg in self.segments[self.segment_for(start):]:
            h0 = seg.find_offset_position(start) if seg.base_offset < start else None
            if seg.base_offset < start and h0 is None:
                continue
            for h in seg.iter_batches(h0.position if h0 is not None else 0):
                if h.base_offset + h.last_offset_delta >= start:
                    if h.producer_id >= 0 and h.is_control:
                        self._on_txn_marker(seg.read_batch_bytes(h), h, h.base_offset, seg,
                                            position=0)
                    ps.update(h)
        ps.map_end_offset = self.log_end_offset

    def _append_segment(self, seg: LogSegment) -> None:
        self.segments.append(seg)
        self._bases.append(seg.base_offset)

    # ---------------------------------------------------------------- properties

    @property
    def active_segment(self) -> LogSegment:
        return self.segments[-1]

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @high_watermark.setter
    def high_watermark(self, value: int) -> None:
        self._high_watermark = min(max(value, self.log_start_offset), self.log_end_offset)

    @property
    def size(self) -> int:
        return sum(s.size for s in self.segments)

    @property
    def name(self) -> str:
        return partition_dir_name(self.topic, self.partition)

    def segment_for(self, offset: int) -> int:
        """Index of the segment that would hold ``offset`` (floor by base offset)."""
        return max(0, bisect.bisect_right(self._bases, offset) - 1)

    def iter_batch_headers(self, start_offset: int = 0):
        """Headers of every batch whose last offset >= ``start_offset`` (pread, no decode)."""
        for seg in self.segments[self.segment_for(start_offset):]:
            h0 = seg.find_offset_position(start_offset) if seg.base_offset < start_offset \
                else None
            pos = h0.position if h0 is not None else 0
            if seg.base_offset < start_offset and h0 is None:
                continue
            yield from seg.iter_batches(pos)

    # ---------------------------------------------------------------- append

    def append_as_leader(self, records, header: BatchHeader, leader_epoch: int) -> AppendInfo:
        """Assign offsets to one validated batch and append it.

        ``records`` holds the batch at ``header.position`` (a bytearray or
        writable memoryview is patched in place; read-only bytes are copied).
        Idempotent duplicates return the original offsets and write nothing.
        """
        if self._closed:
            raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, f"log {self.name} is closed")
        size = header.size
        if size > self.config.segment_bytes:
            raise RecordError(ErrorCode.RECORD_LIST_TOO_LARGE,
                              f"Message batch size is {size} bytes which exceeds the "
                              f"maximum configured segment size of {self.config.segment_bytes}")
        if header.producer_id >= 0:
            dup = self.producer_state.check(header)
            if dup is not None:
                return AppendInfo(dup.first_offset, dup.last_offset, dup.timestamp,
                                  self.log_start_offset, True)
        if isinstance(records, bytes) or (isinstance(records, memoryview) and records.readonly):
            records = bytearray(records)
        first = self.log_end_offset
        last = first + header.last_offset_delta
        now = self.clock.time_ms()
        log_append = self.config.log_append_time
        patch_for_append(records, header, first, leader_epoch, now if log_append else None)
        seg = self._maybe_roll(size, last, header.max_timestamp, now)
        pos = header.position
        mv = memoryview(records)
        seg.append(last, header.max_timestamp, last,
                   mv if pos == 0 and len(mv) == size else mv[pos:pos + size])
        self.log_end_offset = last + 1
        if header.producer_id >= 0:
            if header.is_control:
                self._on_txn_marker(records, header, first, seg)
            self.producer_state.update(header, first)
        self.producer_state.map_end_offset = self.log_end_offset
        if leader_epoch >= 0 and self.leader_epoch_cache.latest_epoch != leader_epoch:
            self.leader_epoch_cache.assign(leader_epoch, first)
        if self.log_end_offset - self.recovery_point >= self.config.flush_messages:
            self.flush()
        return AppendInfo(first, last, now if log_append else -1, self.log_start_offset)

    def append_as_follower(self, records, header: BatchHeader) -> None:
        """Append a batch that already carries its offsets (replication/tests)."""
        if header.base_offset < self.log_end_offset:
            raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE,
                             f"batch offset {header.base_offset} below LEO "
                             f"{self.log_end_offset}")
        size = header.size
        seg = self._maybe_roll(size, header.last_offset, header.max_timestamp,
                               self.clock.time_ms())
        pos = header.position
        seg.append(header.last_offset, header.max_timestamp, header.last_offset,
                   memoryview(records)[pos:pos + size])
        self.log_end_offset = header.last_offset + 1
        if header.producer_id >= 0 and header.is_control:
            self._on_txn_marker(records, header, header.base_offset, seg)
        self.producer_state.update(header)
        if header.partition_leader_epoch >= 0:
            self.leader_epoch_cache.assign(header.partition_leader_epoch, header.base_offset)

    def _maybe_roll(self, messages_size: int, max_offset: int, max_timestamp: int,
                    now_ms: int) -> LogSegment:
        seg = self.segments[-1]
        c = self.config
        if seg.should_roll(messages_size=messages_size, max_offset=max_offset,
                           max_timestamp=max_timestamp, now_ms=now_ms,
                           segment_bytes=c.segment_bytes, segment_ms=c.segment_ms,
                           jitter_ms=seg.roll_jitter_ms):
            return self.roll()
        return seg

    def roll(self) -> LogSegment:
        """Start a new active segment at the log end offset."""
        old = self.segments[-1]
        new_base = self.log_end_offset
        if old.base_offset == new_base and old.size == 0:
            return old
        old.on_become_inactive()
        self.producer_state.map_end_offset = new_base
        self.producer_state.take_snapshot(fsync=False)
        self.producer_state.delete_snapshots_below(self.log_start_offset, keep=2)
        seg = self._new_segment(new_base)
        self._append_segment(seg)
        return seg

    # ---------------------------------------------------------------- read

    def read(self, offset: int, max_bytes: int, max_offset: int | None = None,
             min_one_message: bool = True) -> list[FetchSlice]:
        """Whole batches from the batch holding ``offset``, up to ``max_bytes``.

        ``max_offset`` is exclusive (pass the high watermark for consumers).
        Raises KafkaError(OFFSET_OUT_OF_RANGE) for offset < log start or > LEO.
        May span segments; each slice is a contiguous range of one .log file.
        The broker's own readers use it (coordinator loads, moves between log
        dirs); Fetch reads through ``read_for_fetch``.
        """
        return self._read(offset, max_bytes, max_offset, min_one_message, True, False)[0]

    def read_for_fetch(self, offset: int, max_bytes: int, upper_offset: int,
                       min_one_message: bool, read_committed: bool) -> FetchDataInfo:
        """Kafka's UnifiedLog.read, what a Fetch answers: file slices for sendfile.

        The read stays in the first segment holding a batch at or after ``offset``
        and stops at ``max_bytes`` (at least the first batch when
        ``min_one_message``) or at the position of ``upper_offset`` (the log end,
        high watermark or last stable offset), so its last batch may be cut short;
        clients drop such a partial batch.  ``read_committed`` adds the aborted
        transactions up to Kafka's bound for the bytes read (None otherwise).
        Raises KafkaError(OFFSET_OUT_OF_RANGE) for offset < log start or > LEO.
        """
        return self._read(offset, max_bytes, upper_offset, min_one_message, False,
                          read_committed)

    def _read(self, offset: int, max_bytes: int, max_offset: int | None,
              min_one_message: bool, whole_batches: bool, read_committed: bool
              ) -> FetchDataInfo:
        """The one reader behind ``read`` (whole batches, across segments) and
        ``read_for_fetch`` (a byte count in one segment, Kafka's)."""
        leo = self.log_end_offset
        if offset < self.log_start_offset or offset > leo:
            raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE,
                             f"offset {offset} is out of range for {self.name}: "
                             f"[{self.log_start_offset}, {leo}]")
        limit = max_offset if max_offset is not None and max_offset < leo else None
        if offset == leo or (limit is not None and offset >= limit):
            return [], ([] if read_committed else None)
        segs = self.segments
        last = len(segs) - 1
        # The segment holding the limit (None: read every segment to its end).
        limit_index = self.segment_for(limit) if limit is not None else last + 1
        out: list[FetchSlice] = []
        remaining = max_bytes
        at = offset
        for i in range(self.segment_for(offset), last + 1):
            seg = segs[i]
            if i < limit_index:
                max_pos = None
            elif i == limit_index:
                h = seg.find_offset_position(limit)
                max_pos = h.position if h is not None else seg.size
            elif whole_batches:
                break
            else:
                max_pos = 0     # past the limit: nothing to read here
            sl = seg.read(at, remaining, max_pos, min_one_message and not out, whole_batches)
            if not whole_batches:
                if sl is None:
                    continue    # nothing at or after the offset here: the next segment
                return ([sl] if sl.size else [],
                        self._aborted(i, offset, sl.position + sl.size) if read_committed
                        else None)
            if sl is not None:
                if sl.size == 0:
                    break
                out.append(sl)
                remaining -= sl.size
                if remaining <= 0 or i == limit_index or sl.position + sl.size < seg.size:
                    break
            if i < last:
                at = segs[i + 1].base_offset
        return out, None    # (for a fetch: everything from the offset on was removed)

    def _aborted(self, index: int, offset: int, end_position: int
                 ) -> list[transaction_index.AbortedTxn]:
        """read_committed: aborted transactions from ``offset`` up to Kafka's upper bound
        for a read of segment ``index`` that ends at ``end_position``: the first
        offset-index entry at or past that position, else the next segment's base
        offset, else the log end (LocalLog.addAbortedTransactions)."""
        segs = self.segments
        entries = segs[index].offset_index
        slot = bisect.bisect_left(range(entries.entries), end_position,
                                  key=lambda i: entries.entry(i)[1])
        if slot < entries.entries:
            upper = entries.entry(slot)[0]
        elif index + 1 < len(segs):
            upper = segs[index + 1].base_offset
        else:
            upper = self.log_end_offset
        return self.collect_aborted_transactions(offset, upper)

    def read_bytes(self, offset: int, max_bytes: int, max_offset: int | None = None,
                   min_one_message: bool = True) -> bytes:
        """``read`` then os.pread the slices (tests, non-sendfile paths)."""
        return b"".join(s.read_bytes() for s in self.read(offset, max_bytes, max_offset,
                                                          min_one_message))

    # ---------------------------------------------------------------- timestamps

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp >= target.

        Picks the first segment whose max timestamp >= target, then the first
        batch there whose maxTimestamp >= target, and decodes only that batch
        to find the record (ListOffsets).  None when no record qualifies.
        """
        for seg in self.segments:
            if seg.max_timestamp_so_far < timestamp:
                continue
            found = seg.find_offset_by_timestamp(timestamp, self.log_start_offset)
            if found is not None:
                return found
        return None

    def max_timestamp_and_offset(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with the log's largest timestamp."""
        best = None
        for seg in self.segments:
            if seg.size and (best is None or seg.max_timestamp_so_far > best.max_timestamp_so_far):
                best = seg
        if best is None or best.max_timestamp_so_far < 0:
            return None
        ts = best.max_timestamp_so_far
        h = best.find_offset_position(best.offset_of_max_timestamp)
        if h is not None and h.max_timestamp == ts:
            found = find_timestamp(best.read_batch_bytes(h), ts)
            if found is not None:
                return found
        return best.offset_of_max_timestamp, ts

    # ---------------------------------------------------------------- flush / config

    def record_topic_id(self, topic_id: str) -> None:
        """Take the topic id; ``partition.metadata`` is written (fsynced) by the next flush
        or the close, off the request path, as Kafka's PartitionMetadataFile.maybeFlush.
        A crash before that leaves no file, and the id is recorded again at the next load."""
        self.topic_id = topic_id
        self._topic_id_unsaved = True

    def _save_topic_id(self) -> None:
        if self._topic_id_unsaved:
            write_partition_metadata(self.dir, self.topic_id)
            self._topic_id_unsaved = False

    def flush(self, up_to_offset: int | None = None) -> None:
        """fsync segments holding offsets in [recovery_point, up_to_offset)."""
        self._save_topic_id()
        target = self.log_end_offset if up_to_offset is None else min(up_to_offset,
                                                                      self.log_end_offset)
        if target <= self.recovery_point:
            return
        first = self.segment_for(self.recovery_point)
        for seg in self.segments[first:]:
            if seg.base_offset >= target and seg is not self.segments[first]:
                break
            seg.flush()
        self.leader_epoch_cache.flush()
        self.recovery_point = target
        self.last_flush_ms = self.clock.time_ms()

    def flush_if_due(self, now_ms: int | None = None) -> bool:
        """flush.ms policy: flush when flush.ms has passed since the last flush."""
        now = self.clock.time_ms() if now_ms is None else now_ms
        if (self.log_end_offset > self.recovery_point
                and now - self.last_flush_ms >= self.config.flush_ms):
            self.flush()
            return True
        return False

    def update_config(self, changes: dict[str, Any]) -> None:
        """Apply new topic-level values live (rolls/indexing use them from now on)."""
        self.config = self.config.updated(changes)
        for seg in self.segments:
            seg.index_interval_bytes = self.config.index_interval_bytes

    def maybe_increment_log_start_offset(self, new_start: int) -> None:
        """Move the log start forward (DeleteRecords / retention)."""
        if new_start > self.log_end_offset:
            raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE,
                             f"log start {new_start} beyond LEO {self.log_end_offset}")
        if new_start > self.log_start_offset:
            self.log_start_offset = new_start
            self._high_watermark = max(self._high_watermark, new_start)
            self.recovery_point = max(self.recovery_point, min(new_start, self.log_end_offset))
            self.leader_epoch_cache.truncate_from_start(new_start)

    # ---------------------------------------------------------------- retention

    def delete_old_segments(self, now_ms: int | None = None) -> int:
        """Kafka's retention pass; returns the number of segments removed.

        With cleanup.policy containing ``delete``: segments past retention.ms
        (by largest timestamp) and the oldest segments beyond retention.bytes;
        always: segments wholly below the log start offset.  Only segments
        entirely below the high watermark are eligible; the active segment is
        rolled first if it must go.  Files get the ``.deleted`` suffix and are
        removed by ``purge_deleted_segments`` after file.delete.delay.ms.
        """
        now = self.clock.time_ms() if now_ms is None else now_ms
        c = self.config
        n = 0
        if "delete" in c.cleanup_policy:
            if c.retention_ms >= 0:
                n += self._delete_segments(
                    lambda seg, nxt: now - seg.largest_timestamp > c.retention_ms, now)
            if c.retention_bytes >= 0:
                excess = [self.size - c.retention_bytes]

                def over_size(seg: LogSegment, nxt: LogSegment | None) -> bool:
                    if excess[0] - seg.size >= 0:
                        excess[0] -= seg.size
                        return True
                    return False
                if excess[0] > 0:
                    n += self._delete_segments(over_size, now)
        n += self._delete_segments(
            lambda seg, nxt: nxt is not None and nxt.base_offset <= self.log_start_offset, now)
        return n

    def _delete_segments(self, predicate, now_ms: int) -> int:
        doomed: list[LogSegment] = []
        segs = self.segments
        for i, seg in enumerate(segs):
            nxt = segs[i + 1] if i + 1 < len(segs) else None
            if nxt is None and seg.size == 0:
                break
            upper = nxt.base_offset if nxt is not None else self.log_end_offset
            if self._high_watermark >= upper and predicate(seg, nxt):
                doomed.append(seg)
            else:
                break
        if not doomed:
            return 0
        if len(doomed) == len(segs):
            self.roll()
        del self.segments[:len(doomed)]
        del self._bases[:len(doomed)]
        new_start = self.segments[0].base_offset
        if new_start > self.log_start_offset:
            self.log_start_offset = new_start
            self.leader_epoch_cache.truncate_from_start(new_start)
        self.recovery_point = max(self.recovery_point, self.log_start_offset)
        self._schedule_delete(doomed, now_ms)
        self.producer_state.delete_snapshots_below(self.log_start_offset, keep=2)
        return len(doomed)

    def _schedule_delete(self, segs: list[LogSegment], now_ms: int | None = None) -> None:
        """Rename to ``.deleted`` now; close and unlink after file.delete.delay.ms, so
        descriptors handed out in FetchSlices stay valid for in-flight sendfiles."""
        now = self.clock.time_ms() if now_ms is None else now_ms
        due = now + self.config.file_delete_delay_ms
        for seg in segs:
            seg.rename_for_delete()
            self._pending_deletes.append((due, seg))

    def purge_deleted_segments(self, now_ms: int | None = None, force: bool = False) -> int:
        """Close and unlink ``.deleted`` segments whose delay has passed."""
        now = self.clock.time_ms() if now_ms is None else now_ms
        keep, n = [], 0
        for due, seg in self._pending_deletes:
            if force or now >= due:
                seg.delete()
                n += 1
            else:
                keep.append((due, seg))
        self._pending_deletes = keep
        return n

    # ---------------------------------------------------------------- truncation

    def truncate_to(self, offset: int) -> bool:
        """Remove everything at and after ``offset``; True if anything was removed."""
        if offset < 0:
            raise ValueError(f"cannot truncate to negative offset {offset}")
        if offset >= self.log_end_offset:
            # Kafka's UnifiedLog.truncateTo: a broker that led an epoch without appending
            # keeps that epoch's entry at the log end; the new leader's diverging epoch
            # says to drop it, else the follower asks with the same epoch forever.
            self.leader_epoch_cache.truncate_from_end(self.log_end_offset)
            return False
        if offset <= self.segments[0].base_offset:
            self.truncate_fully_and_start_at(offset)
            return True
        doomed = []
        while len(self.segments) > 1 and self.segments[-1].base_offset >= offset:
            doomed.append(self.segments.pop())
            self._bases.pop()
        self._schedule_delete(doomed)
        active = self.segments[-1]
        active.truncate_to(offset)
        active.resize_indexes(self.config.max_index_size)
        self.log_end_offset = active.next_offset
        self._after_truncate()
        return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self._schedule_delete(self.segments)
        self.segments = []
        self._bases.clear()
        self._append_segment(self._new_segment(offset))
        self.log_end_offset = offset
        self.log_start_offset = offset
        self._after_truncate()

    def _after_truncate(self) -> None:
        leo = self.log_end_offset
        self.log_start_offset = min(self.log_start_offset, leo)
        self.recovery_point = min(self.recovery_point, leo)
        self._high_watermark = min(max(self._high_watermark, self.log_start_offset), leo)
        self.leader_epoch_cache.truncate_from_end(leo)
        self.producer_state.truncate_and_reload(self.log_start_offset, leo)
        self._rebuild_producer_state()

    # ---------------------------------------------------------------- transactions

    def _on_txn_marker(self, records, header: BatchHeader, offset: int, seg: LogSegment,
                       position: int | None = None) -> None:
        """A transaction marker at ``offset`` (before the producer state forgets the
        transaction): an ABORT of a transaction that wrote data here goes into the
        segment's ``.txnindex`` with the LSO right after it (Kafka's CompletedTxn)."""
        entry = self.producer_state.last_entry(header.producer_id)
        if entry is None or entry.current_txn_first_offset < 0:
            return
        pos = header.position if position is None else position
        decoded = decode_records(records, pos)
        if not decoded or decoded[0].key is None or len(decoded[0].key) < 4:
            return
        control_type = int.from_bytes(decoded[0].key[2:4], "big", signed=True)
        if control_type != 0:  # COMMIT
            return
        others = [e.current_txn_first_offset for e in self.producer_state.producers.values()
                  if e.current_txn_first_offset >= 0 and e.producer_id != header.producer_id]
        lso = min(others) if others else offset + 1
        index = transaction_index.for_segment(seg)
        if not index.has(offset):
            index.append(transaction_index.AbortedTxn(header.producer_id,
                                                      entry.current_txn_first_offset,
                                                      offset, lso))

    def first_unstable_offset(self) -> int | None:
        return self.producer_state.first_unstable_offset()

    def collect_aborted_transactions(self, start_offset: int, upper_offset: int
                                     ) -> list[transaction_index.AbortedTxn]:
        """Aborted transactions overlapping [start_offset, upper_offset) (Kafka's
        LocalLog.collectAbortedTransactions): from the segment holding the start on."""
        out: list[transaction_index.AbortedTxn] = []
        for seg in self.segments[self.segment_for(start_offset):]:
            found, complete = transaction_index.for_segment(seg).collect(start_offset,
                                                                         upper_offset)
            out.extend(found)
            if complete:
                break
        return out

    # ---------------------------------------------------------------- lifecycle

    def close(self, sync: bool = True) -> None:
        """Trim indexes, write a producer snapshot if the log moved since the last one
        (Kafka's takeSnapshot at close), close files (no fsync of data).  ``sync=False``:
        the snapshot and the indexes are not fsynced/msynced here, the caller syncs the
        whole log dir once (LogManager.shutdown) before trusting them."""
        if self._closed:
            return
        self.producer_state.map_end_offset = self.log_end_offset
        self._save_topic_id()
        try:
            self.producer_state.take_snapshot(fsync=sync)
        except OSError:
            pass
        for seg in self.segments:
            seg.close(sync)
        self.purge_deleted_segments(force=True)
        self._closed = True

    def delete(self) -> str:
        """Close, rename the dir to ``<topic>-<p>.<uuid hex>-delete``, remove it."""
        renamed = self.rename_for_delete()
        shutil.rmtree(renamed, ignore_errors=True)
        return renamed

    def release(self) -> None:
        """Close every descriptor without writing anything."""
        for seg in self.segments:
            seg.release()
        for _, seg in self._pending_deletes:
            seg.release()
        self._pending_deletes = []
        self._closed = True

    @property
    def is_closed(self) -> bool:
        """Closed, released or renamed for deletion: nothing writes to it any more."""
        return self._closed

    @property
    def is_future(self) -> bool:
        """A future replica's log (an intra-broker move in progress), by its dir name."""
        return self.dir.endswith(FUTURE_DIR_SUFFIX)

    @property
    def parent_dir(self) -> str:
        return os.path.dirname(os.path.normpath(self.dir))

    def rename_dir(self, new_name: str) -> str:
        """Rename the live log's dir within its log dir (Kafka's renameDir with
        shouldReinitialize): descriptors and mmaps stay open, every path follows."""
        old = os.path.normpath(self.dir)
        new = os.path.join(os.path.dirname(old), new_name)
        os.rename(old, new)
        self.dir = new
        moved = lambda p: os.path.join(new, os.path.basename(p)) if p else p  # noqa: E731
        for seg in self.segments + [seg for _, seg in self._pending_deletes]:
            seg.dir = new
            seg.log_path = moved(seg.log_path)
            seg.offset_index.path = moved(seg.offset_index.path)
            seg.time_index.path = moved(seg.time_index.path)
            txn = transaction_index._BY_SEGMENT.get(seg)
            if txn is not None:
                txn.path = moved(txn.path)
        self.producer_state.dir = new
        self.leader_epoch_cache.path = moved(self.leader_epoch_cache.path)
        return new

    def rename_for_delete(self, close: bool = True) -> str:
        """Rename the dir for deletion (closing files unless ``close`` is False, in
        which case the caller calls ``release`` later); returns the new path."""
        self._closed = True
        if close:
            self.release()
        parent = os.path.dirname(os.path.normpath(self.dir))
        suffix = f".{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"
        prefix = f"-{self.partition}"
        topic = self.topic[:255 - len(prefix) - len(suffix)]
        new = os.path.join(parent, topic + prefix + suffix)
        os.rename(self.dir, new)
        self.dir = new
        return new

    def __repr__(self) -> str:
        return (f"Log({self.name}, start={self.log_start_offset}, end={self.log_end_offset}, "
                f"hw={self._high_watermark}, segments={len(self.segments)})")


def _remove(path: str) -> None:
    try:
        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    except FileNotFoundError:
        pass


__all__ = ["Log", "AppendInfo", "DuplicateBatch", "FetchSlice", "partition_dir_name",
           "parse_partition_dir_name", "parse_log_dir_name", "future_dir_name"]
