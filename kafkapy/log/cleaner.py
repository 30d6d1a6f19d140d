"""Log compaction (Kafka's LogCleaner, LogCleanerManager and Cleaner).

Which log: every log whose cleanup.policy contains ``compact``; its first
dirty offset comes from ``cleaner-offset-checkpoint`` in its log dir (Kafka's
text checkpoint: ``<topic> <partition> <offset>`` lines), reset to the log start
when it is missing, below the log start or beyond the log end.  The cleanable
section is [first dirty, first uncleanable) where first uncleanable is the
smallest of the active segment's base offset, the last stable offset (high
watermark and first open transaction) and the base of the first dirty segment
younger than min.compaction.lag.ms.  The dirtiest log (cleanable bytes /
(clean + cleanable bytes)) above min.cleanable.dirty.ratio is cleaned, or any
log holding a segment older than max.compaction.lag.ms.

How: an ``OffsetMap`` (key -> latest offset) is built over the dirty section
(records decoded; aborted transactional data and keyless records skipped);
then every segment from the first one up to the map's latest offset, grouped
as Kafka does (a group's summed log size <= segment.bytes, index sizes <=
segment.index.bytes, relative offsets in int32), is rewritten into
``<group base>.log.cleaned`` (+ ``.index.cleaned``, ``.timeindex.cleaned``,
``.txnindex.cleaned`` when it has aborted transactions), batch by batch, with
Kafka's MemoryRecords.filterTo rules:

- a record is kept when it is the latest for its key (or past the map) and it
  has a value, or it is a tombstone whose batch delete horizon is not reached;
- a batch whose records are all kept and which needs no delete horizon is
  copied byte for byte; otherwise it is rebuilt with the same base offset,
  last offset delta, leader epoch, producer id/epoch/base sequence,
  compression, timestamp type and transactional/control flags; a batch with
  tombstones (or a marker of an emptied transaction) gets the
  hasDeleteHorizonMs attribute (0x40) and baseTimestamp = now +
  delete.retention.ms the first time it is cleaned;
- an emptied batch is written as an empty header when it holds the last data
  (or the last marker) of a producer that is still active, else dropped;
- records of aborted transactions are dropped; a COMMIT/ABORT marker is
  dropped once its transaction has no data left and its delete horizon passed.

Threads: the job is prepared on the event loop (segment list, sizes,
duplicated descriptors, producer state), the rewrite runs in an executor
thread on those descriptors (inactive segments never change), and the result
is installed on the event loop by ``replace_segments`` only if the replaced
segments are still the log's (retention, truncation or deletion meanwhile
discard it).  ``replace_segments`` renames ``.cleaned`` -> ``.swap`` (log
first), the old segments -> ``.deleted``, ``.swap`` -> final; ``swap.py``
completes or rolls that back at load after a crash at any step.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import os
import struct
import threading
from dataclasses import dataclass, field
from typing import Any, Iterator

import structlog

from kafkapy.clock import SYSTEM_CLOCK, Clock
from kafkapy.log.checkpoint import (CLEANER_OFFSET_CHECKPOINT, CheckpointError,
                                    read_offset_checkpoint, write_offset_checkpoint)
from kafkapy.log.offset_index import OffsetIndex
from kafkapy.log.offset_map import OffsetMap
from kafkapy.log.segment import (INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX,
                                 LogSegment, segment_path)
from kafkapy.log.swap import CLEANED_SUFFIX, SWAP_SUFFIX
from kafkapy.log.time_index import TimeIndex
from kafkapy.protocol.topic_partition import TopicPartition
from kafkapy.records.batch import (ATTR_CONTROL, ATTR_DELETE_HORIZON, ATTR_TIMESTAMP_TYPE,
                                   ATTR_TRANSACTIONAL, CRC_START, HEADER_SIZE, HEADER_STRUCT,
                                   LOG_OVERHEAD, MIN_BATCH_LENGTH, BatchHeader, crc32c,
                                   read_header)
from kafkapy.records.record import (compress, decode_varint, decode_varlong, decompress,
                                    encode_varint, wrap64)

_log = structlog.get_logger("kafkapy.log.cleaner")

LONG_MAX = 2**63 - 1
_READ_CHUNK = 1024 * 1024
_TXN_ENTRY = struct.Struct(">hqqqq")
_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)


class CleanerAborted(Exception):
    """The cleaner was stopped while a job ran."""


class InjectedCrash(Exception):
    """Raised by ``replace_segments(fail_after=...)`` (crash tests)."""


@dataclass
class CleanerSettings:
    enable: bool = True
    threads: int = 1
    backoff_ms: int = 15000
    dedupe_buffer_size: int = 134217728
    load_factor: float = 0.9

    @classmethod
    def from_broker_config(cls, cfg) -> "CleanerSettings":
        return cls(enable=bool(cfg["log.cleaner.enable"]),
                   threads=max(1, int(cfg["log.cleaner.threads"])),
                   backoff_ms=int(cfg["log.cleaner.backoff.ms"]),
                   dedupe_buffer_size=int(cfg["log.cleaner.dedupe.buffer.size"]),
                   load_factor=float(cfg["log.cleaner.io.buffer.load.factor"]))


# ------------------------------------------------------------------ selection


def _topic_value(log, name: str, default):
    v = log.config.values.get(name, default)
    return default if v is None else v


def is_compacted(log) -> bool:
    return "compact" in log.config.cleanup_policy


def segments_between(log, start: int, end: int) -> list[LogSegment]:
    """Segments holding offsets in [start, end) (Kafka's logSegments(from, to))."""
    segs = log.segments
    out: list[LogSegment] = []
    if start == end:
        return out
    for i, seg in enumerate(segs):
        nxt = segs[i + 1].base_offset if i + 1 < len(segs) else LONG_MAX
        if seg.base_offset < end and nxt > start:
            out.append(seg)
    return out


def last_stable_offset(log) -> int:
    fuo = log.producer_state.first_unstable_offset()
    hw = log.high_watermark
    return hw if fuo is None else min(fuo, hw)


def cleanable_offsets(log, checkpointed: int | None, now_ms: int) -> tuple[int, int, bool]:
    """(first dirty, first uncleanable, checkpoint needs rewriting) -- Kafka's rules."""
    start = log.log_start_offset
    dirty = start if checkpointed is None else checkpointed
    force = False
    if dirty < start or dirty > log.log_end_offset:
        dirty, force = start, True
    bounds = [last_stable_offset(log), log.active_segment.base_offset]
    lag = max(int(_topic_value(log, "min.compaction.lag.ms", 0)), 0)
    if lag > 0:
        for seg in segments_between(log, dirty, log.active_segment.base_offset):
            if seg is log.active_segment:
                break
            if seg.largest_timestamp > now_ms - lag:
                bounds.append(seg.base_offset)
                break
    return dirty, max(dirty, min(bounds)), force


def max_compaction_delay(log, first_dirty: int, now_ms: int) -> int:
    """How far past max.compaction.lag.ms the oldest dirty segment is (0: not yet)."""
    stamps = []
    for seg in segments_between(log, first_dirty, log.active_segment.base_offset):
        if seg is log.active_segment:
            continue
        ts = seg.first_batch_timestamp
        if ts is not None and ts > 0:
            stamps.append(ts)
    lag = max(int(_topic_value(log, "max.compaction.lag.ms", LONG_MAX)), 0)
    until = now_ms - lag
    earliest = min(stamps) if stamps else LONG_MAX
    return until - earliest if earliest < until else 0


@dataclass
class LogToClean:
    key: TopicPartition
    log: Any
    first_dirty: int
    first_uncleanable: int
    needs_compaction_now: bool
    clean_bytes: int = 0
    cleanable_bytes: int = 0

    def __post_init__(self) -> None:
        self.clean_bytes = sum(s.size for s in segments_between(self.log, -1, self.first_dirty))
        self.cleanable_bytes = sum(s.size for s in segments_between(
            self.log, self.first_dirty, max(self.first_dirty, self.first_uncleanable)))

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0


# ------------------------------------------------------------------ jobs


@dataclass
class _SegSnap:
    segment: LogSegment
    fd: int
    base_offset: int
    size: int
    index_bytes: int
    time_index_bytes: int
    mtime: float
    txn_path: str


@dataclass
class CleanJob:
    key: TopicPartition
    log: Any
    dir: str
    segments: list[_SegSnap]       # every segment of the log, the active one last
    first_dirty: int
    first_uncleanable: int
    now_ms: int
    delete_retention_ms: int
    segment_bytes: int
    max_index_size: int
    index_interval_bytes: int
    producers: dict[int, tuple[int | None, int]]  # pid -> (last data offset, epoch)
    map_memory: int
    load_factor: float

    def release(self) -> None:
        for s in self.segments:
            if s.fd >= 0:
                try:
                    os.close(s.fd)
                except OSError:
                    pass
                s.fd = -1


@dataclass
class CleanedGroup:
    base_offset: int
    old: list[LogSegment]
    files: list[str]               # the .cleaned paths written


@dataclass
class CleanStats:
    messages_read: int = 0
    messages_written: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    map_messages: int = 0


@dataclass
class CleanResult:
    job: CleanJob
    end_offset: int
    groups: list[CleanedGroup] = field(default_factory=list)
    stats: CleanStats = field(default_factory=CleanStats)


def prepare_job(key, log, first_dirty: int, first_uncleanable: int, now_ms: int,
                settings: CleanerSettings) -> CleanJob:
    """Snapshot what the cleaner thread needs (call on the event loop)."""
    snaps = []
    try:
        for seg in log.segments:
            try:
                mtime = os.fstat(seg.fd).st_mtime
            except OSError:
                mtime = 0.0
            snaps.append(_SegSnap(seg, os.dup(seg.fd), seg.base_offset, seg.size,
                                  seg.offset_index.size_bytes, seg.time_index.size_bytes, mtime,
                                  segment_path(log.dir, seg.base_offset, TXN_INDEX_SUFFIX)))
    except BaseException:
        for s in snaps:
            os.close(s.fd)
        raise
    producers = {}
    for pid, entry in log.producer_state.producers.items():
        last = entry.last_offset if entry.batches else None
        producers[pid] = (last, entry.epoch)
    c = log.config
    return CleanJob(key, log, log.dir, snaps, first_dirty, first_uncleanable, now_ms,
                    int(_topic_value(log, "delete.retention.ms", 86400000)), c.segment_bytes,
                    c.max_index_size, c.index_interval_bytes, producers,
                    settings.dedupe_buffer_size // max(1, settings.threads),
                    settings.load_factor)


# ------------------------------------------------------------------ raw records


def _iter_file_batches(fd: int, size: int, abort: threading.Event | None = None
                       ) -> Iterator[tuple[BatchHeader, memoryview]]:
    """(header, bytes) of each whole batch of a .log descriptor, up to ``size``."""
    pos = 0
    buf = memoryview(b"")
    buf_start = 0
    while pos + HEADER_SIZE <= size:
        if abort is not None and abort.is_set():
            raise CleanerAborted()
        off = pos - buf_start
        if off + LOG_OVERHEAD > len(buf):
            buf = memoryview(os.pread(fd, min(_READ_CHUNK, size - pos), pos))
            buf_start, off = pos, 0
        length = struct.unpack_from(">i", buf, off + 8)[0]
        total = LOG_OVERHEAD + length
        if length < MIN_BATCH_LENGTH or pos + total > size:
            return
        if off + total > len(buf):
            buf = memoryview(os.pread(fd, max(total, min(_READ_CHUNK, size - pos)), pos))
            buf_start, off = pos, 0
            if len(buf) < total:
                return
        h = read_header(buf, off)
        h.position = pos
        yield h, buf[off:off + total]
        pos += total


@dataclass(slots=True)
class _RawRecord:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers_raw: bytes


def _read_blob(data, p: int) -> tuple[bytes | None, int]:
    n, p = decode_varint(data, p)
    if n < 0:
        return None, p
    return bytes(data[p:p + n]), p + n


def _raw_records(h: BatchHeader, batch: memoryview) -> list[_RawRecord]:
    data = decompress(h.compression, batch[HEADER_SIZE:])
    out = []
    p = 0
    log_append = bool(h.attributes & ATTR_TIMESTAMP_TYPE)
    for _ in range(h.records_count):
        length, p = decode_varint(data, p)
        end = p + length
        q = p + 1
        ts_delta, q = decode_varlong(data, q)
        off_delta, q = decode_varint(data, q)
        key, q = _read_blob(data, q)
        value, q = _read_blob(data, q)
        ts = h.max_timestamp if log_append else wrap64(h.base_timestamp + ts_delta)
        out.append(_RawRecord(h.base_offset + off_delta, ts, key, value, bytes(data[q:end])))
        p = end
    return out


def _build_batch(h: BatchHeader, records: list[_RawRecord], delete_horizon: int | None) -> bytes:
    """Kafka's buildRetainedRecordsInto: same base offset and last offset delta."""
    log_append = bool(h.attributes & ATTR_TIMESTAMP_TYPE)
    base_ts = delete_horizon if delete_horizon is not None else records[0].timestamp
    body = bytearray()
    max_ts = -1
    for r in records:
        rec = bytearray(b"\x00")
        encode_varint(r.timestamp - base_ts, rec)
        encode_varint(r.offset - h.base_offset, rec)
        for blob in (r.key, r.value):
            if blob is None:
                encode_varint(-1, rec)
            else:
                encode_varint(len(blob), rec)
                rec += blob
        rec += r.headers_raw
        encode_varint(len(rec), body)
        body += rec
        max_ts = max(max_ts, r.timestamp)
    if log_append:
        max_ts = h.max_timestamp
    payload = compress(h.compression, bytes(body))
    attrs = h.attributes & (0x07 | ATTR_TIMESTAMP_TYPE | ATTR_TRANSACTIONAL | ATTR_CONTROL)
    if delete_horizon is not None:
        attrs |= ATTR_DELETE_HORIZON
    total = HEADER_SIZE + len(payload)
    buf = bytearray(total)
    HEADER_STRUCT.pack_into(buf, 0, h.base_offset, total - LOG_OVERHEAD,
                            h.partition_leader_epoch, 2, 0, attrs, h.last_offset_delta, base_ts,
                            max_ts, h.producer_id, h.producer_epoch, h.base_sequence,
                            len(records))
    buf[HEADER_SIZE:] = payload
    struct.pack_into(">I", buf, 17, crc32c(memoryview(buf)[CRC_START:]))
    return bytes(buf)


def _empty_batch(h: BatchHeader) -> bytes:
    """Kafka's DefaultRecordBatch.writeEmptyHeader: keeps offsets and producer metadata."""
    attrs = h.attributes & (ATTR_TIMESTAMP_TYPE | ATTR_TRANSACTIONAL | ATTR_CONTROL)
    buf = bytearray(HEADER_SIZE)
    HEADER_STRUCT.pack_into(buf, 0, h.base_offset, HEADER_SIZE - LOG_OVERHEAD,
                            h.partition_leader_epoch, 2, 0, attrs, h.last_offset_delta,
                            h.max_timestamp, h.max_timestamp, h.producer_id, h.producer_epoch,
                            h.base_sequence, 0)
    struct.pack_into(">I", buf, 17, crc32c(memoryview(buf)[CRC_START:]))
    return bytes(buf)


def _delete_horizon(h: BatchHeader) -> int | None:
    return h.base_timestamp if h.attributes & ATTR_DELETE_HORIZON else None


def _control_type(h: BatchHeader, batch: memoryview) -> int | None:
    """0 = ABORT, 1 = COMMIT, None for an empty control batch."""
    if h.records_count <= 0:
        return None
    recs = _raw_records(h, batch)
    if not recs or recs[0].key is None or len(recs[0].key) < 4:
        return None
    return struct.unpack_from(">h", recs[0].key, 2)[0]


# ------------------------------------------------------------------ transactions


@dataclass
class _AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    last_observed: int | None = None


class _TxnMetadata:
    """Kafka's CleanedTransactionMetadata over the aborted transactions of the log."""

    def __init__(self, aborted: list[_AbortedTxn]) -> None:
        self._pending = sorted(aborted, key=lambda t: t.first_offset)
        self._i = 0
        self.ongoing_aborted: dict[int, _AbortedTxn] = {}
        self.ongoing_committed: set[int] = set()
        self.retained_aborted: list[_AbortedTxn] = []

    def _consume_up_to(self, offset: int) -> None:
        while self._i < len(self._pending) and self._pending[self._i].first_offset <= offset:
            t = self._pending[self._i]
            if t.last_offset >= offset:  # else its marker was already passed (or skipped)
                self.ongoing_aborted[t.producer_id] = t
            self._i += 1

    def on_control_batch(self, h: BatchHeader, ctype: int | None) -> bool:
        """True when the marker may be discarded."""
        self._consume_up_to(h.last_offset)
        if ctype is None:
            return True
        if ctype == 0:
            t = self.ongoing_aborted.pop(h.producer_id, None)
            if t is not None and t.last_observed is not None:
                self.retained_aborted.append(t)
                return False
            return True
        if ctype == 1:
            if h.producer_id in self.ongoing_committed:
                self.ongoing_committed.discard(h.producer_id)
                return False
            return True
        return False

    def on_data_batch(self, h: BatchHeader) -> bool:
        """True when the batch belongs to an aborted transaction."""
        self._consume_up_to(h.last_offset)
        if h.attributes & ATTR_TRANSACTIONAL:
            t = self.ongoing_aborted.get(h.producer_id)
            if t is not None:
                t.last_observed = h.last_offset
                return True
            self.ongoing_committed.add(h.producer_id)
        return False


def _read_txn_index(path: str) -> dict[tuple[int, int], int]:
    """(pid, last offset) -> last stable offset of an existing .txnindex (if any)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return {}
    out = {}
    for i in range(0, len(data) - len(data) % 34, 34):
        _, pid, _first, last, lso = _TXN_ENTRY.unpack_from(data, i)
        out[(pid, last)] = lso
    return out


# ------------------------------------------------------------------ the cleaner


class _CleanedWriter:
    """Writes ``<base>.log.cleaned`` and its indexes like LogSegment.append does."""

    def __init__(self, dir_path: str, base: int, index_interval: int, max_index_size: int
                 ) -> None:
        self.base = base
        self.paths = [segment_path(dir_path, base, s) + CLEANED_SUFFIX for s in _SUFFIXES]
        for p in self.paths:
            _unlink(p)
        self.fd = os.open(self.paths[0], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self.offset_index = OffsetIndex(self.paths[1], base, max_index_size, True)
        self.time_index = TimeIndex(self.paths[2], base, max_index_size, True)
        self.interval = index_interval
        self.size = 0
        self.since_index = 0
        self.max_ts = -1
        self.offset_of_max_ts = base
        self.txn_entries: list[bytes] = []

    def append(self, data: bytes | memoryview, last_offset: int, max_ts: int) -> None:
        pos = self.size
        mv = memoryview(data)
        written = 0
        while written < len(mv):
            written += os.write(self.fd, mv[written:])
        self.size += len(mv)
        if max_ts > self.max_ts:
            self.max_ts, self.offset_of_max_ts = max_ts, last_offset
        if self.since_index > self.interval and not self.offset_index.is_full:
            self.offset_index.append(last_offset, pos)
            if not self.time_index.is_full:
                self.time_index.maybe_append(self.max_ts, self.offset_of_max_ts)
            self.since_index = 0
        self.since_index += len(mv)

    def finish(self, mtime: float) -> list[str]:
        self.time_index.maybe_append(self.max_ts, self.offset_of_max_ts, skip_full_check=True)
        self.offset_index.flush()
        self.time_index.flush()
        self.offset_index.close()
        self.time_index.close()
        os.fsync(self.fd)
        os.close(self.fd)
        self.fd = -1
        if self.txn_entries:
            with open(self.paths[3], "wb") as f:
                f.write(b"".join(self.txn_entries))
                f.flush()
                os.fsync(f.fileno())
        if mtime > 0:
            os.utime(self.paths[0], (mtime, mtime))
        return [p for p in self.paths if os.path.exists(p)]

    def abandon(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        self.offset_index.release()
        self.time_index.release()
        for p in self.paths:
            _unlink(p)


class Cleaner:
    """The blocking part: build the map and write ``.cleaned`` segments (any thread)."""

    def __init__(self, abort: threading.Event | None = None) -> None:
        self.abort = abort or threading.Event()

    def clean(self, job: CleanJob) -> CleanResult:
        try:
            return self._clean(job)
        finally:
            job.release()

    def _clean(self, job: CleanJob) -> CleanResult:
        stats = CleanStats()
        aborted = self._aborted_transactions(job)
        omap = OffsetMap(job.map_memory, job.load_factor)
        self._build_offset_map(job, omap, aborted, stats)
        end = omap.latest_offset + 1
        result = CleanResult(job, end, stats=stats)
        if end <= 0:
            result.end_offset = job.first_dirty
            return result
        groups = self._group_segments(job, end)
        txn = _TxnMetadata([_AbortedTxn(t.producer_id, t.first_offset, t.last_offset,
                                        t.last_stable_offset) for t in aborted])
        try:
            for group in groups:
                result.groups.append(self._clean_group(job, group, omap, txn, stats))
        except BaseException:
            discard_result(result)
            raise
        return result

    # -- transactions: aborted ranges from the markers in the log
    def _aborted_transactions(self, job: CleanJob) -> list[_AbortedTxn]:
        pending: dict[int, int] = {}
        out: list[_AbortedTxn] = []
        lsos: dict[tuple[int, int], int] = {}
        for snap in job.segments:
            if os.path.exists(snap.txn_path):
                lsos.update(_read_txn_index(snap.txn_path))
            for h, batch in _iter_file_batches(snap.fd, snap.size, self.abort):
                if not h.attributes & ATTR_TRANSACTIONAL:
                    continue
                if h.attributes & ATTR_CONTROL:
                    first = pending.pop(h.producer_id, None)
                    if _control_type(h, batch) == 0:
                        out.append(_AbortedTxn(h.producer_id,
                                               h.base_offset if first is None else first,
                                               h.base_offset,
                                               lsos.get((h.producer_id, h.base_offset),
                                                        h.base_offset + 1)))
                else:
                    pending.setdefault(h.producer_id, h.base_offset)
        return out

    def _build_offset_map(self, job: CleanJob, omap: OffsetMap, aborted: list[_AbortedTxn],
                          stats: CleanStats) -> None:
        start, stop = job.first_dirty, job.first_uncleanable
        txn = _TxnMetadata([_AbortedTxn(t.producer_id, t.first_offset, t.last_offset,
                                        t.last_stable_offset) for t in aborted])
        for i, snap in enumerate(job.segments):
            nxt = job.segments[i + 1].base_offset if i + 1 < len(job.segments) else LONG_MAX
            if snap.base_offset >= stop:
                break
            if nxt <= start:
                continue
            for h, batch in _iter_file_batches(snap.fd, snap.size, self.abort):
                if h.base_offset >= stop:
                    return
                if h.attributes & ATTR_CONTROL:
                    txn.on_control_batch(h, _control_type(h, batch))
                elif not txn.on_data_batch(h) and h.last_offset >= start:
                    for r in _raw_records(h, batch):
                        if r.key is not None and r.offset >= start:
                            if omap.is_full:
                                return
                            omap.put(r.key, r.offset)
                            stats.map_messages += 1
                if h.last_offset >= start:
                    omap.update_latest_offset(h.last_offset)

    def _group_segments(self, job: CleanJob, end: int) -> list[list[_SegSnap]]:
        """Kafka's groupSegmentsBySize over the segments below ``end`` (never the active)."""
        segs = [s for s in job.segments[:-1] if s.base_offset < end]
        nexts = {id(s): (job.segments[i + 1].base_offset if i + 1 < len(job.segments)
                         else job.first_uncleanable) for i, s in enumerate(job.segments)}
        groups = []
        i = 0
        while i < len(segs):
            group = [segs[i]]
            log_size, idx, tidx = segs[i].size, segs[i].index_bytes, segs[i].time_index_bytes
            i += 1
            while (i < len(segs)
                   and log_size + segs[i].size <= job.segment_bytes
                   and idx + segs[i].index_bytes <= job.max_index_size
                   and tidx + segs[i].time_index_bytes <= job.max_index_size
                   and (segs[i].size == 0
                        or nexts[id(segs[i])] - 1 - group[0].base_offset <= 0x7FFFFFFF)):
                group.append(segs[i])
                log_size += segs[i].size
                idx += segs[i].index_bytes
                tidx += segs[i].time_index_bytes
                i += 1
            groups.append(group)
        return groups

    def _clean_group(self, job: CleanJob, group: list[_SegSnap], omap: OffsetMap,
                     txn: _TxnMetadata, stats: CleanStats) -> CleanedGroup:
        base = group[0].base_offset
        writer = _CleanedWriter(job.dir, base, job.index_interval_bytes, job.max_index_size)
        retained_before = len(txn.retained_aborted)
        try:
            for snap in group:
                for h, batch in _iter_file_batches(snap.fd, snap.size, self.abort):
                    stats.bytes_read += len(batch)
                    out = self._filter_batch(job, h, batch, omap, txn, stats)
                    if out is not None:
                        data, max_ts = out
                        writer.append(data, h.last_offset, max_ts)
                        stats.bytes_written += len(data)
            for t in txn.retained_aborted[retained_before:]:
                writer.txn_entries.append(_TXN_ENTRY.pack(0, t.producer_id, t.first_offset,
                                                          t.last_offset, t.last_stable_offset))
            files = writer.finish(max(s.mtime for s in group))
        except BaseException:
            writer.abandon()
            raise
        return CleanedGroup(base, [s.segment for s in group], files)

    def _filter_batch(self, job: CleanJob, h: BatchHeader, batch: memoryview, omap: OffsetMap,
                      txn: _TxnMetadata, stats: CleanStats) -> tuple[bytes, int] | None:
        now = job.now_ms
        is_control = bool(h.attributes & ATTR_CONTROL)
        horizon = _delete_horizon(h)
        if is_control:
            can_discard = txn.on_control_batch(h, _control_type(h, batch))
            discard_records = can_discard and horizon is not None and horizon <= now
        else:
            can_discard = txn.on_data_batch(h)
            discard_records = can_discard
        last_of_producer = False
        if h.producer_id >= 0 and h.producer_id in job.producers:
            last_data, epoch = job.producers[h.producer_id]
            if last_data is not None:
                last_of_producer = h.last_offset == last_data
            else:
                last_of_producer = is_control and h.producer_epoch == epoch
        if last_of_producer:
            retention = "retain_empty"
        elif discard_records:
            return None  # DELETE
        else:
            retention = "delete_empty"
        marker_for_empty_txn = can_discard and is_control
        records = _raw_records(h, batch) if h.records_count > 0 else []
        stats.messages_read += len(records)
        kept: list[_RawRecord] = []
        tombstones = False
        for r in records:
            if discard_records:
                keep = False
            elif is_control:
                keep = True
            elif r.offset > omap.latest_offset:
                keep = True
            elif r.key is None:
                keep = False
            else:
                latest = r.offset >= omap.get(r.key)
                keep = latest and (r.value is not None or horizon is None or now < horizon)
            if keep:
                kept.append(r)
                if r.value is None:
                    tombstones = True
        stats.messages_written += len(kept)
        if kept:
            need_horizon = (tombstones or marker_for_empty_txn) and horizon is None
            if len(kept) == len(records) and not need_horizon:
                return bytes(batch), h.max_timestamp
            new_horizon = now + job.delete_retention_ms if need_horizon else horizon
            data = _build_batch(h, kept, new_horizon)
            return data, read_header(data).max_timestamp
        if retention == "retain_empty":
            return _empty_batch(h), h.max_timestamp
        return None


# ------------------------------------------------------------------ install (event loop)


def discard_result(result: CleanResult) -> None:
    for g in result.groups:
        for p in g.files:
            _unlink(p)
    result.groups = []


STEPS = ("to_swap", "old_deleted", "swap_renamed")


def replace_segments(log, group: CleanedGroup, fail_after: str | None = None) -> bool:
    """Swap a cleaned group in for its old segments (event loop; no await inside).

    False (and the .cleaned files removed) when the old segments are no longer
    a contiguous run of the log's inactive segments.
    """
    segs = log.segments
    try:
        i = next(k for k, s in enumerate(segs) if s is group.old[0])
    except StopIteration:
        i = -1
    n = len(group.old)
    if (i < 0 or i + n >= len(segs) or any(segs[i + k] is not group.old[k] for k in range(n))
            or getattr(log, "_closed", False)):
        for p in group.files:
            _unlink(p)
        return False
    base = group.base_offset
    # 1. .cleaned -> .swap, the .log first (a half-renamed set rolls back at load).
    swaps = []
    for p in group.files:
        dst = p[:-len(CLEANED_SUFFIX)] + SWAP_SUFFIX
        os.replace(p, dst)
        swaps.append(dst)
        if fail_after == "first_swap_file":
            raise InjectedCrash(fail_after)
    if fail_after == "to_swap":
        raise InjectedCrash(fail_after)
    # 2. the old segments -> .deleted (closed and unlinked after file.delete.delay.ms)
    del segs[i:i + n]
    del log._bases[i:i + n]
    for k, old in enumerate(group.old):
        old.rename_for_delete()
        if fail_after == "first_old_deleted" and k == 0:
            raise InjectedCrash(fail_after)
    log._pending_deletes.extend((log.clock.time_ms() + log.config.file_delete_delay_ms, s)
                                for s in group.old)
    # Kafka's replaceSegments -> deleteProducerSnapshots: the snapshots of the segments
    # merged away (every old one but the group's base) go with them.
    for old in group.old[1:]:
        log.producer_state.delete_snapshot(old.base_offset)
    if fail_after == "old_deleted":
        raise InjectedCrash(fail_after)
    # 3. .swap -> final names; open it as an inactive segment.
    for p in swaps:
        os.replace(p, p[:-len(SWAP_SUFFIX)])
    if fail_after == "swap_renamed":
        raise InjectedCrash(fail_after)
    new = log._new_segment(base, writable=False)
    segs.insert(i, new)
    log._bases.insert(i, base)
    return True


def install_result(log_manager, result: CleanResult) -> bool:
    """Install every group of a result; True when all were installed."""
    job = result.job
    log = job.log
    if log_manager is not None and log_manager.get_log(*job.key) is not log:
        discard_result(result)
        return False
    ok = True
    for group in result.groups:
        if not ok:
            for p in group.files:
                _unlink(p)
            continue
        ok = replace_segments(log, group)
    result.groups = []
    return ok


# ------------------------------------------------------------------ the manager


class LogCleaner:
    """Chooses logs, runs ``Cleaner`` in executor threads, installs results on the loop."""

    def __init__(self, log_manager, settings: CleanerSettings | None = None,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.log_manager = log_manager
        self.settings = settings or CleanerSettings()
        self.clock = clock
        self.checkpoints: dict[str, dict[TopicPartition, int]] = {}
        self.in_progress: set[TopicPartition] = set()
        self.abort = threading.Event()
        self.cleaner = Cleaner(self.abort)
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._tasks: list[asyncio.Task] = []
        self._futures: set[asyncio.Future] = set()
        self.cleans = 0
        self.last_stats: CleanStats | None = None
        for d in log_manager.live_log_dirs:   # an offline dir is neither read nor written
            path = os.path.join(d, CLEANER_OFFSET_CHECKPOINT)
            try:
                self.checkpoints[d] = read_offset_checkpoint(path)
            except (CheckpointError, OSError, UnicodeDecodeError) as e:
                _log.warning("bad cleaner checkpoint, resetting", path=path, error=str(e))
                self.checkpoints[d] = {}

    # -- selection (event loop)
    def checkpointed(self, key) -> int | None:
        d = self.log_manager.log_dir_of(*key)
        return self.checkpoints.get(d, {}).get(key) if d else None

    def grab_filthiest(self, now_ms: int | None = None) -> LogToClean | None:
        now = self.clock.time_ms() if now_ms is None else now_ms
        candidates = []
        for key, log in list(self.log_manager.logs.items()):
            if key in self.in_progress or log.offline or not is_compacted(log):
                continue
            dirty, uncleanable, force = cleanable_offsets(log, self.checkpointed(key), now)
            if force:
                self._update_checkpoint(key, dirty)
            delay = max_compaction_delay(log, dirty, now)
            ltc = LogToClean(key, log, dirty, uncleanable, delay > 0)
            if ltc.total_bytes > 0:
                candidates.append(ltc)
        ratio = lambda c: float(_topic_value(c.log, "min.cleanable.dirty.ratio", 0.5))  # noqa
        cleanable = [c for c in candidates
                     if (c.needs_compaction_now and c.cleanable_bytes > 0)
                     or c.cleanable_ratio > ratio(c)]
        if not cleanable:
            return None
        return max(cleanable, key=lambda c: c.cleanable_ratio)

    def _update_checkpoint(self, key, offset: int) -> None:
        d = self.log_manager.log_dir_of(*key)
        if d is None:
            return
        entries = {k: v for k, v in self.checkpoints.get(d, {}).items()
                   if self.log_manager.log_dir_of(*k) == d}
        entries[key] = offset
        self.checkpoints[d] = entries

    def write_checkpoints(self) -> None:
        for d, entries in list(self.checkpoints.items()):
            if os.path.isdir(d):
                write_offset_checkpoint(os.path.join(d, CLEANER_OFFSET_CHECKPOINT), dict(entries))

    # -- one pass, synchronously (tests, tools)
    def clean_once(self, now_ms: int | None = None) -> CleanResult | None:
        ltc = self.grab_filthiest(now_ms)
        if ltc is None:
            return None
        job = prepare_job(ltc.key, ltc.log, ltc.first_dirty, ltc.first_uncleanable,
                          self.clock.time_ms() if now_ms is None else now_ms, self.settings)
        result = self.cleaner.clean(job)
        self._finish(result)
        self.write_checkpoints()
        return result

    def _finish(self, result: CleanResult) -> bool:
        ok = install_result(self.log_manager, result)
        if ok:
            self._update_checkpoint(result.job.key, result.end_offset)
            self.cleans += 1
            self.last_stats = result.stats
        return ok

    # -- background (event loop + executor)
    def start(self) -> None:
        if not self.settings.enable:
            return
        self._executor = concurrent.futures.ThreadPoolExecutor(
            self.settings.threads, thread_name_prefix="kafka-log-cleaner-thread")
        for _ in range(self.settings.threads):
            self._tasks.append(asyncio.ensure_future(self._run()))

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while not self.abort.is_set():
            cleaned = False
            try:
                cleaned = await self._clean_one(loop)
            except asyncio.CancelledError:
                raise
            except CleanerAborted:
                return
            except Exception:
                _log.exception("log cleaning failed")
            if not cleaned:
                await asyncio.sleep(self.settings.backoff_ms / 1000.0)

    async def _clean_one(self, loop) -> bool:
        ltc = self.grab_filthiest()
        if ltc is None:
            return False
        key = ltc.key
        self.in_progress.add(key)
        try:
            job = prepare_job(key, ltc.log, ltc.first_dirty, ltc.first_uncleanable,
                              self.clock.time_ms(), self.settings)
            fut = loop.run_in_executor(self._executor, self.cleaner.clean, job)
            self._futures.add(fut)
            try:
                result = await asyncio.shield(fut)
            finally:
                self._futures.discard(fut)
            if self.abort.is_set():
                discard_result(result)
                return False
            ok = self._finish(result)
            await loop.run_in_executor(self._executor, self.write_checkpoints)
            _log.info("cleaned log", topic=key[0], partition=key[1], installed=ok,
                      first_dirty=ltc.first_dirty, end_offset=result.end_offset,
                      read=result.stats.messages_read, kept=result.stats.messages_written)
            return ok and result.end_offset > ltc.first_dirty
        finally:
            self.in_progress.discard(key)

    async def stop(self) -> None:
        """Stop the threads (a running job is abandoned; its .cleaned files removed)."""
        self.abort.set()
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            try:
                await t
            except (asyncio.CancelledError, Exception):
                pass
        for fut in list(self._futures):
            try:
                result = await fut
                discard_result(result)
            except Exception:
                pass
        self._tasks = []
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        try:
            self.write_checkpoints()
        except OSError:
            pass


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


__all__ = ["LogCleaner", "Cleaner", "CleanerSettings", "CleanJob", "CleanResult",
           "LogToClean", "cleanable_offsets", "max_compaction_delay", "prepare_job",
           "replace_segments", "install_result", "discard_result", "InjectedCrash", "STEPS"]
