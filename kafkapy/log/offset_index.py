"""The offset index (``<base offset>.index``) of one segment.

On disk: back-to-back 8-byte entries, big-endian ``int32 relativeOffset``
(absolute offset - segment base offset) then ``int32 position`` (byte position
of a batch in the .log file).  Opened lazily (``index_base``); preallocated at
its first append to segment.index.bytes rounded down to a multiple of 8,
mmap'ed, trimmed to ``8 * entries`` on roll/close (0 bytes when empty).

Invariants: relative offsets and positions strictly increase; an entry
(O, P) means the batch(es) appended at position P end at offset O, so the
batch containing any offset > O starts at or after P.  Position 0 is never
indexed (the first append of a segment is not indexed), so an all-zero slot
marks unused preallocated space.
"""
from __future__ import annotations

import struct

from kafkapy.log.index_base import CorruptIndexError, IndexFileBase

_ENTRY = struct.Struct(">ii")


class OffsetIndex(IndexFileBase):
    """Sparse offset -> file position map, binary-searched."""

    ENTRY_SIZE = 8

    def __init__(self, path: str, base_offset: int, max_index_size: int = 10 * 1024 * 1024,
                 writable: bool = True) -> None:
        super().__init__(path, base_offset, max_index_size, writable)
        self._last_offset = base_offset

    def _after_load(self) -> None:
        n = self._entries
        self._last_offset = (self.base_offset if not n else
                             self.base_offset + _ENTRY.unpack_from(self._mm, (n - 1) * 8)[0])

    def entry(self, i: int) -> tuple[int, int]:
        rel, pos = _ENTRY.unpack_from(self._mm, i * 8)
        return self.base_offset + rel, pos

    @property
    def last_offset(self) -> int:
        """Offset of the last entry, or the base offset when empty."""
        if self._entries is None:
            self._load()
        return self._last_offset

    def sanity_check(self, log_size: int | None = None) -> None:
        """Kafka's checks plus: positions inside the log and ascending ends."""
        if self.entries == 0:
            return
        first_off, first_pos = self.entry(0)
        last_off, last_pos = self.entry(self.entries - 1)
        if last_off < self.base_offset or first_off < self.base_offset:
            raise CorruptIndexError(
                f"corrupt index {self.path}: last offset {last_off} below base "
                f"offset {self.base_offset}")
        if self.entries > 1 and (last_off <= first_off or last_pos <= first_pos):
            raise CorruptIndexError(f"corrupt index {self.path}: entries not ascending")
        if first_pos <= 0:
            raise CorruptIndexError(f"corrupt index {self.path}: entry at position {first_pos}")
        if log_size is not None and last_pos >= log_size:
            raise CorruptIndexError(
                f"corrupt index {self.path}: position {last_pos} beyond log size {log_size}")

    def append(self, offset: int, position: int) -> None:
        """Add an entry; offsets must increase.  Raises if the index is full."""
        if self.entries and offset <= self._last_offset:
            raise ValueError(f"index offset {offset} not above last {self._last_offset}"
                             f" in {self.path}")
        if self.is_full:
            raise ValueError(f"offset index {self.path} is full")
        rel = offset - self.base_offset
        if not 0 <= rel <= 0x7FFFFFFF:
            raise ValueError(f"offset {offset} not relative to base {self.base_offset}")
        n = self.entries
        if (n + 1) * 8 > self._file_len:
            self._ensure_room(n + 1)
        _ENTRY.pack_into(self._mm, n * 8, rel, position)
        self.entries += 1
        self._last_offset = offset

    def _search(self, target_rel: int, field: int) -> int:
        """Index of the last entry whose field <= target, or -1."""
        mm = self._mm
        lo, hi = 0, self.entries - 1
        found = -1
        unpack = _ENTRY.unpack_from
        while lo <= hi:
            mid = (lo + hi) >> 1
            if unpack(mm, mid * 8)[field] <= target_rel:
                found = mid
                lo = mid + 1
            else:
                hi = mid - 1
        return found

    def lookup(self, offset: int) -> tuple[int, int]:
        """Largest entry with offset <= target; (base_offset, 0) if none."""
        if self.entries == 0:
            return self.base_offset, 0
        i = self._search(offset - self.base_offset, 0)
        if i < 0:
            return self.base_offset, 0
        return self.entry(i)

    def lookup_by_position(self, position: int) -> tuple[int, int]:
        """Largest entry with position <= target; (base_offset, 0) if none."""
        if self.entries == 0:
            return self.base_offset, 0
        i = self._search(position, 1)
        if i < 0:
            return self.base_offset, 0
        return self.entry(i)

    def truncate_to(self, offset: int) -> None:
        """Remove every entry with offset >= ``offset``."""
        if self.entries == 0:
            return
        i = self._search(offset - self.base_offset - 1, 0)
        self._truncate_entries(i + 1)

    def entries_list(self) -> list[tuple[int, int]]:
        return [self.entry(i) for i in range(self.entries)]


__all__ = ["OffsetIndex", "CorruptIndexError"]
