"""The controller mutation quota (``controller_mutation_rate``), as Kafka 3.9's
ControllerMutationQuotaManager with its Strict and Permissive ControllerMutationQuota.

The quota is partition mutations per second: a created topic counts its partitions,
CreatePartitions the partitions it adds, DeleteTopics the partitions the deleted topic has
in this broker's metadata cache.  It is a ``ClientQuotaManager`` (its entities, the eight
user/client-id levels and the sensors' tags come from there, and ``ClientQuotas`` applies
the quota entities to it like to the byte-rate managers); its sensors hold a token bucket
instead of a sampled rate:

- ``TokenBucket``: the bound is the refill rate (tokens per second), the burst (most tokens
  held) ``samples * window seconds * bound`` (``controller.quota.window.num`` windows of
  ``controller.quota.window.size.seconds``).  Every use first refills by the time elapsed
  since the last one; a record takes ``permits`` tokens (the count may go below zero).  The
  quota is exhausted while the tokens are below zero.  As Kafka's, a new bucket has 0
  tokens last refilled at time 0, so under a wall clock it starts full.  An unbounded
  sensor's bound is Long.MAX_VALUE, as Kafka's quota limit for no quota.
- A request gets one ``MutationQuota`` (``quota_for``): strict for CreateTopics v6+,
  CreatePartitions v3+, DeleteTopics v5+, else permissive; ``UNBOUNDED`` when no
  ``controller_mutation_rate`` is configured anywhere (Kafka's quotasEnabled).
  - strict ``record(n)``: when the bucket is already exhausted, nothing is taken and
    ``KafkaError(THROTTLING_QUOTA_EXCEEDED)`` is raised (the mutation is refused; no
    message: Kafka's ApiError drops a message that is the error's generic one); else ``n`` is taken, however far below zero that
    goes.  A mutation is thus refused only after the quota was exhausted by earlier ones.
  - permissive ``record(n)``: ``n`` is taken; if the bucket is then exhausted the mutation
    is still accepted and the request will be throttled.
  - in both, an exhausted bucket sets the throttle time ``round(-tokens / bound * 1000)``
    (the time the refill takes to bring it back to zero) and when it was found;
    ``throttle_time_ms()`` at the answer is that time less the time elapsed since (the
    answer may wait for the controller), at least 0.  ``throttled(ms)`` counts a throttled
    answer in the sensor's throttle-time totals (Kafka's ``throttle-time`` metric), when
    this quota's throttle is the one the answer carries.

The sensor's ``rate`` is Kafka's ``mutation-rate`` metric (a Rate of the permits recorded,
over the windows of Kafka's default metric config: 2 of 30 s); ``tokens`` is its
``tokens`` metric.  Everything runs on the event loop.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from kafkapy.config.client_quotas import CONTROLLER_MUTATION_RATE
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.quota.client import ClientQuotaManager, Sensor
from kafkapy.metrics.rate import Rate

if TYPE_CHECKING:
    from kafkapy.clock import Clock

LONG_MAX = float(2 ** 63 - 1)       # Kafka's quota limit for a sensor with no quota
_RATE_WINDOWS = (2, 30_000)         # samples and ms: the windows of Kafka's default metric config


class TokenBucket:
    """Kafka's TokenBucket stat (see the module docstring); times in ms, rate per second."""

    __slots__ = ("tokens", "last_ms")

    def __init__(self) -> None:
        self.tokens = 0.0
        self.last_ms = 0

    def measure(self, bound: float, burst: float, now_ms: int) -> float:
        self._refill(bound, burst, now_ms)
        return self.tokens

    def record(self, value: float, bound: float, burst: float, now_ms: int) -> None:
        self._refill(bound, burst, now_ms)
        self.tokens = min(burst, self.tokens - value)

    def _refill(self, bound: float, burst: float, now_ms: int) -> None:
        self.tokens = min(burst, self.tokens + bound * (now_ms - self.last_ms) / 1000.0)
        self.last_ms = now_ms


class BucketSensor(Sensor):
    """A controller mutation sensor: the base sensor's ``rate`` (mutation-rate), bound and
    throttle totals, and the token bucket."""

    __slots__ = ("bucket",)

    def __init__(self, rate: Rate, bound: float, now_ms: int) -> None:
        super().__init__(rate, bound, now_ms)
        self.bucket = TokenBucket()


