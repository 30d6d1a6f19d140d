"""The aborted-transaction index of one segment: ``<base:020d>.txnindex`` (Kafka's format).

File: back-to-back 34-byte entries (big-endian), one per aborted transaction
whose ABORT marker lies in this segment, in marker order:

    int16 version (0) | int64 producerId | int64 firstOffset
    | int64 lastOffset (the ABORT marker) | int64 lastStableOffset (the LSO
      right after the marker was written)

Invariants: entries are appended in ascending ``last_offset``; a torn tail (a
partial entry) is ignored when loading; entries are cached in memory after the
first read and the file is only appended to (or rewritten on truncation).
Only transactions that wrote data to the partition are indexed (an ABORT for
a transaction without data changes nothing for readers).

``collect(fetch_offset, upper)`` is Kafka's ``TransactionIndex.collectAbortedTxns``:
the entries with ``last_offset >= fetch_offset`` and ``first_offset < upper``,
and whether the search is complete (an entry's ``last_stable_offset >= upper``
means no later segment can hold a transaction overlapping the range).
"""
from __future__ import annotations

import os
import struct
import weakref
from typing import NamedTuple

from kafkapy.log.segment import TXN_INDEX_SUFFIX, segment_path

ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = ENTRY.size  # 34
VERSION = 0


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TransactionIndex:
    def __init__(self, path: str) -> None:
        self.path = path
        self._entries: list[AbortedTxn] | None = None

    @property
    def entries(self) -> list[AbortedTxn]:
        if self._entries is None:
            self._entries = _read(self.path)
        return self._entries

    def append(self, txn: AbortedTxn) -> None:
        entries = self.entries
        if entries and txn.last_offset <= entries[-1].last_offset:
            raise ValueError(f"txn index {self.path}: last offset {txn.last_offset} not above "
                             f"{entries[-1].last_offset}")
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, ENTRY.pack(VERSION, *txn))
        finally:
            os.close(fd)
        entries.append(txn)

    def has(self, last_offset: int) -> bool:
        return any(e.last_offset == last_offset for e in self.entries)

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose marker is at or after ``offset``."""
        keep = [e for e in self.entries if e.last_offset < offset]
        if len(keep) == len(self.entries):
            return
        self._entries = keep
        if keep:
            tmp = self.path + ".tmp"
            with open(tmp, "wb") as f:
                f.write(b"".join(ENTRY.pack(VERSION, *e) for e in keep))
            os.replace(tmp, self.path)
        else:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass

    def collect(self, fetch_offset: int, upper: int) -> tuple[list[AbortedTxn], bool]:
        found = []
        for e in self.entries:
            if e.last_offset >= fetch_offset and e.first_offset < upper:
                found.append(e)
            if e.last_stable_offset >= upper:
                return found, True
        return found, False


def _read(path: str) -> list[AbortedTxn]:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return []
    out = []
    for pos in range(0, len(data) - ENTRY_SIZE + 1, ENTRY_SIZE):
        version, *fields = ENTRY.unpack_from(data, pos)
        if version != VERSION:
            break
        out.append(AbortedTxn(*fields))
    return out


_BY_SEGMENT: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def for_segment(segment) -> TransactionIndex:
    """The transaction index of a live ``LogSegment`` (created on first use)."""
    index = _BY_SEGMENT.get(segment)
    if index is None:
        index = _BY_SEGMENT[segment] = TransactionIndex(
            segment_path(segment.dir, segment.base_offset, TXN_INDEX_SUFFIX))
    return index
