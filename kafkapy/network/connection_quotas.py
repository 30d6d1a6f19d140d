"""Connection quotas: how many connections the broker, a listener and one address may hold.

Kafka 3.9's ConnectionQuotas (SocketServer.scala), one instance per broker shared by every
listener's ``SocketServer`` (the server makes it and hands it to each; it registers
``config_changed`` with the dynamic broker config).  The rules:

- a connection counts from the moment it is accepted (its TLS handshake included) until it
  is closed: the counts cover connections still being set up;
- listener slot: a listener may accept while its own count is below its limit
  (``listener.name.<l>.max.connections``, else ``max.connections``) and, unless it is the
  protected listener, while the broker-wide count is below ``max.connections``.  With no
  slot the listener's acceptor *waits*: it stops accepting (new connections stay in the
  kernel's backlog, their clients wait) until a connection closes or a limit is raised;
- the protected listener is the inter-broker listener when the broker has more than one
  listener: it is not held by the broker-wide limit.  When its connections push the total
  over ``max.connections``, the least recently used connections of the other listeners are
  closed (Kafka's processors close ``lowestPriorityChannel`` while ``maxConnectionsExceeded``);
  the same happens when ``max.connections`` is lowered below the current total;
- per address: ``max.connections.per.ip``, or the address's entry in
  ``max.connections.per.ip.overrides`` (``host:n,...``; host names resolved once, when the
  value is applied).  A connection from an address that already has that many is closed at
  once after accept, logged as Kafka logs it: "Rejected connection from <ip>, address already
  has the configured maximum of <n> connections.";
- creation rate: ``max.connection.creation.rate`` bounds new connections per second,
  broker-wide (unprotected listeners) and per listener
  (``listener.name.<l>.max.connection.creation.rate``, else the broker value), measured as
  Kafka's Rate over ``quota.window.num`` samples of ``quota.window.size.seconds`` (the window
  is at least samples-1 windows long, so a fresh broker takes a burst).  A connection that
  takes the rate over its bound is held, and its listener accepts nothing, for Kafka's
  throttle time ``(rate - bound) / bound * window``, at most one quota window;
- per-IP creation rate (KIP-612): ``connection_creation_rate`` of ``/config/ips/<ip>``, else of
  ``/config/ips/<default>`` (``update_ip_rate``, from the client quotas' change
  notifications), on every listener: a connection that takes its address's rate over the
  bound is not counted (taken back out of the rate), never served, and closed after the
  throttle time (at most one quota window), as Kafka's acceptor delays closing it;
- every limit is dynamic: ``reconfigure(config)`` applies the effective values at once, and a
  raised limit wakes the waiting acceptors.

Addresses are kept as Java's ``InetAddress.getHostAddress()`` prints them (an IPv4-mapped
IPv6 peer counts as its IPv4 address).  Event-loop only: no locks.
"""
from __future__ import annotations

import heapq
import ipaddress
import socket
from typing import Callable

import structlog

from kafkapy.api.principal import host_address
from kafkapy.metrics.rate import SENSOR_EXPIRY_MS, SENSOR_SWEEP_MS, Rate

_log = structlog.get_logger("kafkapy.network")
INT_MAX = 2**31 - 1
_PER_IP_KEYS = ("max.connections.per.ip", "max.connections.per.ip.overrides")
#: Keys whose change this object applies (listener-prefixed max.connections as well).
RECONFIGURABLE = frozenset({"max.connections", "max.connection.creation.rate", *_PER_IP_KEYS})


def parse_overrides(text: str | None) -> dict[str, int]:
    """``host:n,host:n`` -> {address: n}; host names resolved (Kafka's InetAddress.getByName).
    An entry that does not parse or resolve is logged and skipped."""
    out: dict[str, int] = {}
    for entry in (text or "").split(","):
        entry = entry.strip()
        if not entry:
            continue
        host, sep, count = entry.rpartition(":")
        try:
            if not sep or not host:
                raise ValueError("expected host:count")
            out[_resolve(host.strip().strip("[]"))] = int(count)
        except (ValueError, OSError) as err:
            _log.error("ignoring max.connections.per.ip.overrides entry", entry=entry,
                       reason=str(err))
    return out


def _resolve(host: str) -> str:
    try:
        return host_address(str(ipaddress.ip_address(host)))
    except ValueError:
        return host_address(socket.gethostbyname(host))



