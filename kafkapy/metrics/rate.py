"""Kafka 3.9's ``Rate`` and ``SimpleRate`` over a ``WindowedSum`` (a ``SampledStat`` of sums,
org.apache.kafka.common.metrics.stats): the one sampled rate of kafkapy's quotas (client
quotas, connection creation rates, replication throttles).

Samples: ``samples`` windows of ``window_ms`` are measured, kept in ``samples + 1`` slots
(the extra one holds a sample that began before the measured span but has events inside
it).  A record goes into the current sample, or, once that sample is ``window_ms`` old,
into the next slot, reset.  At measure time a sample whose *last event* is
``samples * window_ms`` old or older is reset (to start now, empty).

The measure is the sum of the samples divided by the window size in seconds, the time
since the oldest sample began, counted as:
- ``Rate`` (the default): at least ``samples - 1`` full windows (a fresh rate averages a
  burst over the whole span), and at least 1 ms;
- ``SimpleRate`` (``simple=True``): at least one window.

Values may be negative (Kafka's unrecord: the value recorded again, negated).  Times are
the caller's clock in ms.
"""
from __future__ import annotations


# Kafka drops a quota sensor unused this long (InactiveSensorExpirationTimeSeconds); the
# sensors' owners look for such sensors at most every SENSOR_SWEEP_MS.
SENSOR_EXPIRY_MS = 3_600_000
SENSOR_SWEEP_MS = 60_000


class _Sample:
    __slots__ = ("value", "start_ms", "last_event_ms")

    def __init__(self, now_ms: int) -> None:
        self.reset(now_ms)

    def reset(self, now_ms: int) -> None:
        self.value = 0.0
        self.start_ms = now_ms
        self.last_event_ms = now_ms


class Rate:
    """A sampled rate per second (see the module docstring)."""

    __slots__ = ("samples", "window_ms", "_simple", "_samples", "_current")

    def __init__(self, samples: int, window_ms: int, *, simple: bool = False) -> None:
        self.samples = samples
        self.window_ms = window_ms
        self._simple = simple
        self._samples: list[_Sample] = []
        self._current = 0

    def record(self, value: float, now_ms: int) -> None:
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self.window_ms:
            sample = self._advance(now_ms)
        sample.value += value
        sample.last_event_ms = now_ms

    def measure(self, now_ms: int) -> float:
        """Per second."""
        window = self.window_size_ms(now_ms)
        return sum(s.value for s in self._samples) / (window / 1000.0)

    def throttle_ms(self, bound: float, now_ms: int) -> int:
        """Kafka's QuotaUtils.throttleTime: the ms until the rate is back down to ``bound``,
        0 while it is not over it; a bound of 0 (Kafka divides by it) gives the window."""
        window = self.window_size_ms(now_ms)
        measured = sum(s.value for s in self._samples) / (window / 1000.0)
        if measured <= bound:
            return 0
        if bound <= 0:
            return window
        return round((measured - bound) / bound * window)

    def window_size_ms(self, now_ms: int) -> int:
        """Rate.windowSize (SimpleRate.windowSize when simple), old samples purged first."""
        self._purge(now_ms)
        elapsed = now_ms - self._oldest(now_ms).start_ms
        if self._simple:
            return max(elapsed, self.window_ms)
        full = elapsed // self.window_ms
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return max(elapsed, 1)

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms))
        return self._samples[self._current]

    def _advance(self, now_ms: int) -> _Sample:
        self._current = (self._current + 1) % (self.samples + 1)
        if self._current >= len(self._samples):
            sample = _Sample(now_ms)
            self._samples.append(sample)
            return sample
        sample = self._samples[self._current]
        sample.reset(now_ms)
        return sample

    def _oldest(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms))
        return min(self._samples, key=lambda s: s.start_ms)

    def _purge(self, now_ms: int) -> None:
        expire = self.samples * self.window_ms
        for sample in self._samples:
            if now_ms - sample.last_event_ms >= expire:
                sample.reset(now_ms)
