"""DelayedFetch: a fetch that waits for ``min_bytes`` or its ``max_wait_ms``.

The fetch handler reads once; if that gives less than ``min_bytes`` it creates a
DelayedFetch recording, per partition, the log position where the fetch started,
and watches it on each ``(topic, partition)``.  Appends (follower fetches) or high
watermark moves (consumer fetches) call ``check_and_complete`` on the key.

Protocol with the caller -- deliberately tiny so the log stays opaque:
``partition_state(topic, partition)`` returns either an ``ErrorCode`` (any int:
unknown partition, not leader any more, ...) or the ``LogOffsetMetadata`` of the
offset a fetch of this kind may read up to (log end for followers, high watermark
for consumers, LSO for read_committed -- the caller's choice).  The log knows these
positions for free: the log end is the active segment's size, and the high
watermark's position is recorded when it moves (as Kafka does).

Completion (Kafka's DelayedFetch.tryComplete cases):
- an error for any partition (leadership lost, fenced epoch, partition gone): now;
- the fetch offset lies past the end (the log was truncated below it): now;
- the end is past the fetch offset on a newer segment (the fetch reads an older
  segment, or one just rolled): now, the re-read sorts it out;
- otherwise available bytes = sum over partitions of
  ``min(end.position - start.position, max_bytes)`` when end offset > fetch offset on
  the same segment; complete once that reaches ``min_bytes``;
- at the deadline, regardless.
``on_complete`` calls ``read_callback()`` to read the logs again and passes the result
to ``respond_callback``.  Partitions whose start position is unknown are skipped.

A follower's fetch waits as a ``DelayedFollowerFetch`` instead: its try is the read
itself.  A follower reads every partition to its log end, so the read finds exactly the
bytes past the fetch offsets; where the read would answer (enough bytes, an error, a
diverging epoch: the caller's ``ready``), that read is the answer, and no second read
follows.  The read has no side effects, so a try that does not complete changes nothing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Union

from kafkapy.purgatory.delayed_operation import DelayedOperation


class LogOffsetMetadata(NamedTuple):
    """Where an offset sits in a log: the segment holding it and the byte position."""

    offset: int
    segment_base_offset: int
    position: int

    def on_older_segment(self, other: LogOffsetMetadata) -> bool:
        return self.segment_base_offset < other.segment_base_offset


PartitionState = Callable[[str, int], Union[int, LogOffsetMetadata]]


@dataclass(slots=True)
class FetchPartitionStatus:
    """One partition of a delayed fetch, as requested and as first read."""

    topic: str
    partition: int
    fetch_offset: int
    max_bytes: int
    start: LogOffsetMetadata | None  # position of fetch_offset when the fetch began


class DelayedFetch(DelayedOperation):
    """Completes on enough bytes, an error, a segment change, or the deadline."""

    __slots__ = ("min_bytes", "partitions", "_read", "_respond", "_state")

    # The try reads the partitions' state and changes nothing unless it completes: a
    # second try right after watching could only give the same answer.
    try_again_when_watched = False

    def __init__(self, delay_ms: int, min_bytes: int, partitions: list[FetchPartitionStatus],
                 read_callback: Callable[[], Any], respond_callback: Callable[[Any], None],
                 partition_state: PartitionState) -> None:
        super().__init__(delay_ms)
        self.min_bytes = min_bytes
        self.partitions = partitions
        self._read = read_callback
        self._respond = respond_callback
        self._state = partition_state

    def try_complete(self) -> bool:
        accumulated = 0
        for status in self.partitions:
            available = self._available_bytes(status)
            if available is None:
                return self.force_complete()
            accumulated += available
        if accumulated >= self.min_bytes:
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        self._respond(self._read())

    def on_expiration(self) -> None:
        pass  # the purgatory counts expirations; the response was sent by on_complete

    def _available_bytes(self, status: FetchPartitionStatus) -> int | None:
        """Bytes this partition can contribute, or None when the fetch must answer now."""
        start = status.start
        if start is None:
            return 0  # the first read found no position (Kafka skips such a partition)
        state = self._state(status.topic, status.partition)
        if not isinstance(state, LogOffsetMetadata):
            return None  # error code: the re-read reports it
        if start.offset > state.offset:
            return None  # the log was truncated below the fetch offset
        if start.offset == state.offset:
            return 0  # (a rolled segment with no new offset is not data)
        if start.on_older_segment(state):
            return None
        if start.segment_base_offset == state.segment_base_offset:
            return min(state.position - start.position, status.max_bytes)
        return 0


class DelayedFollowerFetch(DelayedOperation):
    """A follower's fetch: completes when a read is ``ready`` to answer, or at the deadline
    (with a read made then)."""

    __slots__ = ("_read", "_ready", "_respond", "_results")

    try_again_when_watched = False      # the try only reads

    def __init__(self, delay_ms: int, read_callback: Callable[[], Any],
                 ready: Callable[[Any], bool], respond_callback: Callable[[Any], None]) -> None:
        super().__init__(delay_ms)
        self._read = read_callback
        self._ready = ready
        self._respond = respond_callback
        self._results = None    # the read that completed the fetch, until answered

    def try_complete(self) -> bool:
        results = self._read()
        if not self._ready(results):
            return False
        self._results = results
        return self.force_complete()

    def on_complete(self) -> None:
        results, self._results = self._results, None
        self._respond(results if results is not None else self._read())

    def on_expiration(self) -> None:
        pass  # the purgatory counts expirations; the response was sent by on_complete
