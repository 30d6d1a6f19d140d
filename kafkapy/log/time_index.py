"""The time index (``<base offset>.timeindex``) of one segment.

On disk: back-to-back 12-byte entries, big-endian ``int64 timestamp`` (ms)
then ``int32 relativeOffset``.  Opened lazily (``index_base``); preallocated at
its first append to segment.index.bytes rounded down to a multiple of 12,
mmap'ed, trimmed on roll/close (0 bytes when empty).

Invariants: timestamps strictly increase and offsets never decrease; an entry
(T, O) means T is the largest timestamp seen up to and including offset O, so
every record with timestamp > T is at an offset > O.  A new entry is only
added when its timestamp exceeds the last one.  The last entry is kept in
memory.  An all-zero slot marks unused preallocated space.
"""
from __future__ import annotations

import os
import struct

from kafkapy.log.index_base import CorruptIndexError, IndexFileBase

_ENTRY = struct.Struct(">qi")
NO_TIMESTAMP = -1


class TimeIndex(IndexFileBase):
    """Sparse timestamp -> offset map, binary-searched."""

    ENTRY_SIZE = 12

    def __init__(self, path: str, base_offset: int, max_index_size: int = 10 * 1024 * 1024,
                 writable: bool = True) -> None:
        super().__init__(path, base_offset, max_index_size, writable)
        self._last = (NO_TIMESTAMP, base_offset)

    def _after_load(self) -> None:
        n = self._entries
        self._last = (NO_TIMESTAMP, self.base_offset) if not n else self.entry(n - 1)

    def entry(self, i: int) -> tuple[int, int]:
        ts, rel = _ENTRY.unpack_from(self._mm, i * 12)
        return ts, self.base_offset + rel

    @property
    def last_entry(self) -> tuple[int, int]:
        """(timestamp, offset) of the last entry; (-1, base_offset) when empty."""
        if self._entries is None:
            self._load()
        return self._last

    @property
    def is_full(self) -> bool:
        """Full one slot early: the last slot is kept for the roll/close entry."""
        return self.entries >= self.max_entries - 1

    def sanity_check(self) -> None:
        if self.entries == 0:
            return
        first_ts, first_off = self.entry(0)
        last_ts, last_off = self._last
        if last_off < self.base_offset:
            raise CorruptIndexError(
                f"corrupt time index {self.path}: last offset {last_off} below base "
                f"offset {self.base_offset}")
        if last_ts < first_ts:
            raise CorruptIndexError(
                f"corrupt time index {self.path}: last timestamp {last_ts} below first "
                f"{first_ts}")

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Add (timestamp, offset) if timestamp is above the last entry's.

        ``skip_full_check`` lets the final entry at roll/close use the slot
        that the roll check keeps in reserve (Kafka does the same).
        """
        last_ts, last_off = self.last_entry
        if self.entries and offset < last_off:
            raise ValueError(f"time index offset {offset} below last {last_off} in {self.path}")
        if timestamp <= last_ts:
            return
        n = self.entries
        if n >= self.max_entries:
            if skip_full_check:
                self.resize(max(self._file_len, n * 12) + self.ENTRY_SIZE)
            else:
                raise ValueError(f"time index {self.path} is full")
        if (n + 1) * 12 > self._file_len:
            self._ensure_room(n + 1, exact=skip_full_check)
        _ENTRY.pack_into(self._mm, n * 12, timestamp, offset - self.base_offset)
        self.entries += 1
        self._last = (timestamp, offset)

    def close_with_final_entry(self, timestamp: int, offset: int, sync: bool = True) -> None:
        """``maybe_append(..., skip_full_check=True)`` then ``close``.  An index that is
        not mapped (a segment whose only entry is this one, the common case for a small
        partition) gets the entry with one pwrite: no mapping, growth and trim."""
        if self._closed:
            return
        if self._mapping is not None or timestamp <= self.last_entry[0]:
            self.maybe_append(timestamp, offset, skip_full_check=True)
            self.close(sync)
            return
        n = self.entries
        if offset < self._last[1] and n:
            raise ValueError(f"time index offset {offset} below last {self._last[1]} in {self.path}")
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            os.pwrite(fd, _ENTRY.pack(timestamp, offset - self.base_offset), n * 12)
            os.ftruncate(fd, (n + 1) * 12)   # a file longer than its entries is trimmed
            if sync:
                os.fsync(fd)   # as close(sync=True) msyncs a mapping
        finally:
            os.close(fd)
        self._file_len = (n + 1) * 12
        self._entries = n + 1
        self._last = (timestamp, offset)
        self._closed = True

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """Largest entry with timestamp <= target: (timestamp, offset).

        Returns (-1, base_offset) when no entry qualifies.
        """
        hi = self.entries - 1   # loads the file first (lazy)
        mm = self._mm
        lo = 0
        found = -1
        unpack = _ENTRY.unpack_from
        while lo <= hi:
            mid = (lo + hi) >> 1
            if unpack(mm, mid * 12)[0] <= timestamp:
                found = mid
                lo = mid + 1
            else:
                hi = mid - 1
        if found < 0:
            return NO_TIMESTAMP, self.base_offset
        return self.entry(found)

    def truncate_to(self, offset: int) -> None:
        """Remove every entry with offset >= ``offset`` (offsets are non-decreasing)."""
        n = self.entries
        mm = self._mm
        lo, hi = 0, n  # first entry with offset >= target
        rel = offset - self.base_offset
        while lo < hi:
            mid = (lo + hi) >> 1
            if _ENTRY.unpack_from(mm, mid * 12)[1] < rel:
                lo = mid + 1
            else:
                hi = mid
        self._truncate_entries(lo)

    def entries_list(self) -> list[tuple[int, int]]:
        return [self.entry(i) for i in range(self.entries)]


__all__ = ["TimeIndex", "CorruptIndexError"]