class ControllerMutationQuotaManager(ClientQuotaManager):
    """The ``controller_mutation_rate`` quotas and their token buckets."""

    def __init__(self, samples: int, window_s: int, clock: Clock) -> None:
        """``samples``, ``window_s``: ``controller.quota.window.num`` and
        ``controller.quota.window.size.seconds``."""
        super().__init__(CONTROLLER_MUTATION_RATE, samples, window_s, clock)

    def _new_sensor(self, bound: float, now_ms: int) -> BucketSensor:
        return BucketSensor(Rate(*_RATE_WINDOWS), bound, now_ms)

    def quota_for(self, user: str, client_id: str, strict: bool) -> MutationQuota | _Unbounded:
        """The quota one request records its mutations in (sanitized user, client id)."""
        if not self.enabled:
            return UNBOUNDED
        return MutationQuota(self, user, client_id, strict)

    def bucket_sensor(self, user: str, client_id: str) -> BucketSensor:
        sensor = self.sensor(user, client_id)
        assert isinstance(sensor, BucketSensor)
        return sensor

    def bound_and_burst(self, sensor: Sensor) -> tuple[float, float]:
        bound = min(sensor.bound, LONG_MAX)
        return bound, self.samples * self.window_ms / 1000.0 * bound

    def tokens(self, sensor: BucketSensor, now_ms: int) -> float:
        """The bucket's tokens at ``now_ms`` (Kafka's ``tokens`` metric)."""
        return sensor.bucket.measure(*self.bound_and_burst(sensor), now_ms)

    def sensor_values(self):
        """(user, client id, mutation rate, tokens, average throttle ms) per sensor, for the
        metrics (Kafka's ``kafka.server<type=ControllerMutation, user, client-id>``)."""
        now = self.clock_ms()
        for (user, client_id), sensor in list(self.sensors.items()):
            average = sensor.throttle_ms_total / sensor.throttled if sensor.throttled else 0.0
            yield (user, client_id, sensor.rate.measure(now), self.tokens(sensor, now),
                   average)


class MutationQuota:
    """One request's view of its client's bucket (see the module docstring)."""

    __slots__ = ("_manager", "_user", "_client_id", "strict", "_throttle_ms", "_found_ms")

    def __init__(self, manager: ControllerMutationQuotaManager, user: str, client_id: str,
                 strict: bool) -> None:
        self._manager = manager
        self._user = user
        self._client_id = client_id
        self.strict = strict
        self._throttle_ms = 0
        self._found_ms = 0

    def record(self, permits: float) -> None:
        """Count ``permits`` mutations; strict and exhausted: KafkaError
        THROTTLING_QUOTA_EXCEEDED, nothing counted."""
        manager = self._manager
        now = manager.clock_ms()
        sensor = manager.bucket_sensor(self._user, self._client_id)
        bound, burst = manager.bound_and_burst(sensor)
        if self.strict:
            tokens = sensor.bucket.measure(bound, burst, now)
            if tokens < 0:
                self._exhausted(tokens, bound, now)
                raise KafkaError(ErrorCode.THROTTLING_QUOTA_EXCEEDED)
        sensor.last_ms = now
        sensor.rate.record(permits, now)
        sensor.bucket.record(permits, bound, burst, now)
        if not self.strict:
            tokens = sensor.bucket.tokens       # just refilled by the record
            if tokens < 0:
                self._exhausted(tokens, bound, now)

    def _exhausted(self, tokens: float, bound: float, now_ms: int) -> None:
        if bound <= 0:
            # A quota of 0 never refills (Kafka divides by it): one span of the quota's
            # windows, so the client waits and asks again.
            manager = self._manager
            self._throttle_ms = manager.samples * manager.window_ms
        else:
            self._throttle_ms = math.floor(-tokens / bound * 1000 + 0.5)  # Java's Math.round
        self._found_ms = now_ms

    def throttle_time_ms(self) -> int:
        """The answer's throttle time by this quota."""
        now = self._manager.clock_ms()
        return max(0, self._throttle_ms - (now - self._found_ms))

    def throttled(self, throttle_ms: int) -> None:
        """Count the answer's throttle in the sensor's throttle-time totals."""
        self._manager.throttled(self._user, self._client_id, throttle_ms)


class _Unbounded:
    """No controller_mutation_rate anywhere: every mutation passes, nothing is recorded."""

    strict = False

    def record(self, permits: float) -> None:
        pass

    def throttle_time_ms(self) -> int:
        return 0

    def throttled(self, throttle_ms: int) -> None:
        pass


UNBOUNDED = _Unbounded()
