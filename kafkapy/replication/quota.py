"""Replication throttles: Kafka 3.9's ReplicationQuotaManager (KIP-73).

Two quotas per broker, one per direction:

- the *leader* quota (``ReplicaManager.leader_quota``) bounds the bytes this broker
  sends to followers fetching throttled partitions from it; bound
  ``leader.replication.throttled.rate``, throttled partitions from the topic config
  ``leader.replication.throttled.replicas``;
- the *follower* quota (``ReplicaFetcherManager.quota``) bounds the bytes this broker
  fetches for throttled partitions it follows; bound
  ``follower.replication.throttled.rate``, partitions from
  ``follower.replication.throttled.replicas``.

Which partitions (Kafka's TopicConfigHandler.parseThrottledPartitions): a list of
``partition:broker`` entries, of which a broker keeps those naming itself, or
``*`` (every partition); an empty list: none.  Lists are read from the partition's
current log config (kept current by ``config.topic_configs``), parsed once per
list object.  Rates are read from the broker config the quota was given, at check time
(the effective dynamic value: per-broker, else cluster default, else Long.MAX_VALUE =
unthrottled).

The measure is Kafka's SimpleRate (``kafkapy.metrics.rate``, ``simple=True``) over
``replication.quota.window.num`` (11) samples
of ``replication.quota.window.size.seconds`` (1 s): the sum of the retained samples
divided by the time since the oldest sample started, at least one window.  A
sample whose last event is ``samples * window`` old is reset; ``samples + 1``
sample slots rotate (Kafka's SampledStat).  The quota is exceeded when that rate is
above the bound (Quota.acceptable: ``value <= bound``).

Kafka's decisions, which callers apply:
- leader (ReplicaManager.shouldLeaderThrottle): a follower fetch leaves out the data of
  a partition when the partition is throttled here, the fetching replica is not in the
  ISR, and the leader quota is exceeded; a delayed fetch does not count such a
  partition's bytes; the bytes of throttled partitions sent to followers are recorded
  (in-sync followers' too: the quota bounds all replication traffic), for every
  follower fetch answered (zero when none: Kafka's record of sizeOfThrottledPartitions);
- follower (ReplicaFetcherThread.shouldFollowerThrottle): a partition is left out of
  the fetch request when it is throttled here, not in sync (its lag, leader HW minus
  its fetch offset, known and zero after the last append) and the follower quota is
  exceeded; the record bytes answered for throttled partitions are recorded (zero for
  an answer without records).

One difference: Kafka 3.9's ZK-mode brokers take throttled-replica lists from config
change notifications (and a full pass at start-up) only, so lists a topic is *created*
with apply there after the next change or restart; here they apply at once.

Cost: callers ask ``bounded`` once per request (no rate set, the default: no throttle
decision can be yes) before any per-partition decision; a partition whose topic has no
throttled list costs one dict lookup; rates and windows are touched only for throttled
partitions.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import prometheus_client as prom

from kafkapy.metrics.rate import Rate

if TYPE_CHECKING:   # annotations only
    from kafkapy.clock import Clock
    from kafkapy.config.broker import BrokerConfig

LONG_MAX = 9223372036854775807
LEADER = "LeaderReplication"
FOLLOWER = "FollowerReplication"
ALL_REPLICAS = "*"

_RATE_KEYS = {LEADER: "leader.replication.throttled.rate",
              FOLLOWER: "follower.replication.throttled.rate"}
_REPLICAS_KEYS = {LEADER: "leader.replication.throttled.replicas",
                  FOLLOWER: "follower.replication.throttled.replicas"}
_SAMPLES_KEY = "replication.quota.window.num"
_WINDOW_KEY = "replication.quota.window.size.seconds"
DEFAULT_SAMPLES = 11
DEFAULT_WINDOW_SECONDS = 1

# Kafka's metric "byte-rate" in groups LeaderReplication / FollowerReplication.
_BYTE_RATE = prom.Gauge("kafkapy_replication_throttled_byte_rate",
                        "Byte rate of throttled replication traffic (Kafka's byte-rate)",
                        ["type"])
_THROTTLED_BYTES = prom.Counter("kafkapy_replication_throttled_bytes",
                                "Bytes of throttled partitions replicated", ["type"])


class ReplicationQuota:
    """One direction's quota (Kafka's ReplicationQuotaManager) on one broker.

    ``node_id`` picks this broker's entries from the throttled-replica lists; ``config``
    (the broker's, effective values) gives the bound, read at each check so a dynamic
    change applies from the next one, and the sample windows, read at the first
    measure; ``clock`` times the samples.
    """

    def __init__(self, kind: str, node_id: int, *, config: BrokerConfig, clock: Clock) -> None:
        self.kind = kind
        self.node_id = node_id
        self._config = config
        self._clock = clock
        self._replicas_key = _REPLICAS_KEYS[kind]
        self._rate_key = _RATE_KEYS[kind]
        self._window_keys = (_SAMPLES_KEY, _WINDOW_KEY)   # the rate's sample count, size
        self._rate: Rate | None = None
        # topic -> (the list object parsed, ALL_REPLICAS or a frozenset of partitions)
        self._parsed: dict[str, tuple[list, object]] = {}
        self._gauge = _BYTE_RATE.labels(type=kind)
        self._counter = _THROTTLED_BYTES.labels(type=kind)

    # -- which partitions ------------------------------------------------------------
    def is_throttled(self, partition) -> bool:
        """Kafka's isThrottled: the partition's topic lists it for this broker."""
        replicas = partition.log.config.values.get(self._replicas_key)
        if not replicas:
            return False
        return self.throttled_in(partition.topic, replicas, partition.index)

    def throttled_in(self, topic: str, replicas: list, index: int) -> bool:
        cached = self._parsed.get(topic)
        if cached is None or cached[0] is not replicas:
            cached = self._parsed[topic] = (replicas, parse_throttled(replicas, self.node_id))
        which = cached[1]
        return which == ALL_REPLICAS or index in which  # type: ignore[operator]

    # -- the rate ----------------------------------------------------------------------
    def bound(self) -> int:
        value = self._config.get(self._rate_key, LONG_MAX)
        return LONG_MAX if value is None else int(value)

    def bounded(self) -> bool:
        """Whether a rate is set: without one the quota is never exceeded, so no partition
        is throttled whatever the lists (the broker-wide check callers make first)."""
        return self.bound() < LONG_MAX

    def is_exceeded(self) -> bool:
        """Kafka's isQuotaExceeded: the measured rate is above the bound."""
        bound = self.bound()
        if bound >= LONG_MAX:
            return False    # no rate can exceed it: skip the measure
        return self._stat().measure(self._clock.time_ms()) > bound

    def record(self, nbytes: int) -> None:
        """Kafka's record: counted whether or not the quota is exceeded.  Zero is recorded
        too, as Kafka does for every follower fetch answered: it keeps the samples (and
        so the span the rate is averaged over) alive.  The gauge follows non-zero records."""
        stat = self._stat()
        now = self._clock.time_ms()
        stat.record(nbytes, now)
        if nbytes > 0:
            self._counter.inc(nbytes)
            self._gauge.set(stat.measure(now))

    def rate(self) -> float:
        """The measured byte rate now (Kafka's byte-rate metric)."""
        return self._stat().measure(self._clock.time_ms())

    def _stat(self) -> Rate:
        if self._rate is None:
            config = self._config
            samples_key, window_key = self._window_keys
            samples = int(config.get(samples_key, DEFAULT_SAMPLES) or DEFAULT_SAMPLES)
            seconds = int(config.get(window_key, DEFAULT_WINDOW_SECONDS)
                          or DEFAULT_WINDOW_SECONDS)
            self._rate = Rate(samples, seconds * 1000, simple=True)
        return self._rate

    # -- Kafka's two decisions -----------------------------------------------------------
    def should_leader_throttle(self, partition, replica_id: int) -> bool:
        """ReplicaManager.shouldLeaderThrottle: not in the ISR, throttled, over quota."""
        return (self.is_throttled(partition) and replica_id not in partition.state.isr
                and self.is_exceeded())

    def should_follower_throttle(self, partition, lag: int | None) -> bool:
        """shouldFollowerThrottle: not in sync (lag unknown or > 0), throttled, over quota."""
        return ((lag is None or lag > 0) and self.is_throttled(partition)
                and self.is_exceeded())


def parse_throttled(replicas: list, node_id: int) -> object:
    """TopicConfigHandler.parseThrottledPartitions: ``*`` -> ALL_REPLICAS, else the
    partitions of the ``partition:broker`` entries naming ``node_id``."""
    items = [str(item).strip() for item in replicas]
    items = [item for item in items if item]
    if items == [ALL_REPLICAS]:
        return ALL_REPLICAS
    partitions = set()
    for item in items:
        partition, _, broker = item.partition(":")
        try:
            if int(broker) == node_id:
                partitions.add(int(partition))
        except ValueError:
            continue    # the topic config validator refuses these; skip rather than fail
    return frozenset(partitions)
