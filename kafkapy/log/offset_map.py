"""The cleaner's key -> latest offset map (Kafka's SkimpyOffsetMap, in spirit).

Keys are stored as their 16-byte MD5 digest, as Kafka does, so memory is
bounded by the number of entries rather than by key sizes.  Kafka sizes the
map as ``dedupe buffer / (16 + 8)`` slots filled to
log.cleaner.io.buffer.load.factor; ``capacity`` follows the same arithmetic,
and the cleaner stops building (at a batch boundary) once the map is full.

Invariants: ``latest_offset`` is the largest offset the map has covered
(including batches without keys and control batches, via
``update_latest_offset``); -1 when empty.
"""
from __future__ import annotations

import hashlib

_BYTES_PER_ENTRY = 16 + 8


class OffsetMap:
    def __init__(self, memory_bytes: int = 128 * 1024 * 1024, load_factor: float = 0.9) -> None:
        slots = max(1, int(memory_bytes) // _BYTES_PER_ENTRY)
        self.capacity = max(1, int(slots * load_factor))
        self._map: dict[bytes, int] = {}
        self.latest_offset = -1

    @staticmethod
    def _hash(key: bytes) -> bytes:
        return hashlib.md5(key).digest()

    def __len__(self) -> int:
        return len(self._map)

    @property
    def is_full(self) -> bool:
        return len(self._map) >= self.capacity

    @property
    def utilization(self) -> float:
        return len(self._map) / self.capacity

    def put(self, key: bytes, offset: int) -> None:
        self._map[self._hash(key)] = offset
        if offset > self.latest_offset:
            self.latest_offset = offset

    def get(self, key: bytes) -> int:
        """The latest offset of ``key``, or -1 when the map does not hold it."""
        return self._map.get(self._hash(key), -1)

    def update_latest_offset(self, offset: int) -> None:
        if offset > self.latest_offset:
            self.latest_offset = offset

    def clear(self) -> None:
        self._map.clear()
        self.latest_offset = -1
