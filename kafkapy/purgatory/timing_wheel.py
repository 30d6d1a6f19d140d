"""Hierarchical timing wheel (Kafka's ``TimingWheel``) and its bucket queue.

A wheel of ``wheel_size`` buckets, each ``tick_ms`` wide, covers expirations in
``[current_time_ms, current_time_ms + interval_ms)`` where ``interval_ms =
tick_ms * wheel_size``.  An entry that expires later goes to the overflow wheel,
created on demand, whose tick is this wheel's interval (1 ms x 20 -> 20 ms,
400 ms, 8 s, 160 s, ... so days need only a handful of levels).

Invariants:
- ``current_time_ms`` is a multiple of ``tick_ms`` and only moves forward; each
  overflow wheel's current time is this wheel's, rounded down to its own tick.
- An entry is placed in bucket ``(expiration // tick) % wheel_size`` and that
  bucket's expiration becomes ``(expiration // tick) * tick``.
- A bucket is offered to the ``BucketQueue`` only when its expiration changes,
  so it is queued at most once per use (as with Kafka's DelayQueue).  This holds
  only if the clock is never advanced past a bucket that is still queued: callers
  advance to each expired bucket's expiration in order before advancing further.
- ``add`` returns False, linking nothing, for an entry that is cancelled or
  already expired (expiration < current_time_ms + tick_ms); the caller runs it.
"""
from __future__ import annotations

import heapq
import itertools

from kafkapy.purgatory.timer_task_list import TaskCounter, TimerTaskEntry, TimerTaskList


class BucketQueue:
    """Buckets ordered by expiration (a heap); Kafka's DelayQueue without the waiting."""

    __slots__ = ("_heap", "_seq")

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, TimerTaskList]] = []
        # Tie-breaker so the heap never compares buckets themselves.
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._heap)

    def offer(self, bucket: TimerTaskList) -> None:
        heapq.heappush(self._heap, (bucket.expiration_ms, next(self._seq), bucket))

    def head_expiration(self) -> int | None:
        """Earliest queued expiration, or None when the queue is empty."""
        return self._heap[0][0] if self._heap else None

    def poll(self, now_ms: int) -> TimerTaskList | None:
        """Remove and return the earliest bucket expiring at or before ``now_ms``."""
        heap = self._heap
        while heap and heap[0][0] <= now_ms:
            expiration, _, bucket = heapq.heappop(heap)
            # Defensive: a bucket re-scheduled since it was queued is stale here.
            if bucket.expiration_ms == expiration:
                return bucket
        return None

    def drop_empty_expired(self, now_ms: int) -> None:
        """Discard expired buckets emptied by cancellation: flushing them is a no-op."""
        heap = self._heap
        while heap and heap[0][0] <= now_ms and heap[0][2].is_empty():
            _, _, bucket = heapq.heappop(heap)
            bucket.expiration_ms = -1


class TimingWheel:
    """One level of the hierarchy; ``add`` walks up to the level that fits."""

    __slots__ = ("tick_ms", "wheel_size", "interval_ms", "current_time_ms",
                 "_buckets", "_counter", "_queue", "_overflow")

    def __init__(self, tick_ms: int, wheel_size: int, start_ms: int,
                 counter: TaskCounter, queue: BucketQueue) -> None:
        if tick_ms < 1 or wheel_size < 2:
            raise ValueError("tick_ms must be >= 1 and wheel_size >= 2")
        self.tick_ms = tick_ms
        self.wheel_size = wheel_size
        self.interval_ms = tick_ms * wheel_size
        self.current_time_ms = start_ms - start_ms % tick_ms
        self._buckets = [TimerTaskList(counter) for _ in range(wheel_size)]
        self._counter = counter
        self._queue = queue
        self._overflow: TimingWheel | None = None

    @property
    def overflow_wheel(self) -> TimingWheel | None:
        return self._overflow

    def add(self, entry: TimerTaskEntry) -> bool:
        """Place the entry in this wheel or a coarser one; False if cancelled or expired."""
        expiration = entry.expiration_ms
        if entry.cancelled or expiration < self.current_time_ms + self.tick_ms:
            return False
        # Climb to the first wheel whose span reaches the expiration (a loop, not
        # recursion: this is the hot path of every delayed request).
        wheel = self
        while expiration >= wheel.current_time_ms + wheel.interval_ms:
            wheel = wheel._overflow_wheel()
        virtual_id = expiration // wheel.tick_ms
        bucket = wheel._buckets[virtual_id % wheel.wheel_size]
        bucket.add(entry)
        if bucket.set_expiration(virtual_id * wheel.tick_ms):
            self._queue.offer(bucket)
        return True

    def advance_clock(self, time_ms: int) -> None:
        """Move current time forward to ``time_ms`` rounded down to the tick."""
        if time_ms >= self.current_time_ms + self.tick_ms:
            self.current_time_ms = time_ms - time_ms % self.tick_ms
            if self._overflow is not None:
                self._overflow.advance_clock(self.current_time_ms)

    def _overflow_wheel(self) -> TimingWheel:
        if self._overflow is None:
            self._overflow = TimingWheel(self.interval_ms, self.wheel_size,
                                         self.current_time_ms, self._counter, self._queue)
        return self._overflow
