"""Replica fetchers: a follower copies its partitions' logs from their leaders.

Kafka 3.9's ReplicaFetcherManager / ReplicaFetcherThread (ZK mode), as asyncio tasks:

- ``ReplicaFetcherManager`` is made before the replica manager, which is given it and
  calls ``add_partitions({(topic, p): (leader_id, fetch_offset)})`` after
  ``Partition.make_follower`` and ``remove_partitions(keys)`` when a partition stops
  following (it leads, is stopped or deleted); ``await shutdown()`` at broker stop.
  Since the replica manager is made with the fetcher manager, the fetcher manager
  cannot be given the replica manager; it is given the two things its fetchers use of
  it, as callables: ``partition_of(key)`` (the hosted Partition, None when there is
  none) and ``high_watermark_moved(key)`` (wakes what waits on a follower's high
  watermark: consumers fetching from it, KIP-392).  Called only once fetching runs,
  they reach a replica manager made after the fetchers (the server passes lambdas
  over its attribute), and nothing is assigned into the manager later.  The broker
  epoch changes when the ZooKeeper session is replaced: ``broker_epoch`` is a callable
  too.
- ``num.replica.fetchers`` fetchers per leader broker: a partition goes to fetcher
  ``abs(31 * topic.hashCode() + partition) % num.replica.fetchers`` (Kafka's
  AbstractFetcherManager.getFetcherId, Java's String.hashCode); each has its own
  connection, client id ``broker-<id>-fetcher-<fetcher id>`` and fetch session;
  ``resize(n)`` moves every partition to the fetcher its id maps to with n fetchers (Kafka's
  resizeThreadPool); the broker reads ``num.replica.fetchers`` at start-up only and does
  not call it (a dynamic change is stored and takes effect at the next start).
- Each fetcher sends Fetch (Kafka 3.9's replica version 17; 12 with topic names
  while a topic id is unknown) with ``replica_state`` = (node id, broker epoch),
  ``replica.fetch.wait.max.ms`` / ``.min.bytes`` / ``.response.max.bytes`` /
  ``.max.bytes``, READ_UNCOMMITTED, to the leader's endpoint on the inter-broker
  listener (the request is ``fetch_request``'s, encoded by hand to Kafka's bytes), in an
  incremental fetch session (KIP-227, ``fetch_session_handler``): after
  the first full fetch only partitions added or changed are sent, partitions no
  longer fetched (removed, or backing off) are forgotten, and the leader answers
  only partitions with news.
- Each partition is fetched from its own log end with its leader-epoch cache's
  latest epoch as ``last_fetched_epoch``; a leader whose log diverged answers
  ``diverging_epoch`` and the follower truncates (``truncation``, Kafka's
  truncateOnFetchResponse).  Nothing else truncates a follower by its HW.
- An answer is applied only to a partition still fetched from the offset the
  request carried (a partition re-added meanwhile ignores the stale answer).
  Records are appended as they are (``Partition.append_as_follower``); then the
  follower's HW = min(log end, leader's HW) and its log start follows the leader's.
- OFFSET_OUT_OF_RANGE: ListOffsets (replica id = this broker) for the leader's end:
  truncate down to it when the local log is longer, else for the leader's start:
  start the log over there when it is past the local end (Kafka's
  handleOutOfRangeError).  FENCED_LEADER_EPOCH when the request carried the local
  epoch, and storage errors, drop the partition until the next LeaderAndIsr adds
  it again; every other error (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION:
  the leader may not have had its LeaderAndIsr yet) delays that partition by
  ``replica.fetch.backoff.ms``; a connection failure delays the whole fetcher and
  closes its session (the next fetch is full).
- Replication throttle (Kafka's follower quota, ``quota``): a partition throttled on
  this broker and not in sync (its lag after the last append not zero) is left out of
  the request while the follower quota is exceeded; the record bytes answered for
  throttled partitions are recorded (zero included, as Kafka's processPartitionData);
  the lag is set by the first answer and then by each answer that took records.

Tests may pass ``connect`` (leader id -> an object with ``send(request, timeout_s)``,
``connected``, ``close()``) and ``autostart=False``, then step every fetcher with
``await manager.fetch_round()``.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Awaitable, Callable

import structlog

from kafkapy.jvm import int32, utils_abs
from kafkapy.jvm import string_hash as java_string_hash
from kafkapy.network.client import BrokerConnection
from kafkapy.network.links import Links
from kafkapy.protocol.errors import ErrorCode, KafkaError, error_name
from kafkapy.protocol.messages import REQUESTS
from kafkapy.protocol.topic_partition import TopicPartition
from kafkapy.replication import stage_trace, truncation
from kafkapy.replication.fetch_request import (FetchPartition, FetchTopic, ForgottenTopic,
                                               ReplicaFetchRequest, ReplicaState)
from kafkapy.replication.fetch_session_handler import FetchSessionHandler, PartitionData
from kafkapy.replication.quota import FOLLOWER, ReplicationQuota

if TYPE_CHECKING:   # annotations only
    from kafkapy.clock import Clock
    from kafkapy.config.broker import BrokerConfig
    from kafkapy.metadata.cache import MetadataCache
    from kafkapy.replication.partition import Partition

_log = structlog.get_logger("kafkapy.replication.fetcher")

FETCH_VERSION = 17          # Kafka 3.9 (IBP 3.9): MetadataVersion.fetchRequestVersion
FETCH_VERSION_BY_NAME = 12  # the last version naming topics (RemoteLeaderEndPoint)
LIST_OFFSETS_VERSION = 9    # Kafka 3.9 MetadataVersion.listOffsetRequestVersion
_LATEST, _EARLIEST = -1, -2
_READ_UNCOMMITTED = 0
_ListOffsets = REQUESTS[2]
_SESSION_ERRORS = frozenset({ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
                             ErrorCode.INVALID_FETCH_SESSION_EPOCH})

# Errors after which the partition leaves the fetcher until LeaderAndIsr adds it again.
_DROP = frozenset({ErrorCode.KAFKA_STORAGE_ERROR})

Connect = Callable[[int], Awaitable[object]]
PartitionOf = Callable[[TopicPartition], "Partition | None"]


def fetcher_id(topic: str, partition: int, num_fetchers: int) -> int:
    """Kafka's getFetcherId: Utils.abs(31 * topic.hashCode + partition) % numFetchers."""
    return utils_abs(int32(31 * java_string_hash(topic) + partition)) % num_fetchers


