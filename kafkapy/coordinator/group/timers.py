"""Deadlines for the coordinator on the purgatory's timing-wheel ``Timer``.

A tiny adapter: ``Deadlines.schedule(delay_ms, callback)`` returns a handle
whose ``cancel()`` is O(1) and harmless after firing.  Callbacks run on the
event loop from ``Timer.advance_clock`` (or a test driving a MockClock), never
from inside ``schedule``.
"""
from __future__ import annotations

from typing import Callable

from kafkapy.purgatory.timer import Timer, TimerTask


class _Task(TimerTask):
    __slots__ = ("_callback", "_done")

    def __init__(self, delay_ms: int, callback: Callable[[], None]) -> None:
        super().__init__(delay_ms)
        self._callback = callback
        self._done = False

    def run(self) -> None:
        if not self._done:
            self._done = True
            self._callback()

    def cancel(self) -> None:
        self._done = True
        super().cancel()


class Deadlines:
    """Schedules one-shot callbacks on a ``Timer`` (owned by the caller)."""

    def __init__(self, timer: Timer) -> None:
        self.timer = timer

    def schedule(self, delay_ms: int, callback: Callable[[], None]) -> _Task:
        task = _Task(max(0, delay_ms), callback)
        self.timer.add(task)
        return task

    def advance(self, now_ms: int | None = None) -> int:
        """Run what is due (tests on a MockClock call this after moving the clock)."""
        return self.timer.advance_clock(now_ms)


def cancel(task) -> None:
    """Cancel a deadline (None: there is none)."""
    if task is not None:
        task.cancel()
