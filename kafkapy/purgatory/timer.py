"""Timer for delayed operations: a hierarchical timing wheel driven by one loop handle.

Kafka's ``SystemTimer`` polls a DelayQueue of buckets from a reaper thread and runs
expired tasks on an executor.  Here everything runs on the event loop: the timer
keeps at most ONE ``loop.call_at`` handle, armed for the earliest queued bucket
(or "now" when tasks are due), and re-armed only when an earlier bucket appears.
Adding or cancelling a task never touches the loop's own timer heap.

Invariants:
- ``add`` never runs a task; tasks run only from ``advance_clock`` (the handle's
  callback, or a test calling it with a ``MockClock``).  So callers of ``add`` and
  ``cancel`` never see callbacks re-enter them.
- Expired buckets are flushed in expiration order, the wheel being advanced to each
  bucket's expiration first; entries that are not yet due drop into finer wheels,
  due ones run in insertion order.  Only after that does the wheel move to "now".
- ``size`` counts tasks linked in the wheel or waiting to run; cancel is O(1).
- A task that raises is logged and does not stop the others.

Young tasks: most delayed operations complete long before their deadline (a follower's
fetch waits a few milliseconds of its 500, an acks=all produce as long), and a task
cancelled then has cost its placement in the wheel for nothing.  So a task of at least
``YOUNG_MS`` delay is first linked into the young list, a plain bucket outside the wheel
(add and cancel O(1), counted in ``size``, ``is_scheduled`` as any); the tasks still there
``YOUNG_MS`` after the list was last empty are placed in the wheel then, at their own
expiration, which is no earlier than that.  So no task runs later than it would have, and
only those still waiting after ``YOUNG_MS`` are placed.
"""
from __future__ import annotations

import asyncio
import logging
import time
from abc import ABC, abstractmethod

from kafkapy.clock import SYSTEM_CLOCK, Clock
from kafkapy.purgatory.timer_task_list import TaskCounter, TimerTaskEntry, TimerTaskList
from kafkapy.purgatory.timing_wheel import BucketQueue, TimingWheel

log = logging.getLogger(__name__)
_CLOCK_TICK_S = 0.001
YOUNG_MS = 50   # tasks of at least this delay wait this long in the young list first


class TimerTask(ABC):
    """Something to run once ``delay_ms`` after it is added to a ``Timer``."""

    __slots__ = ("delay_ms", "_entry")

    def __init__(self, delay_ms: int) -> None:
        self.delay_ms = delay_ms
        self._entry: TimerTaskEntry | None = None

    @abstractmethod
    def run(self) -> None:
        """Called on the loop when the delay has passed (unless cancelled)."""

    def cancel(self) -> None:
        """Unschedule in O(1); harmless if not scheduled.  The task may be re-added."""
        entry = self._entry
        if entry is not None:
            self._entry = None
            entry.remove()

    @property
    def is_scheduled(self) -> bool:
        return self._entry is not None and self._entry.list is not None