@dataclass(slots=True)
class FetchState:
    """One partition in a fetcher: where it fetches from and when it may next."""

    fetch_offset: int
    delayed_until_ms: int = 0
    # Kafka's PartitionFetchState.lag: leader HW minus the fetch offset after the last
    # append that took bytes; None until then.  0 = in sync (never throttled).
    lag: int | None = None


@dataclass(frozen=True, slots=True)
class _Shared:
    """What every fetcher of one broker uses: the manager's collaborators."""

    node_id: int
    broker_epoch: Callable[[], int]
    config: BrokerConfig
    clock: Clock
    cache: MetadataCache        # leaders' endpoints, topic ids
    listener: str               # the inter-broker listener the leaders are reached on
    partition_of: PartitionOf
    high_watermark_moved: Callable[[TopicPartition], None]
    quota: ReplicationQuota
    connect: Connect | None
    links: Links | None         # which leaders are reachable (None: all)


class ReplicaFetcherManager:
    """Which fetcher (leader, fetcher id) each followed partition is fetched by."""

    def __init__(self, *, node_id: int, broker_epoch: Callable[[], int], config: BrokerConfig,
                 clock: Clock, cache: MetadataCache, listener: str, partition_of: PartitionOf,
                 high_watermark_moved: Callable[[TopicPartition], None],
                 connect: Connect | None = None, autostart: bool = True,
                 links: Links | None = None) -> None:
        """``listener``: the inter-broker listener; ``partition_of`` and
        ``high_watermark_moved``: the replica manager's, as callables (module docstring);
        ``links``: which leaders are reachable (None: all); ``connect``, ``autostart``:
        for tests."""
        self._autostart = autostart
        self.num_fetchers = max(1, int(_setting(config, "num.replica.fetchers", 1)))
        # Follower-side replication throttle (Kafka's quotas.follower), shared by fetchers.
        self.quota = ReplicationQuota(FOLLOWER, node_id, config=config, clock=clock)
        self._shared = _Shared(node_id, broker_epoch, config, clock, cache, listener,
                               partition_of, high_watermark_moved, self.quota, connect, links)
        self._fetchers: dict[tuple[int, int], _LeaderFetcher] = {}
        self._shut_down = False   # a LeaderAndIsr handled during shutdown starts nothing

    def add_partitions(self, partitions: dict[TopicPartition, tuple[int, int]]) -> None:
        """Fetch each ``key`` from ``leader_id`` starting at ``fetch_offset``; a partition
        fetched from another leader before moves (Kafka's addFetcherForPartitions)."""
        if self._shut_down:
            return
        for key, (leader_id, fetch_offset) in partitions.items():
            target = (leader_id, fetcher_id(key[0], key[1], self.num_fetchers))
            for other, fetcher in self._fetchers.items():
                if other != target:
                    fetcher.remove(key)
            fetcher = self._fetchers.get(target)
            if fetcher is None:
                fetcher = self._fetchers[target] = _LeaderFetcher(self._shared, leader_id,
                                                                  target[1])
                if self._autostart:
                    fetcher.start()
            fetcher.add(key, fetch_offset)
        self._stop_idle()

    def resize(self, num_fetchers: int) -> None:
        """Kafka's resizeThreadPool (a dynamic ``num.replica.fetchers``): every partition
        moves to the fetcher its id names now, from the offset it had reached."""
        num_fetchers = max(1, num_fetchers)
        if num_fetchers == self.num_fetchers:
            return
        moving = {key: (leader_id, state.fetch_offset)
                  for (leader_id, _), fetcher in self._fetchers.items()
                  for key, state in fetcher.partitions.items()}
        for fetcher in self._fetchers.values():
            fetcher.stop()
        self._fetchers.clear()
        self.num_fetchers = num_fetchers
        self.add_partitions(moving)

    def remove_partitions(self, keys) -> None:
        for key in keys:
            for fetcher in self._fetchers.values():
                fetcher.remove(key)
        self._stop_idle()

    def fetch_state(self, key: TopicPartition) -> tuple[int, FetchState] | None:
        """(leader id, state) of a fetched partition, else None."""
        for (leader_id, _), fetcher in self._fetchers.items():
            state = fetcher.partitions.get(key)
            if state is not None:
                return leader_id, state
        return None

    def fetcher_of(self, key: TopicPartition):
        """The fetcher fetching ``key`` (its ``leader_id``, ``fetcher_id``, ``session``)."""
        for fetcher in self._fetchers.values():
            if key in fetcher.partitions:
                return fetcher
        return None

    async def fetch_round(self) -> None:
        """One fetch round trip by every fetcher (tests that step replication by hand)."""
        for fetcher in list(self._fetchers.values()):
            await fetcher.step()

    def _stop_idle(self) -> None:
        """Kafka's shutdownIdleFetcherThreads: a fetcher with no partition stops."""
        for target in [t for t, f in self._fetchers.items() if not f.partitions]:
            self._fetchers.pop(target).stop()

    async def shutdown(self) -> None:
        self._shut_down = True
        fetchers = list(self._fetchers.values())
        self._fetchers.clear()
        for fetcher in fetchers:
            fetcher.stop()
        for fetcher in fetchers:
            await fetcher.wait_stopped()


