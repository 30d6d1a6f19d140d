"""One log segment: ``<base>.log`` plus its ``.index`` and ``.timeindex``.

On disk: the ``.log`` file holds v2 record batches back to back, byte for byte
as they travel in Fetch responses (12-byte offset+length framing included);
the file name is the base offset as 20 zero-padded decimal digits.  See
``offset_index.py`` / ``time_index.py`` for the index formats.

Invariants:
- the .log holds whole batches only (a torn tail is removed by ``recover``);
  offsets ascend; every offset in the segment is >= base_offset and its
  relative offset fits an int32.
- the file is written with ``os.write`` on an O_APPEND descriptor; ``size``
  is tracked in Python and is the file length (appends never read the file).
- an offset-index entry and a time-index entry are added when more than
  index.interval.bytes were appended since the last entry; the entry pairs the
  largest offset of the append with the position where the append began.
- ``max_timestamp_so_far`` / ``offset_of_max_timestamp`` track the largest
  batch maxTimestamp and the last offset of that batch (read from the time
  index on first use, as Kafka's maxTimestampAndOffsetSoFar); on roll/close it
  is written as the final time-index entry.
- the indexes are lazy (``index_base``): a new segment creates only its .log; an
  index file appears (preallocated) with its first entry, or empty at roll/close,
  so a cleanly closed segment has Kafka's three files.  A corrupt index found
  when first loaded is rebuilt from the batch headers (``_rebuild_index``).
- ``recover`` never reads the old indexes: it rewrites them from slot 0 over the
  same files (zeroing stale entries past the new ones), and an empty .log costs
  no scan and no mapping.
"""
from __future__ import annotations

import os
from typing import Callable, Iterator, NamedTuple

import structlog

from kafkapy.clock import SYSTEM_CLOCK, Clock
from kafkapy.log.offset_index import OffsetIndex
from kafkapy.log.time_index import TimeIndex
from kafkapy.native import find_timestamp
from kafkapy.records.batch import (CRC_START, HEADER_SIZE, LOG_OVERHEAD, MIN_BATCH_LENGTH,
                                   BatchHeader, crc32c, read_header)
from kafkapy.records.record import decode_records

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
DELETED_SUFFIX = ".deleted"

_log = structlog.get_logger("kafkapy.log.segment")

_SCAN_CHUNK = 16 * 1024
_RECOVER_CHUNK = 4 * 1024 * 1024


def _first_header(records, position: int) -> BatchHeader | None:
    """The header of the first batch of ``records``, written at ``position`` of the file;
    None when it is not a whole batch (as ``LogSegment.iter_batches`` would stop there)."""
    if len(records) < HEADER_SIZE:
        return None
    h = read_header(records)
    if h.batch_length < MIN_BATCH_LENGTH or LOG_OVERHEAD + h.batch_length > len(records):
        return None
    h.position = position
    return h


def filename_prefix(offset: int) -> str:
    """Kafka's 20-digit zero-padded segment/snapshot file name for an offset."""
    return f"{offset:020d}"


def segment_path(dir_path: str, base_offset: int, suffix: str) -> str:
    return os.path.join(dir_path, filename_prefix(base_offset) + suffix)


class FetchSlice(NamedTuple):
    """A byte range of a .log file holding whole batches, for os.sendfile.

    ``fd`` stays valid while the segment is open; ``first_offset`` is the base
    offset of the first batch in the range.
    """
    fd: int
    position: int
    size: int
    first_offset: int

    def read_bytes(self) -> bytes:
        """os.pread the range (for tests and non-sendfile transports)."""
        out = bytearray()
        pos, end = self.position, self.position + self.size
        while pos < end:
            chunk = os.pread(self.fd, end - pos, pos)
            if not chunk:
                raise EOFError(f"short read at {pos} (wanted up to {end})")
            out += chunk
            pos += len(chunk)
        return bytes(out)


