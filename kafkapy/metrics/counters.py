"""What the hot path counts: plain Python integers on slotted objects, nothing else.

Invariants:
- Only the event loop writes these (single owner, no locks: a prometheus_client
  Counter takes a lock per increment, these do not).  They are read at scrape time by
  ``kafkapy.metrics.collector``, on the same loop.
- One set per process, like Kafka's JVM-wide Yammer registry: in-process test brokers
  share them (the endpoint of each reports the process's counters).
- Per-request work is a dict lookup (resolved once per API, cached forever) and one
  ``observe``; per-append work is one dict lookup and two additions; nothing is
  per record.
- ``ApiStats.recent`` keeps the latest ``RECENT`` request times of an API (a ring):
  the quantiles of Kafka's TotalTimeMs histogram are computed from it at scrape time
  (Kafka's histograms are biased to the last minutes too; ours to the last requests).
- A topic's counters live in ``TOPICS`` from its first append or fetch until the
  collector sees the topic gone from the metadata cache; its counts then move to
  ``RETIRED`` so the all-topics series never go down (Kafka's allTopicsStats).
"""
from __future__ import annotations

import time

RECENT = 1024          # a power of two: the ring index is a mask
_MASK = RECENT - 1
now = time.monotonic   # request timing clock (asyncio's loop.time() is this clock too)
_VERSIONS = 64         # above every API's highest version (the connection checks ranges)


class ApiStats:
    """One API's requests (Kafka's RequestMetrics: RequestsPerSec by version, TotalTimeMs)."""

    __slots__ = ("name", "versions", "count", "total_ms", "recent")

    def __init__(self, name: str) -> None:
        self.name = name
        self.versions = [0] * _VERSIONS
        self.count = 0
        self.total_ms = 0.0
        self.recent = [0.0] * RECENT

    def observe(self, version: int, elapsed_ms: float) -> None:
        self.versions[version] += 1
        n = self.count
        self.count = n + 1
        self.total_ms += elapsed_ms
        self.recent[n & _MASK] = elapsed_ms

    def samples(self) -> list[float]:
        """The recent request times (at most RECENT), unordered."""
        return self.recent[:self.count] if self.count < RECENT else list(self.recent)


class _Both:
    """A Fetch counts under "Fetch" and under FetchConsumer or FetchFollower (Kafka)."""

    __slots__ = ("_first", "_second")

    def __init__(self, first: ApiStats, second: ApiStats) -> None:
        self._first = first
        self._second = second

    def observe(self, version: int, elapsed_ms: float) -> None:
        self._first.observe(version, elapsed_ms)
        self._second.observe(version, elapsed_ms)


#: api key -> stats; names of pseudo-APIs (FetchConsumer, FetchFollower) -> stats
APIS: dict[int, ApiStats] = {}
_NAMED: dict[str, ApiStats] = {}
FETCH_KEY = 1


def api_stats(api_key: int, name: str) -> ApiStats:
    """The stats an API's requests are observed on (created on the first request)."""
    stats = APIS.get(api_key)
    if stats is None:
        stats = APIS[api_key] = _named(name)
    return stats


def _named(name: str) -> ApiStats:
    stats = _NAMED.get(name)
    if stats is None:
        stats = _NAMED[name] = ApiStats(name)
    return stats


def fetch_stats(request, version: int) -> _Both:
    """Fetch plus FetchFollower (a broker's replica id, from v15 in replica_state) or
    FetchConsumer, as Kafka's RequestChannel counts it."""
    if version >= 15:
        state = request.replica_state
        follower = state is not None and state.replica_id >= 0
    else:
        follower = request.replica_id >= 0
    return _FETCH_FOLLOWER if follower else _FETCH_CONSUMER


def all_api_stats() -> list[ApiStats]:
    return list(_NAMED.values())


class TopicCounters:
    """Kafka's BrokerTopicMetrics of one topic (MessagesInPerSec, BytesInPerSec,
    BytesOutPerSec; the counts only, rates are Prometheus's job)."""

    __slots__ = ("messages_in", "bytes_in", "bytes_out")

    def __init__(self) -> None:
        self.messages_in = 0
        self.bytes_in = 0
        self.bytes_out = 0

    def add(self, other: "TopicCounters") -> None:
        self.messages_in += other.messages_in
        self.bytes_in += other.bytes_in
        self.bytes_out += other.bytes_out


TOPICS: dict[str, TopicCounters] = {}
RETIRED = TopicCounters()


def topic(name: str) -> TopicCounters:
    counters = TOPICS.get(name)
    if counters is None:
        counters = TOPICS[name] = TopicCounters()
    return counters


def appended(name: str, messages: int, size: int) -> None:
    """A leader append of ``messages`` records in ``size`` bytes (client or coordinator)."""
    counters = TOPICS.get(name) or topic(name)
    counters.messages_in += messages
    counters.bytes_in += size


def fetched(name: str, size: int) -> None:
    """Record bytes answered to a consumer (a follower's count as replication bytes out)."""
    (TOPICS.get(name) or topic(name)).bytes_out += size


def retire_topics(live) -> None:
    """Forget the counters of topics not in ``live`` (deleted); their counts stay in the
    all-topics totals."""
    for name in [n for n in TOPICS if n not in live]:
        RETIRED.add(TOPICS.pop(name))


def all_topics() -> TopicCounters:
    total = TopicCounters()
    total.add(RETIRED)
    for counters in TOPICS.values():
        total.add(counters)
    return total


class BrokerCounters:
    """Broker-wide counts: ReplicaManager's IsrShrinksPerSec / IsrExpandsPerSec /
    FailedIsrUpdatesPerSec, BrokerTopicMetrics' ReplicationBytesIn/OutPerSec, and
    kafkapy's own split of fetch bytes by how they were sent."""

    __slots__ = ("isr_shrinks", "isr_expands", "failed_isr_updates", "replication_bytes_in",
                 "replication_bytes_out", "sendfile_bytes", "copied_bytes")

    def __init__(self) -> None:
        for name in self.__slots__:
            setattr(self, name, 0)


BROKER = BrokerCounters()
_FETCH = _named("Fetch")
_FETCH_CONSUMER = _Both(_FETCH, _named("FetchConsumer"))
_FETCH_FOLLOWER = _Both(_FETCH, _named("FetchFollower"))