class _LeaderFetcher:
    """One fetch loop towards one leader broker (Kafka's ReplicaFetcherThread)."""

    def __init__(self, shared: _Shared, leader_id: int, fetcher_id: int) -> None:
        self._shared = shared
        self._quota = shared.quota
        self._clock = shared.clock
        self.leader_id = leader_id
        self.fetcher_id = fetcher_id
        self.partitions: dict[TopicPartition, FetchState] = {}
        self._delayed_until_ms = 0      # the latest end of a partition's backoff
        self.session = FetchSessionHandler(leader_id)
        config = shared.config     # read when the fetcher is made, as Kafka's thread does
        self._max_wait_ms = config["replica.fetch.wait.max.ms"]
        self._min_bytes = config["replica.fetch.min.bytes"]
        self._max_bytes = config["replica.fetch.response.max.bytes"]
        self._partition_max_bytes = config["replica.fetch.max.bytes"]
        self._backoff_ms = config["replica.fetch.backoff.ms"]
        self._timeout_s = max(config["replica.socket.timeout.ms"], self._max_wait_ms + 1000) / 1000
        self._client_id = f"broker-{shared.node_id}-fetcher-{fetcher_id}"
        self._conn = None
        self._task: asyncio.Task | None = None
        self._changed = asyncio.Event()
        # Checked by the loop too: a cancel that lands while a closed connection fails
        # the pending send is swallowed by asyncio.wait_for (Python 3.11).
        self._stopped = False

    # -- membership ---------------------------------------------------------------------
    def add(self, key: TopicPartition, fetch_offset: int) -> None:
        self.partitions[key] = FetchState(fetch_offset)
        self._changed.set()

    def remove(self, key: TopicPartition) -> None:
        if self.partitions.pop(key, None) is not None:
            self._changed.set()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"fetcher-{self.leader_id}-{self.fetcher_id}")

    def stop(self) -> None:
        self._stopped = True
        self._changed.set()
        if self._task is not None:
            self._task.cancel()
        self._close()

    async def wait_stopped(self) -> None:
        if self._task is not None:
            try:
                await self._task
            except asyncio.CancelledError:
                pass

    # -- the loop -------------------------------------------------------------------------
    async def _run(self) -> None:
        while not self._stopped:
            wait_ms = await self.step()
            if wait_ms != 0:
                await self._wait(wait_ms)

    async def step(self) -> int | None:
        """One round: fetch what is ready.  Returns how long to wait before the next
        (0: at once, None: until partitions change)."""
        ready = self._ready()
        if not ready and not self.session.session_partitions:
            return self._next_ready_in_ms()
        try:
            if not await self._fetch_once(ready):
                # Nothing local to fetch for yet, or nothing ready.
                return self._backoff_ms if ready else self._next_ready_in_ms()
            return 0
        except asyncio.CancelledError:
            raise
        except (ConnectionError, asyncio.TimeoutError, OSError) as err:
            self.session.handle_error()
            if self._stopped:
                return None
            _log.info("replica fetch failed", leader=self.leader_id, fetcher=self.fetcher_id,
                      error=str(err))
            self._close()
            return self._backoff_ms
        except Exception:  # a bug must not end replication from this leader for good
            self.session.handle_error()
            _log.exception("replica fetch failed", leader=self.leader_id)
            self._close()
            return self._backoff_ms

    def _ready(self) -> dict[TopicPartition, FetchState]:
        now = self._clock.time_ms()
        if now >= self._delayed_until_ms:
            return self.partitions      # no partition is backing off (the usual round)
        return {k: s for k, s in self.partitions.items() if s.delayed_until_ms <= now}

    def _next_ready_in_ms(self) -> int | None:
        if not self.partitions:
            return None
        now = self._clock.time_ms()
        return max(0, min(s.delayed_until_ms for s in self.partitions.values()) - now)

    async def _wait(self, timeout_ms: int | None) -> None:
        """Sleep up to ``timeout_ms`` (forever if None); partition changes wake it."""
        if self._stopped:
            return
        self._changed.clear()
        try:
            await asyncio.wait_for(self._changed.wait(),
                                   None if timeout_ms is None else timeout_ms / 1000)
        except asyncio.TimeoutError:
            pass

    async def _fetch_once(self, ready: dict[TopicPartition, FetchState]) -> bool:
        """One Fetch round trip and its answers; False when nothing could be asked."""
        built = self._build(ready)
        if built is None:
            return False
        request, sent = built
        conn = await self._connection()
        if self._stopped:
            # stop() cancelled us as the connection opened: asyncio.wait_for (Python 3.11)
            # then returns the connection and drops the cancel; a Fetch sent now could wait
            # for its whole timeout at the leader
            self._close()
            return False
        if stage_trace.ENABLED:
            self._trace_sent(sent)
        response = await conn.send(request, timeout_s=self._timeout_s)
        received = stage_trace.now() if stage_trace.ENABLED else 0
        version = request.API_VERSION
        answers = self.session.response_keys(response, version)
        if not self.session.handle_response(response, version, answers):
            if response.error_code == ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR:
                raise ConnectionError("fetch session topic id error")
            if response.error_code and response.error_code not in _SESSION_ERRORS:
                raise ConnectionError(f"fetch answered error {error_name(response.error_code)}")
            return True   # the next fetch is full
        for key, data in answers.items():
            if key in sent:
                await self._apply(key, sent[key], data)
                if stage_trace.ENABLED and data.records:
                    self._trace_applied(key, received)
        return True

    def _trace_sent(self, sent: dict) -> None:
        now = stage_trace.now()
        for key, (_, offset, _) in sent.items():
            stage_trace.event("S", key[0], key[1], self._shared.node_id, offset, now)

    def _trace_applied(self, key: TopicPartition, received: int) -> None:
        partition = self._shared.partition_of(key)
        if partition is not None:
            stage_trace.event("X", key[0], key[1], self._shared.node_id,
                              partition.log.log_end_offset, received, stage_trace.now())

    async def _connection(self):
        if self._conn is not None and self._conn.connected:
            return self._conn
        self._close()
        shared = self._shared
        if shared.connect is not None:
            self._conn = await shared.connect(self.leader_id)
            return self._conn
        endpoint = shared.cache.brokers_for(shared.listener).get(self.leader_id)
        if endpoint is None:
            raise ConnectionError(f"no endpoint known for broker {self.leader_id} on "
                                  f"listener {shared.listener}")
        conn = BrokerConnection(self._client_id, self._timeout_s, links=shared.links)
        await conn.connect(endpoint.host, endpoint.port, self._timeout_s)
        self._conn = conn
        return conn

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # -- requests ---------------------------------------------------------------------------
    def _build(self, ready: dict[TopicPartition, FetchState]):
        """(Fetch request, {key: (state, fetch offset, leader epoch)} of every partition in
        the session this round), or None when there is nothing to send."""
        shared = self._shared
        wanted: dict[TopicPartition, PartitionData] = {}
        sent: dict[TopicPartition, tuple[FetchState, int, int]] = {}
        throttling = self._quota.bounded()   # no rate set: no partition checks
        for key, state in ready.items():
            partition = shared.partition_of(key)
            if partition is None or partition.is_leader:
                continue
            if throttling and self._quota.should_follower_throttle(partition, state.lag):
                continue    # Kafka: left out of the request (and so of the session)
            log = partition.log
            if state.fetch_offset != log.log_end_offset:
                # Something else moved the log end (a truncation): appends must go on
                # from the log end, byte for byte.
                _log.info("fetch offset reset to the log end", partition=_name(key),
                          fetch_offset=state.fetch_offset, log_end_offset=log.log_end_offset)
                state.fetch_offset = log.log_end_offset
            epoch = partition.leader_epoch
            wanted[key] = PartitionData(
                _topic_id(shared.cache, key[0]), state.fetch_offset, log.log_start_offset,
                self._partition_max_bytes, epoch, truncation.last_fetched_epoch(partition))
            sent[key] = (state, state.fetch_offset, epoch)
        data = self.session.build(wanted)
        if not data.session_partitions and not data.to_forget:
            return None
        version = FETCH_VERSION if data.can_use_topic_ids else FETCH_VERSION_BY_NAME
        request = ReplicaFetchRequest(
            version, ReplicaState(shared.node_id, shared.broker_epoch()),
            max_wait_ms=self._max_wait_ms, min_bytes=self._min_bytes,
            max_bytes=self._max_bytes, isolation_level=_READ_UNCOMMITTED,
            session_id=data.session_id, session_epoch=data.epoch,
            topics=_fetch_topics(data.to_send),
            forgotten_topics_data=_forgotten(data.to_forget + (
                data.to_replace if version >= 13 else [])),
            rack_id="")
        return request, sent

    # -- answers ------------------------------------------------------------------------------
    async def _apply(self, key: TopicPartition, sent: tuple[FetchState, int, int], data) -> None:
        """One partition's answer (Kafka's processFetchRequest for one partition)."""
        state, sent_offset, sent_epoch = sent
        partition = self._shared.partition_of(key)
        if (self.partitions.get(key) is not state or state.fetch_offset != sent_offset
                or partition is None or partition.is_leader
                or partition.leader_epoch != sent_epoch):
            return  # removed, re-added or changed while the fetch was in flight
        error = data.error_code
        try:
            if error == 0:
                self._apply_data(partition, state, data)
            elif error == ErrorCode.OFFSET_OUT_OF_RANGE:
                await self._out_of_range(key, partition, state)
            elif error == ErrorCode.FENCED_LEADER_EPOCH:
                _log.info("leader epoch fenced; waiting for LeaderAndIsr", partition=_name(key),
                          leader=self.leader_id, epoch=partition.leader_epoch)
                self.remove(key)
            else:
                self._delay(key, state, error)
        except KafkaError as err:
            if err.code in _DROP:
                _log.error("replica fetch stopped for partition", partition=_name(key),
                           error=ErrorCode(err.code).name, message=err.message)
                self.remove(key)
            else:
                self._delay(key, state, err.code, err.message)

    def _apply_data(self, partition, state: FetchState, data) -> None:
        diverging = data.diverging_epoch
        if diverging is not None and (diverging.epoch >= 0 or diverging.end_offset >= 0):
            # Kafka: truncate, and take nothing else from this answer (the next fetch
            # brings the high watermark and log start).
            state.fetch_offset = truncation.truncate_diverged(partition, diverging.epoch,
                                                              diverging.end_offset)
            return
        high_watermark = partition.high_watermark
        records = data.records
        if records:
            partition.append_as_follower(records)
        if self._quota.is_throttled(partition):
            # Kafka's processPartitionData: records.sizeInBytes, zero included.
            self._quota.record(len(records) if records else 0)
        log_end = partition.log.log_end_offset
        if log_end != state.fetch_offset or state.lag is None:
            # Kafka: the lag moves when bytes were taken, and is set by the first answer
            # (validBytes > 0 || lag.isEmpty): a follower caught up from the start is in sync.
            state.lag = max(0, data.high_watermark - log_end)
        state.fetch_offset = log_end
        partition.update_follower_high_watermark(data.high_watermark, data.log_start_offset)
        if partition.high_watermark != high_watermark:
            # Consumers long-polling this follower (KIP-392) read up to its HW.
            self._shared.high_watermark_moved((partition.topic, partition.index))

    async def _out_of_range(self, key: TopicPartition, partition, state: FetchState) -> None:
        """Kafka's handleOutOfRangeError (follower side)."""
        log = partition.log
        leader_end = await self._leader_offset(key, partition, _LATEST)
        if leader_end < log.log_end_offset:
            log.truncate_to(leader_end)
        else:
            leader_start = await self._leader_offset(key, partition, _EARLIEST)
            if leader_start > log.log_end_offset:
                log.truncate_fully_and_start_at(leader_start)
        _log.info("follower fetch offset out of range", partition=_name(key),
                  fetch_offset=state.fetch_offset, now=log.log_end_offset)
        if log.log_end_offset == state.fetch_offset:
            self._delay(key, state, ErrorCode.OFFSET_OUT_OF_RANGE)  # nothing to change: retry later
        state.fetch_offset = log.log_end_offset

    async def _leader_offset(self, key: TopicPartition, partition, timestamp: int) -> int:
        request = _ListOffsets[LIST_OFFSETS_VERSION](
            replica_id=self._shared.node_id, isolation_level=_READ_UNCOMMITTED, timeout_ms=0,
            topics=[_ListOffsets.ListOffsetsTopic(name=key[0], partitions=[
                _ListOffsets.ListOffsetsTopic.ListOffsetsPartition(
                    partition_index=key[1], current_leader_epoch=partition.leader_epoch,
                    timestamp=timestamp, max_num_offsets=1)])])
        conn = await self._connection()
        response = await conn.send(request, timeout_s=self._timeout_s)
        answer = response.topics[0].partitions[0]
        if answer.error_code:
            raise KafkaError(answer.error_code, f"ListOffsets({timestamp}) from the leader")
        return answer.offset

    def _delay(self, key: TopicPartition, state: FetchState, error: int,
               message: str | None = None) -> None:
        _log.info("replica fetch error; backing off", partition=_name(key), leader=self.leader_id,
                  error=error_name(error), message=message, backoff_ms=self._backoff_ms)
        state.delayed_until_ms = self._clock.time_ms() + self._backoff_ms
        self._delayed_until_ms = max(self._delayed_until_ms, state.delayed_until_ms)


def _fetch_topics(to_send: dict[TopicPartition, PartitionData]) -> list:
    """FetchTopics in order; consecutive partitions of one topic share one (Kafka's)."""
    topics: list[FetchTopic] = []
    for (name, index), data in to_send.items():
        if not topics or topics[-1].topic != name:
            topics.append(FetchTopic(name, data.topic_id, []))
        topics[-1].partitions.append(FetchPartition(
            index, data.current_leader_epoch, data.fetch_offset, data.last_fetched_epoch,
            data.log_start_offset, data.max_bytes))
    return topics


def _forgotten(items) -> list:
    by_topic: dict = {}
    for topic_id, (name, index) in items:
        by_topic.setdefault((name, topic_id), []).append(index)
    return [ForgottenTopic(name, topic_id, indexes)
            for (name, topic_id), indexes in by_topic.items()]


def _setting(config, key: str, default):
    try:
        value = config[key]
    except (KeyError, TypeError):
        return default
    return default if value is None else value


def _topic_id(cache: MetadataCache, name: str):
    topic = cache.topics.get(name)
    return topic.topic_id if topic is not None else None


def _name(key: TopicPartition) -> str:
    return f"{key[0]}-{key[1]}"