class Timer:
    """Schedules ``TimerTask``s on a timing wheel; see the module docstring."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None, clock: Clock = SYSTEM_CLOCK,
                 tick_ms: int = 1, wheel_size: int = 20) -> None:
        self._loop = loop
        self._clock = clock
        self._counter = TaskCounter()
        self._queue = BucketQueue()
        self._wheel = TimingWheel(tick_ms, wheel_size, clock.monotonic_ms(),
                                  self._counter, self._queue)
        # Tasks found expired when added or flushed, waiting for the next run step.
        self._due = TimerTaskList(self._counter)
        # Tasks of at least YOUNG_MS not placed in the wheel yet, and when they will be
        # (None while the list has been empty since the last placement).
        self._young = TimerTaskList(self._counter)
        self._young_due: int | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._armed_ms: int | None = None
        # The handle's deadline on the monotonic clock, not the loop's: uvloop's loop time
        # is read once per loop turn, and does not move while a run of adds goes on.
        self._armed_at = 0.0
        self._closed = False

    @property
    def size(self) -> int:
        """Tasks scheduled and not yet run or cancelled."""
        return self._counter.value

    @property
    def wheel(self) -> TimingWheel:
        return self._wheel

    def add(self, task: TimerTask) -> None:
        """Schedule ``task`` to run ``task.delay_ms`` from now (re-adding reschedules).
        Ignored after ``close``."""
        if self._closed:
            return
        now = self._clock.monotonic_ms()
        if task.delay_ms >= YOUNG_MS:
            self._young.add(TimerTaskEntry(task, now + task.delay_ms))
            if self._young_due is None:
                self._young_due = now + YOUNG_MS
                self._arm(now)
            return
        wheel = self._wheel
        if now >= wheel.current_time_ms + wheel.tick_ms:
            self._catch_up(now)
        entry = TimerTaskEntry(task, now + task.delay_ms)
        if wheel.add(entry):
            # Fast path: already armed at or before this entry's bucket.
            armed, head = self._armed_ms, self._queue.head_expiration()
            if armed is not None and head is not None and now < armed <= head:
                return
        elif not entry.cancelled:
            self._due.add(entry)
        self._arm(now)

    def advance_clock(self, time_ms: int | None = None) -> int:
        """Run every task expired at ``time_ms`` (default: the clock's now); return how
        many ran."""
        now = self._clock.monotonic_ms() if time_ms is None else time_ms
        if self._young_due is not None and now >= self._young_due:
            self._young_due = None
            self._young.flush(self._reinsert)
        ran = self._run_due()
        bucket = self._queue.poll(now)
        while bucket is not None:
            self._wheel.advance_clock(bucket.expiration_ms)
            bucket.flush(self._reinsert)
            ran += self._run_due()
            bucket = self._queue.poll(now)
        self._wheel.advance_clock(now)
        self._arm(now)
        return ran

    def close(self) -> None:
        """Stop firing; pending tasks never run and later adds are ignored."""
        self._closed = True
        self._disarm()

    def _catch_up(self, now: int) -> None:
        # Move the wheel to now when no queued bucket is due, so new entries land in
        # the finest wheel instead of hopping down through coarse ones.  Moving past a
        # still-queued bucket would let its slot be reused and its entries be lost.
        self._queue.drop_empty_expired(now)
        head = self._queue.head_expiration()
        if head is None or head > now:
            self._wheel.advance_clock(now)

    def _reinsert(self, entry: TimerTaskEntry) -> None:
        if not self._wheel.add(entry) and not entry.cancelled:
            self._due.add(entry)

    def _run_due(self) -> int:
        # Take the current batch only: tasks that re-add themselves with no delay run
        # on the next step, not in an endless loop here.
        batch: list[TimerTaskEntry] = []
        self._due.flush(batch.append)
        ran = 0
        for entry in batch:
            # An earlier task of this batch may have cancelled or re-added this one.
            if entry.cancelled:
                continue
            task = entry.task
            task._entry = None
            ran += 1
            try:
                task.run()
            except Exception:
                log.exception("timer task %r failed", task)
        return ran

    def _arm(self, now: int) -> None:
        """Keep the single loop handle pointed at the earliest thing to do."""
        if self._loop is None or self._closed:
            return
        target = now if not self._due.is_empty() else self._queue.head_expiration()
        young = self._young_due
        if young is not None and (target is None or young < target):
            target = young
        if target is None or self._armed_in_time(now, target):
            return
        self._disarm()
        when = self._loop.time() + max(0, target - now) / 1000.0
        self._handle = self._loop.call_at(when, self._fire)
        self._armed_ms = target
        # The monotonic clock is read before the timer's clock, so a stall since ``now``
        # was read (or between the two reads) moves this deadline earlier, never later:
        # a later one would make the handle look not yet due once ``target`` has passed.
        real = time.monotonic()
        self._armed_at = real + max(0, target - self._clock.monotonic_ms()) / 1000.0

    def _armed_in_time(self, now: int, target: int) -> bool:
        """Whether the handle already armed fires no later than ``target`` needs."""
        armed = self._armed_ms
        if armed is None or armed > target:
            return False
        if now < armed:
            return True
        # Armed for a time already passed.  When the loop's deadline has passed too, the
        # handle runs on the loop's next turn (the loop was busy, or the process was
        # descheduled): keep it, or every add until then would re-arm.  When it has not,
        # a mock clock jumped past it and its loop deadline is still the old distance
        # away: re-arm.  (The clock counts whole milliseconds, so the armed time can read
        # as passed up to one millisecond before the handle's deadline.)
        return self._armed_at <= time.monotonic() + _CLOCK_TICK_S

    def _disarm(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._handle = None
        self._armed_ms = None

    def _fire(self) -> None:
        self._handle = None
        self._armed_ms = None
        self.advance_clock()
