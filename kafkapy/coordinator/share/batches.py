"""Combining state batches, as Kafka's PersisterStateBatchCombiner does.

``combine(so_far, new, start_offset)`` answers one list of non-overlapping batches
sorted by offset:

1. Both lists are pooled; with a start offset other than -1, a batch ending below it
   is dropped and a batch straddling it is cut to begin at it.
2. The pool is a sorted set ordered by (first offset, last offset, delivery count,
   delivery state) (equal batches collapse).  Repeatedly the first pair of neighbours
   that overlap, or touch with the same delivery count and state, is replaced:
   - same count and state: one batch spanning both;
   - otherwise the offsets they share go to the batch of higher priority, priority
     being (delivery count, delivery state) compared in that order, and the other keeps
     only what is left of it on either side.
   Batches before the pair that can no longer merge leave the set for the answer.

The priority rule, not the order of the writes, settles an overlap: a batch delivered
more often wins, and at the same count ACKNOWLEDGED (2) and ARCHIVED (4) beat
AVAILABLE (0).
"""
from __future__ import annotations

import bisect
from collections.abc import Iterable

from kafkapy.coordinator.share.persister import StateBatch


def combine(so_far: Iterable[StateBatch], new: Iterable[StateBatch],
            start_offset: int) -> list[StateBatch]:
    """The non-overlapping union of ``so_far`` and ``new`` from ``start_offset``."""
    pool = _prune([*so_far, *new], start_offset)
    if len(pool) < 2 or _settled(pool):
        return pool
    return _merge(pool)


def _order(batch: StateBatch) -> tuple[int, int, int, int]:
    return (batch.first_offset, batch.last_offset, batch.delivery_count,
            batch.delivery_state)


def _priority(batch: StateBatch) -> tuple[int, int]:
    return (batch.delivery_count, batch.delivery_state)


def _prune(batches: list[StateBatch], start_offset: int) -> list[StateBatch]:
    if start_offset == -1:
        return batches
    kept = []
    for batch in batches:
        if batch.last_offset < start_offset:
            continue
        if batch.first_offset < start_offset:
            batch = StateBatch(start_offset, batch.last_offset, batch.delivery_state,
                               batch.delivery_count)
        kept.append(batch)
    return kept


class _SortedSet:
    """Batches in ``_order``, without duplicates (Java's TreeSet of them)."""

    def __init__(self, batches: Iterable[StateBatch]) -> None:
        self._keys: list[tuple[int, int, int, int]] = []
        self.items: list[StateBatch] = []
        for batch in batches:
            self.add(batch)

    def add(self, batch: StateBatch) -> None:
        key = _order(batch)
        at = bisect.bisect_left(self._keys, key)
        if at < len(self._keys) and self._keys[at] == key:
            return
        self._keys.insert(at, key)
        self.items.insert(at, batch)

    def pop_first(self, count: int) -> list[StateBatch]:
        taken = self.items[:count]
        del self.items[:count]
        del self._keys[:count]
        return taken


def _settled(pool: list[StateBatch]) -> bool:
    """Already what the merge would answer: in strictly increasing ``_order`` with no
    two neighbours mergeable (a share partition's own whole state usually is)."""
    for prev, candidate in zip(pool, pool[1:]):
        if _order(prev) >= _order(candidate) or _mergeable(prev, candidate):
            return False
    return True


def _mergeable(prev: StateBatch, candidate: StateBatch) -> bool:
    if candidate.first_offset <= prev.last_offset:
        return True
    return (prev.last_offset + 1 == candidate.first_offset
            and _priority(prev) == _priority(candidate))


def _merge(pool: list[StateBatch]) -> list[StateBatch]:
    batches = _SortedSet(pool)
    answer: list[StateBatch] = []
    while True:
        at = _first_pair(batches.items)
        if at is None:
            answer.extend(batches.items)
            return answer
        answer.extend(batches.pop_first(at))
        prev, candidate = batches.pop_first(2)
        for piece in _resolve(prev, candidate):
            batches.add(piece)


def _first_pair(items: list[StateBatch]) -> int | None:
    for at in range(len(items) - 1):
        if _mergeable(items[at], items[at + 1]):
            return at
    return None


def _piece(first: int, last: int, like: StateBatch) -> StateBatch:
    return StateBatch(first, last, like.delivery_state, like.delivery_count)


def _resolve(prev: StateBatch, candidate: StateBatch) -> list[StateBatch]:
    """What replaces an overlapping (or same-state contiguous) pair; ``prev`` sorts
    first, so ``prev.first_offset <= candidate.first_offset``."""
    if _priority(prev) == _priority(candidate):
        return [_piece(prev.first_offset, max(prev.last_offset, candidate.last_offset),
                       prev)]
    candidate_wins = _priority(candidate) > _priority(prev)
    if candidate.first_offset == prev.first_offset:
        if candidate.last_offset == prev.last_offset or candidate_wins:
            return [candidate]
        return [prev, _piece(prev.last_offset + 1, candidate.last_offset, candidate)]
    if not candidate_wins:
        if candidate.last_offset <= prev.last_offset:
            return [prev]
        return [prev, _piece(prev.last_offset + 1, candidate.last_offset, candidate)]
    head = _piece(prev.first_offset, candidate.first_offset - 1, prev)
    if candidate.last_offset < prev.last_offset:
        return [head, candidate, _piece(candidate.last_offset + 1, prev.last_offset, prev)]
    return [head, candidate]
