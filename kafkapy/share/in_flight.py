"""The in-flight records of one share partition: contiguous runs of offsets that share
one state.

Kafka keeps in-flight *batches* (the fetched batches' boundaries) that switch to one
state per offset once an operation touches part of them.  Here the same information is
kept as *runs*: inclusive offset ranges whose every offset has the same state, delivery
count, owner, lock deadline, backoff end and dead-letter mark.  An operation on part of
a run splits it; neighbours that become equal are merged again.

Invariants (``InFlightRuns``):
- runs are sorted, non-empty and contiguous: each starts at the previous one's last + 1;
- the first run starts at ``start`` (the share-partition start offset) when there is one;
- no two neighbours are equal in every attribute (``Run.key``).
"""
from __future__ import annotations

import bisect
import enum
from collections.abc import Iterator
from dataclasses import dataclass


class RecordState(enum.IntEnum):
    """Kafka's RecordState ids (persisted: AVAILABLE, ACKNOWLEDGED, ARCHIVED)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


@dataclass(slots=True)
class Run:
    """Offsets ``first``..``last`` (inclusive) in one state.

    ``member_id`` and ``deadline`` (monotonic ms) are set while ACQUIRED;
    ``available_at`` (monotonic ms, 0 = now) while AVAILABLE and held back by backoff;
    ``dead_letter`` (the reason) while ARCHIVED but waiting for its dead-letter append."""

    first: int
    last: int
    state: RecordState
    delivery_count: int
    member_id: str = ""
    deadline: int = 0
    available_at: int = 0
    dead_letter: str | None = None

    def key(self) -> tuple[object, ...]:
        return (self.state, self.delivery_count, self.member_id, self.deadline,
                self.available_at, self.dead_letter)

    @property
    def size(self) -> int:
        return self.last - self.first + 1

    @property
    def terminal(self) -> bool:
        """ACKNOWLEDGED, or ARCHIVED and not waiting for a dead-letter append."""
        return (self.state == RecordState.ACKNOWLEDGED
                or (self.state == RecordState.ARCHIVED and self.dead_letter is None))

    def acquirable(self, now: int) -> bool:
        return self.state == RecordState.AVAILABLE and self.available_at <= now


class InFlightRuns:
    """The runs from the start offset on; see the module docstring."""

    def __init__(self, start: int) -> None:
        self.start = start
        self._runs: list[Run] = []

    def __iter__(self) -> Iterator[Run]:
        return iter(self._runs)

    def __len__(self) -> int:
        return len(self._runs)

    @property
    def end(self) -> int:
        """The last in-flight offset; ``start`` when nothing is in flight."""
        return self._runs[-1].last if self._runs else self.start

    @property
    def next_new_offset(self) -> int:
        """The first offset past the in-flight ones."""
        return self._runs[-1].last + 1 if self._runs else self.start

    def clear(self, start: int) -> None:
        self.start = start
        self._runs.clear()

    def append(self, run: Run) -> None:
        """Add ``run`` right after the last one (at ``next_new_offset``)."""
        if run.first != self.next_new_offset or run.last < run.first:
            raise ValueError(f"run {run.first}-{run.last} does not follow {self.next_new_offset}")
        self._runs.append(run)

    def run_at(self, offset: int) -> Run:
        """The run holding ``offset`` (which must be in flight)."""
        return self._runs[self._index(offset)]

    def carve(self, first: int, last: int) -> list[Run]:
        """Split runs so that [first, last] (clipped to the in-flight range) is covered
        exactly by whole runs, and answer them (the caller may change them in place)."""
        first, last = max(first, self.start), min(last, self.end)
        if not self._runs or first > last:
            return []
        self._split_before(first)
        self._split_before(last + 1)
        return self._runs[self._index(first):self._index(last) + 1]

    def overlapping(self, first: int, last: int) -> list[Run]:
        """The runs holding any offset of [first, last], unsplit (read-only use)."""
        first, last = max(first, self.start), min(last, self.end)
        if not self._runs or first > last:
            return []
        return self._runs[self._index(first):self._index(last) + 1]

    def coalesce(self) -> None:
        """Merge neighbours equal in every attribute."""
        merged: list[Run] = []
        for run in self._runs:
            if merged and merged[-1].key() == run.key():
                merged[-1].last = run.last
            else:
                merged.append(run)
        self._runs = merged

    def advance_start(self) -> bool:
        """Drop leading terminal runs, moving ``start`` past them; True if it moved."""
        dropped = 0
        while dropped < len(self._runs) and self._runs[dropped].terminal:
            self.start = self._runs[dropped].last + 1
            dropped += 1
        del self._runs[:dropped]
        return dropped > 0

    def trim_below(self, offset: int) -> None:
        """Forget offsets below ``offset`` and make it the start (it may pass the end)."""
        if offset <= self.start:
            return
        if self._runs and offset <= self.end:
            self._split_before(offset)
            del self._runs[:self._index(offset)]
        else:
            self._runs.clear()
        self.start = offset

    def _index(self, offset: int) -> int:
        return bisect.bisect_right(self._runs, offset, key=lambda run: run.first) - 1

    def _split_before(self, offset: int) -> None:
        """Make ``offset`` the first offset of a run (no-op at a boundary or outside)."""
        if not self._runs or offset <= self.start or offset > self.end:
            return
        index = self._index(offset)
        run = self._runs[index]
        if run.first == offset:
            return
        tail = Run(offset, run.last, run.state, run.delivery_count, run.member_id,
                   run.deadline, run.available_at, run.dead_letter)
        run.last = offset - 1
        self._runs.insert(index + 1, tail)