class _Sensor:
    """A creation rate (Kafka's Rate, ``kafkapy.metrics.rate``) with a quota bound:
    ``record`` counts one connection and answers the throttle time in ms when the rate is
    then over the bound (Kafka's QuotaUtils.throttleTime, at most one window)."""

    __slots__ = ("bound", "last_ms", "_rate")

    def __init__(self, samples: int, window_ms: int) -> None:
        self.bound = INT_MAX
        self.last_ms = 0
        self._rate = Rate(max(1, samples), max(1, window_ms))

    def record(self, now_ms: int) -> int:
        self.last_ms = now_ms
        self._rate.record(1, now_ms)
        return self.throttle_ms(now_ms)

    def unrecord(self, now_ms: int) -> None:
        """Take a connection back out (one that was not accepted after all)."""
        self._rate.record(-1, now_ms)

    def throttle_ms(self, now_ms: int) -> int:
        if self.bound >= INT_MAX:
            return 0
        throttle = self._rate.throttle_ms(self.bound, now_ms)
        if throttle and self.bound <= 0:
            return self._rate.window_ms
        return min(throttle, self._rate.window_ms)


class ConnectionQuotas:
    """Counts per address, per listener and in total, and the limits on them."""

    def __init__(self, config) -> None:
        self._per_ip: dict[str, int] = {}
        self._per_listener: dict[str, int] = {}
        self._total = 0
        self._inter_broker = config.inter_broker_listener_name
        self._servers: dict[str, object] = {}     # listener -> its SocketServer
        self._waiting: list[Callable[[], None]] = []
        samples, window_ms = config["quota.window.num"], config["quota.window.size.seconds"] * 1000
        self._broker_rate = _Sensor(samples, window_ms)
        self._listener_rates = {name: _Sensor(samples, window_ms) for name, *_ in config.listeners}
        self._samples, self._window_ms = samples, window_ms
        self._ip_rate_default = INT_MAX
        self._ip_rate: dict[str, int] = {}
        self._ip_sensors: dict[str, _Sensor] = {}
        self._ip_swept_ms = 0
        self._apply(config)

    # -- limits ---------------------------------------------------------------------------
    def _apply(self, config) -> None:
        self._default_per_ip = int(config["max.connections.per.ip"])
        self._overrides = parse_overrides(config["max.connections.per.ip.overrides"])
        self._broker_max = int(config["max.connections"])
        self._listener_max: dict[str, int] = {}
        rate = self._broker_rate.bound = int(config["max.connection.creation.rate"])
        for name, *_ in config.listeners:
            self._listener_max[name] = _listener_value(config, name, "max.connections",
                                                       self._broker_max)
            self._listener_rates[name].bound = _listener_value(
                config, name, "max.connection.creation.rate", rate)

    def config_changed(self, config, changed: set[str]) -> None:
        if changed & RECONFIGURABLE:
            self.reconfigure(config)

    def reconfigure(self, config) -> None:
        """Adopt the effective limits: waiting acceptors may go on, and a lowered broker
        limit closes least recently used connections of unprotected listeners."""
        self._apply(config)
        _log.info("connection quotas updated", max_connections=self._broker_max,
                  max_connections_per_ip=self._default_per_ip, overrides=self._overrides,
                  listeners=self._listener_max)
        self.wake()
        self.close_excess()

    def record_creation(self, listener: str, now_ms: int) -> int:
        """Count a new connection in the creation rates: the ms its listener must hold it
        (and accept nothing) first, 0 for none."""
        listener_rate = self._listener_rates.get(listener)
        throttle = listener_rate.record(now_ms) if listener_rate is not None else 0
        if not self._protected(listener):
            throttle = max(throttle, self._broker_rate.record(now_ms))
        return throttle

    def update_ip_rate(self, ip: str | None, rate: int | None) -> None:
        """``connection_creation_rate`` of ``ip`` (None: the default entity); None removes it."""
        if ip is None:
            self._ip_rate_default = INT_MAX if rate is None else rate
        elif rate is None:
            self._ip_rate.pop(_ip_key(ip), None)
        else:
            self._ip_rate[_ip_key(ip)] = rate
        _log.info("connection rate quota per IP updated", ip=ip or "<default>", rate=rate)

    def record_ip_creation(self, listener: str, address: str, now_ms: int) -> int:
        """Count a connection accepted by ``listener`` in its address's rate: 0, or the ms
        after which the caller closes it unserved.  Such a connection is then counted in
        no rate: it is taken back out of its address's, its listener's and (unless the
        listener is protected) the broker's creation rate, which ``record_creation``
        counted it in (Kafka's recordIpConnectionMaybeThrottle and updateListenerMetrics)."""
        bound = self._ip_rate.get(address, self._ip_rate_default)
        if bound >= INT_MAX:
            return 0
        if now_ms - self._ip_swept_ms >= SENSOR_SWEEP_MS:
            self._sweep_ip_sensors(now_ms)
        sensor = self._ip_sensors.get(address)
        if sensor is None:
            sensor = self._ip_sensors[address] = _Sensor(self._samples, self._window_ms)
        sensor.bound = bound
        throttle = sensor.record(now_ms)
        if throttle > 0:
            sensor.unrecord(now_ms)
            if not self._protected(listener):
                self._broker_rate.unrecord(now_ms)
            listener_rate = self._listener_rates.get(listener)
            if listener_rate is not None:
                listener_rate.unrecord(now_ms)
        return throttle

    def _sweep_ip_sensors(self, now_ms: int) -> None:
        """Drop the rates of addresses idle for an hour (Kafka's per-IP sensors expire
        after InactiveSensorExpirationTimeSeconds), so one entry per address ever seen is
        not kept."""
        self._ip_swept_ms = now_ms
        for address in [a for a, s in self._ip_sensors.items()
                        if now_ms - s.last_ms >= SENSOR_EXPIRY_MS]:
            del self._ip_sensors[address]

    def max_for(self, address: str) -> int:
        return self._overrides.get(address, self._default_per_ip)

    # -- listeners --------------------------------------------------------------------------
    def add_server(self, server) -> None:
        self._servers[server.listener] = server
        self._per_listener.setdefault(server.listener, 0)

    def _protected(self, listener: str) -> bool:
        return listener == self._inter_broker and len(self._servers) > 1

    def slot_available(self, listener: str) -> bool:
        """May ``listener`` accept one more connection now (Kafka's connectionSlotAvailable)?"""
        limit = self._listener_max.get(listener, self._broker_max)
        if self._per_listener.get(listener, 0) >= limit:
            return False
        return self._protected(listener) or self._total < self._broker_max

    def wait_for_slot(self, resume: Callable[[], None]) -> None:
        """``resume()`` once counts fall or limits rise (the acceptor checks again then)."""
        self._waiting.append(resume)

    def wake(self) -> None:
        waiting, self._waiting = self._waiting, []
        for resume in waiting:
            resume()

    # -- counting ---------------------------------------------------------------------------
    def inc(self, listener: str, address: str) -> int | None:
        """Count a connection just accepted from ``address``: None if it may stay, else the
        per-address limit it would break (then nothing is counted; the caller closes it)."""
        count = self._per_ip.get(address, 0)
        limit = self.max_for(address)
        if count >= limit:
            return limit
        self._per_ip[address] = count + 1
        self._per_listener[listener] = self._per_listener.get(listener, 0) + 1
        self._total += 1
        if self._protected(listener) and self._total > self._broker_max:
            self.close_excess()
        return None

    def dec(self, listener: str, address: str) -> None:
        count = self._per_ip.get(address, 0)
        if count <= 1:
            self._per_ip.pop(address, None)
        else:
            self._per_ip[address] = count - 1
        self._per_listener[listener] = max(0, self._per_listener.get(listener, 0) - 1)
        self._total = max(0, self._total - 1)
        if self._waiting:
            self.wake()

    def count(self, address: str) -> int:
        return self._per_ip.get(address, 0)

    @property
    def total(self) -> int:
        return self._total

    def listener_count(self, listener: str) -> int:
        return self._per_listener.get(listener, 0)

    # -- the broker-wide limit exceeded -------------------------------------------------------
    def close_excess(self) -> None:
        """Close the least recently used connections of unprotected listeners until the
        total (counting closes already under way) is back within ``max.connections``."""
        excess = self._total - self._broker_max
        if excess <= 0:
            return
        candidates = [conn for listener, server in self._servers.items()
                      if not self._protected(listener)
                      for conn in server.open_connections()]
        excess -= sum(1 for conn in candidates if conn.closing)
        if excess <= 0:
            return
        for conn in heapq.nsmallest(excess, (c for c in candidates if not c.closing),
                                    key=lambda c: c.last_active):
            _log.info("closing least recently used connection: max.connections exceeded",
                      peer=conn.peer, max_connections=self._broker_max)
            conn.close()


def _ip_key(ip: str) -> str:
    """An ip quota's address as connections are counted by; the name as it is when it
    does not resolve."""
    try:
        return _resolve(ip)
    except OSError:
        return ip


def _listener_value(config, listener: str, key: str, default: int) -> int:
    """``listener.name.<l>.<key>`` from the properties (Kafka's valuesWithPrefixOverride)."""
    value = config.originals.get(f"listener.name.{listener.lower()}.{key}")
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        _log.error("ignoring listener config", listener=listener, key=key, value=value)
        return default
