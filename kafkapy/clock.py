"""Injected clocks: wall time for timestamps, monotonic time for deadlines.

Everything that reads time takes a ``Clock`` so that tests can use ``MockClock``
and make timeouts instant.
"""
from __future__ import annotations

import time


class Clock:
    """The real clock."""

    def time_ms(self) -> int:
        """Wall-clock milliseconds since the epoch (record timestamps, file mtimes)."""
        return time.time_ns() // 1_000_000

    def monotonic_ms(self) -> int:
        """Monotonic milliseconds (deadlines, timers)."""
        return time.monotonic_ns() // 1_000_000


class MockClock(Clock):
    """A clock that moves only when told to."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now = start_ms

    def time_ms(self) -> int:
        return self._now

    def monotonic_ms(self) -> int:
        return self._now

    def advance(self, ms: int) -> None:
        self._now += ms


SYSTEM_CLOCK = Clock()
