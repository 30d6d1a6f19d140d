"""Shared machinery of the mmap'ed, fixed-entry index files, opened lazily.

Lazy, as Kafka 3.x's ``LazyIndex``: constructing an index touches no file.  The
file is read (stat + map) on the first use that needs its entries (lookup,
``entries``, ``last_offset``...), and created / preallocated by the segment's first
append (``allocate``: Kafka's first append touches both lazy indexes).  So a new,
empty segment costs one file (its ``.log``), and an index of a segment nobody reads
(an old segment after a restart) is never mapped.

A writable (active-segment) index is preallocated, at its first append, to
``max_index_size`` rounded down to a multiple of the entry size, zero-filled and
mmap'ed; entries are written in place.  No index holds a file descriptor: the
mapping is made without one (``FileMapping``) and the file is resized by path,
so a segment costs the broker one descriptor, its ``.log``, as in Kafka.  The
in-memory entry count is authoritative once loaded.  ``trim()`` shrinks the file
to exactly ``entries * entry_size`` bytes (roll / close), so a cleanly closed
index's length gives its entry count; ``close()`` of an index that has no file
creates it empty, so a cleanly stopped log dir holds the same files, with the
same sizes, as Kafka's (``.index`` / ``.timeindex`` of 0 bytes for an empty
segment).

A missing file means an empty index.  Loading an existing file: when its last slot
is in use the file is trimmed and its length gives the count (O(1)); otherwise
(untrimmed, after a crash) the valid prefix is found by binary search for the first
unused (all zero) slot: valid entries are never all zero past slot 0 (see
subclasses).  Segments recovered at load never read their old index
(``discard``), so this search only runs for an untrimmed index that is not
recovered.  Indexes hold no checksum; ``sanity_check`` runs at load, and a corrupt
one is deleted and rebuilt from the .log (``LogSegment``).
"""
from __future__ import annotations

import mmap
import os
from typing import Callable

from kafkapy.log.file_mapping import FileMapping


_PAGE = mmap.PAGESIZE


class CorruptIndexError(Exception):
    """The index file fails its sanity check; rebuild it from the log."""