class LogSegment:
    """A segment of a partition log; only the last (active) segment is appended to."""

    def __init__(self, dir_path: str, base_offset: int, *, index_interval_bytes: int = 4096,
                 max_index_size: int = 10 * 1024 * 1024, clock: Clock = SYSTEM_CLOCK,
                 writable: bool = True) -> None:
        self.dir = dir_path
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.max_index_size = max_index_size
        self._clock = clock
        self.log_path = segment_path(dir_path, base_offset, LOG_SUFFIX)
        self._fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        self.size = os.fstat(self._fd).st_size
        self.created_ms = clock.time_ms()
        self._first_batch_ts: int | None = None  # Kafka's rollingBasedTimestamp
        self._bytes_since_last_index = 0
        self.needs_recovery = False
        self.writable = writable
        self.roll_jitter_ms = 0  # set by the Log from segment.jitter.ms
        # Lazy (Kafka's LazyIndex): nothing is opened, created or mapped here.
        self.offset_index = OffsetIndex(segment_path(dir_path, base_offset, INDEX_SUFFIX),
                                        base_offset, max_index_size, writable)
        self.time_index = TimeIndex(segment_path(dir_path, base_offset, TIME_INDEX_SUFFIX),
                                    base_offset, max_index_size, writable)
        for idx in (self.offset_index, self.time_index):
            idx.on_load_check = self._check_index
            idx.on_corrupt = self._rebuild_index
        # Kafka's maxTimestampAndOffsetSoFar: read from the time index on first use.
        self._max_ts: int | None = None
        self._offset_of_max_ts = base_offset
        self._next_offset: int | None = base_offset if self.size == 0 else None
        # The header of the first batch of the last append, where it lies in the file:
        # readers at the log end (followers, tailing consumers) ask for that batch next,
        # and find it here instead of by an index lookup and a scan of the file.
        self._last_appended: BatchHeader | None = None

    def _check_index(self, idx) -> None:
        if idx is self.offset_index:
            idx.sanity_check(self.size)
        else:
            idx.sanity_check()

    def _rebuild_index(self, idx) -> None:
        """A corrupt index found when first loaded: rebuild it from the batch headers
        (the .log itself is not validated here; that is ``recover``'s job)."""
        _log.warning("corrupt index, rebuilding it from the log", index=idx.path,
                     log=self.log_path)
        is_offsets = idx is self.offset_index
        idx.make_writable(self._rebuild_capacity(idx))
        last_index_pos = 0
        max_ts, off_of_max = -1, self.base_offset
        for h in self.iter_batches():
            last = h.base_offset + h.last_offset_delta
            if h.max_timestamp > max_ts:
                max_ts, off_of_max = h.max_timestamp, last
            if h.position - last_index_pos > self.index_interval_bytes:
                if is_offsets:
                    if not idx.is_full:
                        idx.append(last, h.position)
                elif not idx.is_full:
                    idx.maybe_append(max_ts, off_of_max)
                last_index_pos = h.position
        if not is_offsets:
            idx.maybe_append(max_ts, off_of_max, skip_full_check=True)
        if not self.writable:
            idx.make_read_only()

    def _rebuild_capacity(self, idx, file_size: int | None = None) -> int:
        """Index bytes while rebuilding: the maximum for the active segment, else sized
        once for what the .log can need (trimmed at the end), not the maximum."""
        if self.writable:
            return self.max_index_size
        size = self.size if file_size is None else file_size
        return min(self.max_index_size,
                   (size // max(self.index_interval_bytes, 1) + 2) * idx.ENTRY_SIZE)

    def _load_max_ts(self) -> None:
        # Kafka's readMaxTimestampAndOffsetSoFar: the time index's last entry, read (so
        # the index opened) only when first needed.
        if self._max_ts is None:
            self._max_ts, self._offset_of_max_ts = self.time_index.last_entry

    @property
    def max_timestamp_so_far(self) -> int:
        self._load_max_ts()
        return self._max_ts

    @max_timestamp_so_far.setter
    def max_timestamp_so_far(self, value: int) -> None:
        self._load_max_ts()
        self._max_ts = value

    @property
    def offset_of_max_timestamp(self) -> int:
        self._load_max_ts()
        return self._offset_of_max_ts

    @offset_of_max_timestamp.setter
    def offset_of_max_timestamp(self, value: int) -> None:
        self._load_max_ts()
        self._offset_of_max_ts = value

    # ---------------------------------------------------------------- properties

    @property
    def fd(self) -> int:
        return self._fd

    @property
    def next_offset(self) -> int:
        """Offset after the last batch (base_offset when empty); scans once if unknown."""
        if self._next_offset is None:
            self._next_offset = self._read_next_offset()
        return self._next_offset

    def _read_next_offset(self) -> int:
        idx_off, idx_pos = self.offset_index.lookup(2**63 - 1)
        nxt = self.base_offset
        for h in self.iter_batches(idx_pos):
            nxt = h.base_offset + h.last_offset_delta + 1
        return nxt

    @property
    def first_batch_timestamp(self) -> int | None:
        if self._first_batch_ts is None and self.size >= HEADER_SIZE:
            self._first_batch_ts = read_header(os.pread(self._fd, HEADER_SIZE, 0)).max_timestamp
        return self._first_batch_ts

    def time_waited_for_roll(self, now_ms: int, max_timestamp_in_messages: int) -> int:
        """Kafka's rule: incoming max timestamp minus the first batch's timestamp,
        or wall time since creation when the segment has no timestamp yet."""
        ts = self.first_batch_timestamp
        if ts is not None and ts >= 0:
            return max_timestamp_in_messages - ts
        return now_ms - self.created_ms

    def can_convert_to_relative_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= 0x7FFFFFFF

    def should_roll(self, *, messages_size: int, max_offset: int, max_timestamp: int,
                    now_ms: int, segment_bytes: int, segment_ms: int, jitter_ms: int) -> bool:
        """Kafka's LogSegment.shouldRoll (an empty segment is never rolled)."""
        if self.size == 0:
            return not self.can_convert_to_relative_offset(max_offset)
        return (self.time_waited_for_roll(now_ms, max_timestamp) > segment_ms - jitter_ms
                or self.size > segment_bytes - messages_size
                or self.offset_index.is_full or self.time_index.is_full
                or not self.can_convert_to_relative_offset(max_offset))

    # ---------------------------------------------------------------- append

    def append(self, largest_offset: int, largest_timestamp: int, offset_of_max_ts: int,
               records) -> None:
        """Append whole batches; never reads the file."""
        n = len(records)
        if n == 0:
            return
        if not self.can_convert_to_relative_offset(largest_offset):
            raise ValueError(f"offset {largest_offset} does not fit segment {self.base_offset}")
        pos = self.size
        if pos == 0:
            self._first_batch_ts = largest_timestamp
            self.offset_index.allocate()
            self.time_index.allocate()
        mv = records if isinstance(records, memoryview) else memoryview(records)
        written = 0
        while written < n:
            written += os.write(self._fd, mv[written:])
        self.size = pos + n
        self._next_offset = largest_offset + 1
        self._last_appended = _first_header(mv, pos)
        if largest_timestamp > self.max_timestamp_so_far:
            self.max_timestamp_so_far = largest_timestamp
            self.offset_of_max_timestamp = offset_of_max_ts
        if self._bytes_since_last_index > self.index_interval_bytes:
            self.offset_index.append(largest_offset, pos)
            self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp)
            self._bytes_since_last_index = 0
        self._bytes_since_last_index += n

    # ---------------------------------------------------------------- scanning

    def iter_batches(self, start_position: int = 0, end_position: int | None = None,
                     chunk: int = _SCAN_CHUNK) -> Iterator[BatchHeader]:
        """Headers of the batches from ``start_position`` (os.pread, buffered).

        Stops at the end, or silently at a torn/implausible header.  The
        yielded headers carry their file position.
        """
        end = self.size if end_position is None else min(end_position, self.size)
        pos = start_position
        buf = b""
        buf_start = pos
        fd = self._fd
        last_size = 0
        while pos + HEADER_SIZE <= end:
            off = pos - buf_start
            if off + HEADER_SIZE > len(buf):
                # Small batches: read ahead a chunk; big ones: just the next header.
                want = chunk if last_size < chunk // 4 else HEADER_SIZE
                buf = os.pread(fd, min(want, end - pos), pos)
                buf_start, off = pos, 0
                if len(buf) < HEADER_SIZE:
                    return
            h = read_header(buf, off)
            if h.batch_length < MIN_BATCH_LENGTH or pos + LOG_OVERHEAD + h.batch_length > end:
                return
            h.position = pos
            yield h
            last_size = LOG_OVERHEAD + h.batch_length
            pos += last_size

    def find_offset_position(self, offset: int, start_position: int = 0) -> BatchHeader | None:
        """The first batch whose last offset >= ``offset`` (index lookup + short scan)."""
        last = self._last_appended
        if (last is not None and start_position <= last.position
                and last.base_offset <= offset <= last.base_offset + last.last_offset_delta):
            return last     # (the batches before it end below its base offset)
        _, idx_pos = self.offset_index.lookup(offset)
        for h in self.iter_batches(max(idx_pos, start_position)):
            if h.base_offset + h.last_offset_delta >= offset:
                return h
        return None

    def read(self, start_offset: int, max_size: int, max_position: int | None = None,
             min_one_message: bool = True, whole_batches: bool = True) -> FetchSlice | None:
        """From the batch holding ``start_offset``, up to ``max_size`` bytes.

        None when no batch at or after ``start_offset`` lies in this segment;
        a zero-size slice (at that batch's position) when the limit leaves no
        room (``max_position`` is exclusive, e.g. the high watermark's
        position).  With ``min_one_message`` the first batch is returned even
        if it alone exceeds ``max_size``.  ``whole_batches`` ends the slice at
        a batch boundary; without it the slice is Kafka's LogSegment.read, a
        byte count whose last batch may be cut short.
        """
        if max_position is None:
            max_position = self.size
        first = self.find_offset_position(start_offset)
        if first is None:
            return None
        start = first.position
        if start >= max_position:
            return FetchSlice(self._fd, start, 0, first.base_offset)
        if max_size <= 0 and not min_one_message:
            return FetchSlice(self._fd, start, 0, first.base_offset)
        limit = max(max_size, first.size) if min_one_message else max_size
        end_limit = min(max_position, start + limit)
        if not whole_batches:
            return FetchSlice(self._fd, start, end_limit - start, first.base_offset)
        if end_limit >= self.size:
            end = self.size
        elif start + first.size > end_limit:
            end = start
        else:
            _, idx_pos = self.offset_index.lookup_by_position(end_limit)
            scan_from = max(start, idx_pos)
            end = scan_from
            for h in self.iter_batches(scan_from, end_limit):
                end = h.position + h.size
        return FetchSlice(self._fd, start, end - start, first.base_offset)

    def find_batch_by_timestamp(self, timestamp: int, starting_offset: int = 0
                                ) -> BatchHeader | None:
        """The first batch with maxTimestamp >= ``timestamp`` and last offset >= start."""
        _, ts_offset = self.time_index.lookup(timestamp)
        _, pos = self.offset_index.lookup(max(ts_offset, starting_offset))
        for h in self.iter_batches(pos):
            if h.max_timestamp >= timestamp and h.base_offset + h.last_offset_delta >= starting_offset:
                return h
        return None

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int = 0
                                 ) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp >= target and
        offset >= ``starting_offset`` (ListOffsets).  Decodes only the batch(es)
        whose maxTimestamp qualifies, normally one, in one native pass each (a batch of
        millions of records costs milliseconds, not a Python object per record)."""
        _, ts_offset = self.time_index.lookup(timestamp)
        _, pos = self.offset_index.lookup(max(ts_offset, starting_offset))
        for h in self.iter_batches(pos):
            if h.max_timestamp < timestamp or h.base_offset + h.last_offset_delta < starting_offset:
                continue
            found = find_timestamp(self.read_batch_bytes(h), timestamp)
            if found is not None and found[0] < starting_offset:
                # The log starts inside this batch: the first qualifying record after it.
                found = self._find_from(h, timestamp, starting_offset)
            if found is not None:
                return found
        return None

    def _find_from(self, h: BatchHeader, timestamp: int, starting_offset: int):
        for r in decode_records(self.read_batch_bytes(h)):
            if r.timestamp >= timestamp and r.offset >= starting_offset:
                return r.offset, r.timestamp
        return None

    def read_batch_bytes(self, header: BatchHeader) -> bytes:
        return FetchSlice(self._fd, header.position, header.size, header.base_offset).read_bytes()

    # ---------------------------------------------------------------- recovery

    def recover(self, max_message_size: int | None = None,
                on_batch: Callable[[BatchHeader], None] | None = None) -> int:
        """Validate every batch from position 0 and rebuild both indexes.

        A batch is valid when its header is sane (magic 2, length >= 49, within
        the file, offsets ascending and within this segment) and its CRC-32C
        matches.  Everything from the first invalid batch on is truncated.
        ``max_message_size`` is deliberately not used to reject batches: the
        topic limit may have been lowered after valid data was written (Kafka's
        recovery does not apply it either).  Returns the bytes truncated.
        """
        del max_message_size
        # The old index content is never read (no search for its valid prefix): it is
        # rewritten from slot 0 over the same file; with an empty .log it is just cut
        # to 0 bytes (never mapped).  A missing index file is created and preallocated
        # by the first entry added (none for an empty or small .log).
        file_size = os.fstat(self._fd).st_size
        for idx in (self.offset_index, self.time_index):
            if file_size:
                idx.begin_rebuild()
            else:
                idx.discard()
            idx.make_writable(self._rebuild_capacity(idx, file_size))
        self._max_ts, self._offset_of_max_ts = -1, self.base_offset
        self._first_batch_ts = None
        if file_size == 0:   # nothing to validate, the indexes are empty
            self._after_recover(0, self.base_offset, 0)
            return 0
        valid = 0
        last_index_pos = 0
        next_offset = self.base_offset
        interval = self.index_interval_bytes
        fd = self._fd
        stop = False
        while not stop and file_size - valid >= HEADER_SIZE:
            remaining = file_size - valid
            need = LOG_OVERHEAD + int.from_bytes(os.pread(fd, 12, valid)[8:12], "big",
                                                 signed=True)
            if need < HEADER_SIZE or need > remaining:
                break  # implausible length or torn tail
            chunk = os.pread(fd, min(max(_RECOVER_CHUNK, need), remaining), valid)
            mv = memoryview(chunk)
            off = 0
            while len(chunk) - off >= HEADER_SIZE:
                h = read_header(mv, off)
                size = LOG_OVERHEAD + h.batch_length
                if h.batch_length < MIN_BATCH_LENGTH or h.magic != 2:
                    stop = True
                    break
                if off + size > len(chunk):
                    stop = valid + size > file_size  # torn tail, else read on
                    break
                if crc32c(mv[off + CRC_START:off + size]) != h.crc:
                    stop = True
                    break
                last = h.base_offset + h.last_offset_delta
                if (h.base_offset < next_offset or h.last_offset_delta < 0
                        or last - self.base_offset > 0x7FFFFFFF):
                    stop = True
                    break
                h.position = valid
                if h.max_timestamp > self.max_timestamp_so_far:
                    self.max_timestamp_so_far = h.max_timestamp
                    self.offset_of_max_timestamp = last
                if valid - last_index_pos > interval and not self.offset_index.is_full:
                    self.offset_index.append(last, valid)
                    if not self.time_index.is_full:
                        self.time_index.maybe_append(self.max_timestamp_so_far,
                                                     self.offset_of_max_timestamp)
                    last_index_pos = valid
                if valid == 0:
                    self._first_batch_ts = h.max_timestamp
                if on_batch is not None:
                    on_batch(h)
                next_offset = last + 1
                valid += size
                off += size
            if off == 0:
                stop = True
        truncated = file_size - valid
        if truncated > 0:
            os.ftruncate(fd, valid)
        self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp,
                                     skip_full_check=True)
        self._after_recover(valid, next_offset, valid - last_index_pos)
        return truncated

    def _after_recover(self, size: int, next_offset: int, since_index: int) -> None:
        self.offset_index.end_rebuild()
        self.time_index.end_rebuild()
        self.size = size
        self._next_offset = next_offset
        self._last_appended = None
        self._bytes_since_last_index = since_index
        if not self.writable:
            self.offset_index.make_read_only()
            self.time_index.make_read_only()
        self.needs_recovery = False

    # ---------------------------------------------------------------- truncation

    def truncate_to(self, offset: int) -> int:
        """Remove the batch holding ``offset`` and everything after; returns bytes removed."""
        h = self.find_offset_position(offset)
        if h is None:
            return 0
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        removed = self.size - h.position
        os.ftruncate(self._fd, h.position)
        self.size = h.position
        self._last_appended = None
        self._bytes_since_last_index = 0
        ts, off = self.time_index.last_entry
        self.max_timestamp_so_far, self.offset_of_max_timestamp = ts, off
        if self.size == 0:
            self.created_ms = self._clock.time_ms()
            self._first_batch_ts = None
            self._next_offset = self.base_offset
        else:
            self._next_offset = None
        return removed

    # ---------------------------------------------------------------- lifecycle

    def resize_indexes(self, max_index_size: int) -> None:
        """Make this the writable active segment (indexes preallocated at their next
        append, not now)."""
        self.writable = True
        self.max_index_size = max_index_size
        self.offset_index.make_writable(max_index_size)
        self.time_index.make_writable(max_index_size)

    def on_become_inactive(self) -> None:
        """Roll: write the final time-index entry and trim both indexes."""
        self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp,
                                     skip_full_check=True)
        self.offset_index.make_read_only()
        self.time_index.make_read_only()
        self.writable = False

    def flush(self) -> None:
        if self._fd >= 0:
            os.fsync(self._fd)
            self.offset_index.flush()
            self.time_index.flush()

    def close(self, sync: bool = True) -> None:
        """Final time-index entry, trim both indexes (creating missing ones empty, as
        Kafka leaves them) and close; ``sync=False`` leaves the msync of the indexes to
        the caller (one syncfs per log dir at shutdown)."""
        if self._fd < 0:
            return
        self.offset_index.close(sync)
        if self.size:
            self.time_index.close_with_final_entry(self.max_timestamp_so_far,
                                                   self.offset_of_max_timestamp, sync)
        else:
            self.time_index.close(sync)
        os.close(self._fd)
        self._fd = -1

    def release(self) -> None:
        """Close all descriptors without writing anything (before a dir rename)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        self.offset_index.release()
        self.time_index.release()

    @property
    def largest_timestamp(self) -> int:
        """Kafka's LogSegment.largestTimestamp: max timestamp, else the file mtime."""
        if self.max_timestamp_so_far >= 0:
            return self.max_timestamp_so_far
        try:
            return int(os.stat(self.log_path).st_mtime * 1000)
        except FileNotFoundError:
            return 0

    def rename_for_delete(self) -> None:
        """Add the ``.deleted`` suffix to every file; descriptors stay open so that
        in-flight reads (sendfile) finish; ``delete`` later removes the files."""
        if not self.log_path.endswith(DELETED_SUFFIX):
            os.rename(self.log_path, self.log_path + DELETED_SUFFIX)
            self.log_path += DELETED_SUFFIX
        for idx in (self.offset_index, self.time_index):
            if not idx.path.endswith(DELETED_SUFFIX) and os.path.exists(idx.path):
                idx.rename(idx.path + DELETED_SUFFIX)
        txn = segment_path(self.dir, self.base_offset, TXN_INDEX_SUFFIX)
        if os.path.exists(txn):
            os.rename(txn, txn + DELETED_SUFFIX)

    def delete(self) -> None:
        """Close and unlink the segment's files."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        self.offset_index.delete()
        self.time_index.delete()
        # After rename_for_delete a new segment may own the original names:
        # only the files of this segment (log_path, txn index) are removed.
        txn = segment_path(self.dir, self.base_offset, TXN_INDEX_SUFFIX)
        if self.log_path.endswith(DELETED_SUFFIX):
            txn += DELETED_SUFFIX
        for p in (self.log_path, txn):
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self.size}, dir={self.dir!r})"
