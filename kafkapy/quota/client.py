"""Client byte-rate quotas, as Kafka 3.9's ClientQuotaManager with its DefaultQuotaCallback.

``ClientQuotas(store, clock, samples=, window_s=)`` (one per broker, made by the server) reads every quota
entity at start-up (``load``) and one entity per ``/config/changes`` notification naming
``users/...``, ``clients/...`` or ``ips/...`` (``entity_changed``; an ip's
``connection_creation_rate`` goes to ``ip_rate_changed``, the connection quotas'); it holds one ``ClientQuotaManager``
per quota type: ``produce`` (``producer_byte_rate``) and ``fetch`` (``consumer_byte_rate``),
and ``request`` (``request_percentage``, its throttle bounded to one window; recorded
through ``kafkapy.quota.request``).  Managers handed in (``managers=``) get the
entities' quotas too: the controller mutation quota
(``kafkapy.quota.controller_mutation``), whose sensors hold a token bucket.

Precedence (Kafka's eight levels, most specific first), for user U and client id C:
``users/U/clients/C``, ``users/U/clients/<default>``, ``users/U``,
``users/<default>/clients/C``, ``users/<default>/clients/<default>``, ``users/<default>``,
``clients/C``, ``clients/<default>``.  The level found decides the sensor's tags
(user, client-id; "" for a component not in it), so clients sharing a level's entity share
its rate (a user quota bounds all of that user's clients together); the bound of a tag pair
is looked up as Kafka's quotaLimit.  Users are the principal's name in Sanitizer form (the
znode form), client ids as the client sends them.

Recording (``record``): the value goes into the tag pair's ``Rate`` (``quota.window.num``
samples of ``quota.window.size.seconds``); if the rate is then above the bound, the throttle
time is Kafka's QuotaUtils.throttleTime: ``(rate - bound) / bound * window_size_ms``, rounded.
``max_value_in_window`` is the bound times ``(samples - 1) * window seconds``: what a
consumer fetch may carry at most.  A quota changed applies to existing sensors at once
(their rates are kept).  A sensor not recorded for an hour is dropped (checked at most once
a minute, when a new one is made), as Kafka expires inactive sensors.

Cost: with no quota of a type configured, ``enabled`` is False and callers skip everything
(one attribute test per request).
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Callable, Iterable

import structlog

from kafkapy.config import client_quotas as entities
from kafkapy.metadata import paths
from kafkapy.metrics.rate import SENSOR_EXPIRY_MS, SENSOR_SWEEP_MS, Rate
from kafkapy.security.sasl.credentials import desanitize, sanitize

if TYPE_CHECKING:
    from kafkapy.clock import Clock
    from kafkapy.metadata.store import MetadataStore

_log = structlog.get_logger("kafkapy.client_quotas")
DEFAULT = entities.DEFAULT
_CLIENT_ID, _USER, _USER_CLIENT_ID = 1, 2, 4       # Kafka's QuotaTypes bits


class Sensor:
    """One tag pair's rate, bound and throttle-time totals (for metrics)."""

    __slots__ = ("rate", "bound", "throttle_ms_total", "throttled", "last_ms")

    def __init__(self, rate: Rate, bound: float, now_ms: int) -> None:
        self.rate = rate
        self.bound = bound
        self.throttle_ms_total = 0
        self.throttled = 0
        self.last_ms = now_ms       # last recorded; an hour idle and it is dropped