class IndexFileBase:
    """Base class: a lazily mapped index file; see the module docstring."""

    ENTRY_SIZE = 8

    def __init__(self, path: str, base_offset: int, max_index_size: int,
                 writable: bool = True) -> None:
        self.path = path
        self.base_offset = base_offset
        self._max_size = self._round(max_index_size)
        self._writable = writable
        self._mapping: FileMapping | None = None
        self._mm: memoryview | None = None
        self._file_len = 0
        self._closed = False
        self._entries: int | None = None   # None: not loaded yet
        # Set by the segment: a check run on the loaded entries, and what rebuilds the
        # index from the .log when the file turns out corrupt (see ``_load``).
        self.on_load_check: Callable[[IndexFileBase], None] | None = None
        self.on_corrupt: Callable[[IndexFileBase], None] | None = None

    # -------------------------------------------------------------- lazy loading

    @property
    def is_loaded(self) -> bool:
        """True once the file was read (or the index was reset/discarded)."""
        return self._entries is not None

    @property
    def is_mapped(self) -> bool:
        return self._mapping is not None

    @property
    def entries(self) -> int:
        if self._entries is None:
            self._load()
        return self._entries  # type: ignore[return-value]

    @entries.setter
    def entries(self, n: int) -> None:
        self._entries = n

    def _load(self) -> None:
        if self._closed:
            raise ValueError(f"index {self.path} is closed")
        try:
            self._read_file()
            if self.on_load_check is not None:
                self.on_load_check(self)
        except CorruptIndexError:
            if self.on_corrupt is None:
                self._unmap(flush=False)
                self._entries = None
                raise
            # Kafka deletes a corrupt index and rebuilds it from the log.
            self._unmap(flush=False)
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
            self._file_len = 0
            self._entries = 0
            self._after_load()
            self.on_corrupt(self)

    def _read_file(self) -> None:
        try:
            length = os.stat(self.path).st_size
        except FileNotFoundError:
            self._file_len = 0
            self._entries = 0
            self._after_load()
            return
        if length % self.ENTRY_SIZE:
            raise CorruptIndexError(
                f"index file {self.path} has length {length}, not a multiple of "
                f"{self.ENTRY_SIZE}")
        self._file_len = length
        self._map()
        self._entries = self._find_valid_entries(length // self.ENTRY_SIZE)
        if not self._writable:
            self.trim()
        self._after_load()

    def _after_load(self) -> None:
        """Subclasses: cache what they keep about the last entry."""

    def discard(self) -> None:
        """Forget the entries without reading the file (its content is being rebuilt):
        an existing file is cut to 0 bytes, a missing one stays missing."""
        self._unmap(flush=False)
        if self._file_len or self._entries is None:
            try:
                os.truncate(self.path, 0)
            except FileNotFoundError:
                pass
        self._file_len = 0
        self._entries = 0
        self._after_load()

    def begin_rebuild(self) -> None:
        """Start rewriting the entries from slot 0 without reading the old ones: the
        file is mapped as it is, so its pages are reused (cutting it to 0 and growing it
        again would make the file system allocate every page anew on its first write,
        and ext4's online discard trims the freed blocks).  ``end_rebuild`` zeroes the
        stale entries left past the new ones."""
        self._unmap(flush=False)
        try:
            length = os.stat(self.path).st_size
        except FileNotFoundError:
            length = 0
        if length % self.ENTRY_SIZE:
            os.truncate(self.path, 0)
            length = 0
        self._file_len = length
        self._map()
        self._entries = 0
        self._after_load()

    def end_rebuild(self) -> None:
        """Zero the old entries past the rebuilt ones (a valid prefix, then zeros)."""
        if self._mm is None:
            return
        slots = self._file_len // self.ENTRY_SIZE
        i = self._entries or 0
        zero = bytes(self.ENTRY_SIZE)
        while i < slots and not self._entry_is_unused(i):
            self._mm[i * self.ENTRY_SIZE:(i + 1) * self.ENTRY_SIZE] = zero
            i += 1

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
        # The pages being cut off hold no entry; the ones kept stay in the page cache
        # (a shared mapping): no msync needed to resize.
        self._unmap(flush=False)
        if new_len > self._file_len:
            self._grow(new_len)
        else:
            os.truncate(self.path, new_len)
        self._file_len = new_len
        self._map()

    def _grow(self, new_len: int) -> None:
        """Extend the file, writing (pwrite) zeros up to the end of the page where the
        next entry goes: the first write through a shared mapping into a hole of a
        sparse file costs the file system a block allocation in the page fault (~2 ms on
        ext4, 50x a pwrite), which made the first index entry of every new partition
        slow; the rest stays sparse."""
        old = self._file_len
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fill_to = min(new_len, (old // _PAGE + 1) * _PAGE)
            if fill_to > old:
                os.pwrite(fd, bytes(fill_to - old), old)
            os.ftruncate(fd, new_len)
        finally:
            os.close(fd)

    def _ensure_room(self, needed_entries: int, exact: bool = False) -> None:
        """Grow the file so that ``needed_entries`` fit (first append: preallocate,
        unless ``exact``: the entry written at roll/close, trimmed right after)."""
        need = needed_entries * self.ENTRY_SIZE
        if need > self._file_len:
            self.resize(need if exact or not self._writable else max(need, self._max_size))

    def allocate(self) -> None:
        """Create and preallocate the file now, as Kafka's ``LazyIndex`` materializes both
        indexes of a segment at its first append: a running broker's active segment has
        its ``.index`` and ``.timeindex`` on disk once it holds data."""
        if self._writable:
            self._ensure_room(self.entries + 1)

    def trim(self) -> None:
        """Shrink the file to its valid entries (segment becomes inactive / close)."""
        if self._entries is None:
            return   # never loaded: the file is as it was found
        self.resize(self._entries * self.ENTRY_SIZE)

    def make_read_only(self) -> None:
        """Trim: the segment became inactive, no entry will be added.  The file is
        created empty if it has none (a missing index of a non-empty segment means
        recovery at the next load, for Kafka too)."""
        self._writable = False
        self._ensure_file()
        self.trim()

    def _ensure_file(self) -> None:
        if self._file_len == 0 and not os.path.exists(self.path):
            os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644))

    def make_writable(self, max_index_size: int) -> None:
        """This is the active segment's index again: preallocate at the next append."""
        self._writable = True
        self._max_size = self._round(max_index_size)

    @property
    def max_entries(self) -> int:
        cap = self._max_size if self._writable else self._file_len
        return max(cap, self._file_len) // self.ENTRY_SIZE

    @property
    def is_full(self) -> bool:
        return self.entries >= self.max_entries

    @property
    def size_bytes(self) -> int:
        return self.entries * self.ENTRY_SIZE

    def flush(self) -> None:
        if self._mapping is not None:
            self._mapping.flush()

    def close(self, sync: bool = True) -> None:
        """Trim, flush (``sync``) and close; create the file empty if it has none."""
        if self._closed:
            return
        self._ensure_file()
        self.trim()
        self._unmap(flush=sync)
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
        try:
            os.rename(self.path, new_path)
        except FileNotFoundError:
            if self._file_len:   # a mapped file vanished: not ours to hide
                raise
        self.path = new_path

    def reset(self) -> None:
        """Drop all entries (keeps the file's size)."""
        self._truncate_entries(0)

    def _truncate_entries(self, n: int) -> None:
        if self._mm is not None and n < self.entries:
            start, end = n * self.ENTRY_SIZE, self.entries * self.ENTRY_SIZE
            self._mm[start:end] = bytes(end - start)
        self._entries = min(n, self.entries)
        self._after_truncate()

    def _after_truncate(self) -> None:
        self._after_load()

    # -------------------------------------------------------------- subclass API

    def _entry_is_unused(self, i: int) -> bool:
        mm = self._mm
        start = i * self.ENTRY_SIZE
        return mm[start:start + self.ENTRY_SIZE] == bytes(self.ENTRY_SIZE)

    def _find_valid_entries(self, slots: int) -> int:
        """Number of valid entries: all slots when the last is in use (a trimmed
        file), else the first unused slot, searched from slot 1."""
        if slots == 0:
            return 0
        if not self._entry_is_unused(slots - 1):
            return slots
        if self._entry_is_unused(0):
            # Slot 0 all-zero: either an empty preallocated file or a real (0, 0)
            # entry; (0, 0) is never written for the offset index, and for the
            # time index it is only possible with timestamp 0.  Treat as empty
            # when slot 1 is unused too.
            if slots == 1 or self._entry_is_unused(1):
                return 0
        lo, hi = 1, slots - 1  # first unused slot in [lo, hi]; slot slots-1 is unused
        while lo < hi:
            mid = (lo + hi) // 2
            if self._entry_is_unused(mid):
                hi = mid
            else:
                lo = mid + 1
        return lo
