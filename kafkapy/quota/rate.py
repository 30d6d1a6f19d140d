"""Kafka's ``Rate`` over a ``SampledStat`` of sums (org.apache.kafka.common.metrics.stats),
as a client quota sensor measures it.

``samples`` slots of ``window_ms`` each: a record goes into the current sample, or (once
it is ``window_ms`` old) the next slot, reset.  A sample whose window started
``samples * window_ms`` ago or earlier is reset at measure time.  The measure is the sum of
the samples divided by the elapsed time since the oldest sample began, counted as at least
``samples - 1`` full windows (Rate.windowSize), in seconds.
"""
from __future__ import annotations


class Rate:
    __slots__ = ("samples", "window_ms", "_values", "_starts", "_current")

    def __init__(self, samples: int, window_ms: int) -> None:
        self.samples = samples
        self.window_ms = window_ms
        self._values: list[float] = []
        self._starts: list[int] = []
        self._current = 0

    def record(self, value: float, now_ms: int) -> None:
        if not self._values:
            self._values.append(0.0)
            self._starts.append(now_ms)
        elif now_ms - self._starts[self._current] >= self.window_ms:
            self._current = (self._current + 1) % self.samples
            if self._current >= len(self._values):
                self._values.append(0.0)
                self._starts.append(now_ms)
            else:
                self._values[self._current] = 0.0
                self._starts[self._current] = now_ms
        self._values[self._current] += value

    def _purge(self, now_ms: int) -> None:
        expire = self.samples * self.window_ms
        for i, start in enumerate(self._starts):
            if now_ms - start >= expire:
                self._values[i] = 0.0
                self._starts[i] = now_ms

    def window_size_ms(self, now_ms: int) -> int:
        """Rate.windowSize: elapsed since the oldest sample, at least samples - 1 windows."""
        self._purge(now_ms)
        return self._window(now_ms)

    def _window(self, now_ms: int) -> int:
        oldest = min(self._starts) if self._starts else now_ms
        elapsed = now_ms - oldest
        full = elapsed // self.window_ms
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return elapsed

    def measure(self, now_ms: int) -> float:
        """Per second."""
        self._purge(now_ms)
        return sum(self._values) / (self._window(now_ms) / 1000.0)