class ClientQuotaManager:
    """One quota type (``key``): the configured quotas by entity and the sensors by tags.

    Entities are (user, client): each None (absent), ``<default>`` or a name (user in
    Sanitizer form, client id as sent)."""

    def __init__(self, key: str, samples: int, window_s: int, clock: Clock,
                 max_throttle_ms: int | None = None) -> None:
        """``max_throttle_ms``: the longest throttle answered (Kafka's request quota bounds
        it to one window, QuotaUtils.boundedThrottleTime); None: unbounded."""
        self.key = key
        self._max_throttle_ms = max_throttle_ms
        self.samples = samples
        self.window_ms = window_s * 1000
        self._clock = clock
        self._quotas: dict[tuple, float] = {}
        self._types = 0
        self.sensors: dict[tuple[str, str], Sensor] = {}
        self._swept_ms = clock.time_ms()

    @property
    def enabled(self) -> bool:
        return self._types != 0

    def set_quota(self, entity: tuple, value: float | None) -> None:
        if value is None:
            self._quotas.pop(entity, None)
        else:
            self._quotas[entity] = value
        self._types = 0
        for user, client in self._quotas:
            if user is not None and client is not None:
                self._types |= _USER_CLIENT_ID
            elif user is not None:
                self._types |= _USER
            else:
                self._types |= _CLIENT_ID
        for tags, sensor in self.sensors.items():
            bound = self._limit(*tags)
            sensor.bound = float("inf") if bound is None else bound

    def quota(self, user: str, client_id: str) -> float | None:
        """The bound that applies to (sanitized user, client id); None: unbounded."""
        return self._limit(*self._tags(user, client_id))

    def _tags(self, user: str, client_id: str) -> tuple[str, str]:
        """DefaultQuotaCallback.quotaMetricTags."""
        types = self._types
        if types in (0, _CLIENT_ID):
            return "", client_id
        if types == _USER:
            return user, ""
        if types == _USER_CLIENT_ID:
            return user, client_id
        q = self._quotas
        if (user, client_id) in q or (user, DEFAULT) in q:
            return user, client_id
        if (user, None) in q:
            return user, ""
        if (DEFAULT, client_id) in q or (DEFAULT, DEFAULT) in q:
            return user, client_id
        if (DEFAULT, None) in q:
            return user, ""
        return "", client_id

    def _limit(self, user: str, client_id: str) -> float | None:
        """DefaultQuotaCallback.quotaLimit."""
        q = self._quotas
        if user and client_id:
            for entity in ((user, client_id), (user, DEFAULT), (DEFAULT, client_id),
                           (DEFAULT, DEFAULT)):
                if entity in q:
                    return q[entity]
        elif user:
            for entity in ((user, None), (DEFAULT, None)):
                if entity in q:
                    return q[entity]
        elif client_id:
            for entity in ((None, client_id), (None, DEFAULT)):
                if entity in q:
                    return q[entity]
        return None

    def sensor(self, user: str, client_id: str) -> Sensor:
        tags = self._tags(user, client_id)
        sensor = self.sensors.get(tags)
        if sensor is None:
            now = self._clock.time_ms()
            if now - self._swept_ms >= SENSOR_SWEEP_MS:
                self._sweep(now)
            bound = self._limit(*tags)
            sensor = self._new_sensor(float("inf") if bound is None else bound, now)
            self.sensors[tags] = sensor
        return sensor

    def _new_sensor(self, bound: float, now_ms: int) -> Sensor:
        return Sensor(Rate(self.samples, self.window_ms), bound, now_ms)

    def _sweep(self, now_ms: int) -> None:
        """Drop sensors idle for an hour (Kafka's InactiveSensorExpirationTimeSeconds)."""
        self._swept_ms = now_ms
        for tags in [t for t, s in self.sensors.items() if now_ms - s.last_ms >= SENSOR_EXPIRY_MS]:
            del self.sensors[tags]

    def record(self, user: str, client_id: str, value: float) -> int:
        """Record ``value``; the throttle time in ms (0: within the quota)."""
        if not self._types:
            return 0
        now = self._clock.time_ms()
        sensor = self.sensor(user, client_id)
        sensor.last_ms = now
        sensor.rate.record(value, now)
        throttle_ms = sensor.rate.throttle_ms(sensor.bound, now)
        if self._max_throttle_ms is not None:
            return min(throttle_ms, self._max_throttle_ms)
        return throttle_ms

    def clock_ms(self) -> int:
        return self._clock.time_ms()

    def unrecord(self, user: str, client_id: str, value: float) -> None:
        if self._types:
            self.sensor(user, client_id).rate.record(-value, self._clock.time_ms())

    def throttled(self, user: str, client_id: str, throttle_ms: int) -> None:
        """Count a throttle (Kafka's throttle-time sensor)."""
        sensor = self.sensor(user, client_id)
        sensor.throttle_ms_total += throttle_ms
        sensor.throttled += 1

    def max_value_in_window(self, user: str, client_id: str) -> float:
        """Kafka's getMaxValueInQuotaWindow: inf when unbounded."""
        if not self._types:
            return float("inf")
        bound = self._limit(*self._tags(user, client_id))
        if bound is None:
            return float("inf")
        return bound * (self.samples - 1) * self.window_ms / 1000


