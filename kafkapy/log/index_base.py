"""Shared machinery of the mmap'ed, preallocated, fixed-entry index files.

A writable index file is preallocated to ``max_index_size`` rounded down to a
multiple of the entry size, zero-filled, and mmap'ed; entries are written in
place.  No index holds a file descriptor: the mapping is made without one
(``FileMapping``) and the file is resized by path, so a segment costs the broker
one descriptor, its ``.log``, as in Kafka.  The in-memory entry count is authoritative.  ``trim()`` shrinks the
file to exactly ``entries * entry_size`` bytes (roll / close), so a cleanly
closed index's length gives its entry count.  Opening an untrimmed file (after
a crash) finds the valid prefix by binary search for the first unused (all
zero) slot: valid entries are never all zero past slot 0 (see subclasses).
Indexes hold no checksum; a corrupt one is deleted and rebuilt from the .log.
"""
from __future__ import annotations

import os

from kafkapy.log.file_mapping import FileMapping


class CorruptIndexError(Exception):
    """The index file fails its sanity check; rebuild it from the log."""


class IndexFileBase:
    """Base class: a mapped index file; see the module docstring."""

    ENTRY_SIZE = 8

    def __init__(self, path: str, base_offset: int, max_index_size: int,
                 writable: bool = True) -> None:
        self.path = path
        self.base_offset = base_offset
        self._max_size = self._round(max_index_size)
        self._mapping: FileMapping | None = None
        self._mm: memoryview | None = None
        self._file_len = 0
        self._closed = False
        exists = os.path.exists(path)
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o644))
        length = os.path.getsize(path)
        if length % self.ENTRY_SIZE:
            self._closed = True
            raise CorruptIndexError(
                f"index file {path} has length {length}, not a multiple of {self.ENTRY_SIZE}")
        self._file_len = length
        self._map()
        self.entries = self._find_valid_entries(length // self.ENTRY_SIZE) if exists else 0
        if writable:
            self.resize(self._max_size)
        else:
            self.trim()

    # -------------------------------------------------------------- file ops

    def _round(self, n: int) -> int:
        return max(0, n - n % self.ENTRY_SIZE)

    def _map(self) -> None:
        self._unmap(flush=False)
        if self._file_len > 0:
            self._mapping = FileMapping(self.path, self._file_len)
            self._mm = self._mapping.view

    def _unmap(self, flush: bool) -> None:
        if self._mapping is not None:
            if flush:
                self._mapping.flush()
            self._mm = None
            self._mapping.close()
            self._mapping = None

    def resize(self, new_size: int) -> None:
        """Set the file length (rounded down to whole entries, never below the data)."""
        new_len = max(self._round(new_size), self.entries * self.ENTRY_SIZE)
        if new_len == self._file_len:
            return
        if self._closed:
            raise ValueError(f"index {self.path} is closed")
        self._unmap(flush=True)
        os.truncate(self.path, new_len)
        self._file_len = new_len
        self._map()

    def trim(self) -> None:
        """Shrink the file to its valid entries (segment becomes inactive / close)."""
        self.resize(self.entries * self.ENTRY_SIZE)

    def make_read_only(self) -> None:
        """Trim: the segment became inactive, no entry will be added."""
        self.trim()

    @property
    def max_entries(self) -> int:
        return self._file_len // self.ENTRY_SIZE

    @property
    def is_full(self) -> bool:
        return self.entries >= self.max_entries

    @property
    def size_bytes(self) -> int:
        return self.entries * self.ENTRY_SIZE

    def flush(self) -> None:
        if self._mapping is not None:
            self._mapping.flush()

    def close(self) -> None:
        """Trim, flush and close."""
        if self._closed:
            return
        self.trim()
        self._unmap(flush=True)
        self._closed = True

    def release(self) -> None:
        """Close the mapping without trimming or flushing."""
        self._unmap(flush=False)
        self._closed = True

    def delete(self) -> None:
        self.release()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def rename(self, new_path: str) -> None:
        os.rename(self.path, new_path)
        self.path = new_path

    def reset(self) -> None:
        """Drop all entries (keeps the preallocated size)."""
        self._truncate_entries(0)

    def _truncate_entries(self, n: int) -> None:
        if self._mm is not None and n < self.entries:
            start, end = n * self.ENTRY_SIZE, self.entries * self.ENTRY_SIZE
            self._mm[start:end] = bytes(end - start)
        self.entries = n
        self._after_truncate()

    def _after_truncate(self) -> None:
        pass

    # -------------------------------------------------------------- subclass API

    def _entry_is_unused(self, i: int) -> bool:
        mm = self._mm
        start = i * self.ENTRY_SIZE
        return mm[start:start + self.ENTRY_SIZE] == bytes(self.ENTRY_SIZE)

    def _find_valid_entries(self, slots: int) -> int:
        """Number of valid entries: the first unused slot, searched from slot 1."""
        if slots == 0:
            return 0
        if self._entry_is_unused(0):
            # Slot 0 all-zero: either an empty preallocated file or a real (0, 0)
            # entry; (0, 0) is never written for the offset index, and for the
            # time index it is only possible with timestamp 0.  Treat as empty
            # when slot 1 is unused too.
            if slots == 1 or self._entry_is_unused(1):
                return 0
        lo, hi = 1, slots  # first unused slot in [lo, hi]
        while lo < hi:
            mid = (lo + hi) // 2
            if self._entry_is_unused(mid):
                hi = mid
            else:
                lo = mid + 1
        return lo