class ClientQuotas:
    """Every client quota of this broker (see the module docstring)."""

    def __init__(self, store: MetadataStore | None, clock: Clock, *, samples: int = 11,
                 window_s: int = 1,
                 ip_rate_changed: Callable[[str | None, int | None], None] | None = None,
                 managers: Iterable[ClientQuotaManager] = ()) -> None:
        """``samples`` and ``window_s``: ``quota.window.num`` and ``quota.window.size.seconds``;
        ``managers``: more quota types the entities are applied to (the controller mutation
        quota)."""
        self._store = store
        self._ip_rate_changed = ip_rate_changed     # (ip or None for <default>, rate or None)
        self.produce = ClientQuotaManager(entities.PRODUCER_BYTE_RATE, samples, window_s, clock)
        self.fetch = ClientQuotaManager(entities.CONSUMER_BYTE_RATE, samples, window_s, clock)
        # request_percentage: the event-loop time of a client's requests (kafkapy.quota.request)
        self.request = ClientQuotaManager(entities.REQUEST_PERCENTAGE, samples, window_s, clock,
                                          max_throttle_ms=window_s * 1000)
        self._managers = (self.produce, self.fetch, self.request) + tuple(managers)

    def sensor_values(self):
        """(resource, user, client id, rate, average throttle ms) per sensor, for the
        metrics (Kafka's per-client quota MBeans): bytes per second for Produce and Fetch,
        Request's request-time in percent of the event loop."""
        for resource, manager in (("Produce", self.produce), ("Fetch", self.fetch),
                                  ("Request", self.request)):
            now = manager.clock_ms()
            for (user, client_id), sensor in list(manager.sensors.items()):
                average = sensor.throttle_ms_total / sensor.throttled if sensor.throttled else 0.0
                yield resource, user, client_id, sensor.rate.measure(now), average

    def load(self) -> None:
        """Read every user, (user, client-id) and client-id entity."""
        store, root = self._store, paths.config_entity_type_path
        users = root(paths.CONFIG_TYPE_USER)
        for user in entities.children(store, users):
            self.entity_changed(paths.CONFIG_TYPE_USER, user)
            for client in entities.children(store, f"{users}/{user}/clients"):
                self.entity_changed(paths.CONFIG_TYPE_USER, f"{user}/clients/{client}")
        for client in entities.children(store, root(paths.CONFIG_TYPE_CLIENT)):
            self.entity_changed(paths.CONFIG_TYPE_CLIENT, client)
        for ip in entities.children(store, root(paths.CONFIG_TYPE_IP)):
            self.entity_changed(paths.CONFIG_TYPE_IP, ip)

    def entity_changed(self, config_type: str, name: str) -> None:
        """A ``users/<u>``, ``users/<u>/clients/<c>`` or ``clients/<c>`` change (sanitized
        names, as in the znode path): re-read it and apply its quotas."""
        if config_type == paths.CONFIG_TYPE_USER:
            user, _, client = name.partition("/clients/")
            entity = (user, _client_name(client) if client else None)
        elif config_type == paths.CONFIG_TYPE_CLIENT:
            entity = (None, _client_name(name))
        elif config_type == paths.CONFIG_TYPE_IP:
            self._ip_changed(name)
            return
        else:
            return
        try:
            config = entities.read_config(self._store, config_type, name)
        except ValueError:
            _log.warning("ignoring an unreadable quota entity", entity=f"{config_type}/{name}")
            return
        for manager in self._managers:
            value = config.get(manager.key)
            try:
                manager.set_quota(entity, None if value is None else float(value))
            except ValueError:
                _log.warning("ignoring an invalid quota", entity=f"{config_type}/{name}",
                             key=manager.key, value=value)
        _log.info("applied client quota change", entity=f"{config_type}/{name}",
                  quotas={m.key: config.get(m.key) for m in self._managers})


    def _ip_changed(self, name: str) -> None:
        if self._ip_rate_changed is None:
            return
        try:
            config = entities.read_config(self._store, paths.CONFIG_TYPE_IP, name)
            value = config.get(entities.CONNECTION_CREATION_RATE)
            rate = None if value is None else int(value)
        except ValueError:
            _log.warning("ignoring an invalid ip quota entity", entity=f"ips/{name}")
            return
        self._ip_rate_changed(None if name == DEFAULT else name, rate)


def _client_name(sanitized: str) -> str:
    return DEFAULT if sanitized == DEFAULT else desanitize(sanitized)


def session_user(session) -> str:
    """The principal's name in Sanitizer form (Kafka's Session.sanitizedUser, which Kafka
    computes once per session: here once per name)."""
    return _sanitized(session.principal.name)


@functools.lru_cache(maxsize=4096)
def _sanitized(name: str) -> str:
    return sanitize(name)
