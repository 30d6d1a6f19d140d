"""Replica fetchers: a follower copies its partitions' logs from their leaders.

Kafka's ReplicaFetcherManager / ReplicaFetcherThread (ZK mode, one fetcher per
source broker: ``num.replica.fetchers`` is not honoured yet), as asyncio tasks:

- ``ReplicaFetcherManager(broker)`` is ``broker.replica_fetchers``; the replica
  manager calls ``add_partitions({(topic, p): (leader_id, fetch_offset)})`` after
  ``Partition.make_follower`` and ``remove_partitions(keys)`` when a partition stops
  following (it leads, is stopped or deleted); ``await shutdown()`` at broker stop.
- One ``_LeaderFetcher`` task per leader broker sends Fetch (Kafka 3.9's replica
  version 17; 12 with topic names while a topic id is unknown) with ``replica_state``
  = (node id, broker epoch), ``replica.fetch.wait.max.ms`` / ``.min.bytes`` /
  ``.response.max.bytes`` / ``.max.bytes``, READ_UNCOMMITTED, no fetch session, to
  the leader's endpoint on the inter-broker listener (``BrokerConnection``).
- Each partition is fetched from its own log end; its leader-epoch cache's latest
  epoch goes as ``last_fetched_epoch``, so a leader whose log diverged answers
  ``diverging_epoch`` and the follower truncates as Kafka's
  AbstractFetcherThread.truncateOnFetchResponse does.
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
  ``replica.fetch.backoff.ms``; a connection failure delays the whole fetcher.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass

import structlog

from kafkapy.network.client import BrokerConnection
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.protocol.messages import REQUESTS

_log = structlog.get_logger("kafkapy.replication.fetcher")

PartitionKey = tuple[str, int]
FETCH_VERSION = 17          # Kafka 3.9 (IBP 3.9): MetadataVersion.fetchRequestVersion
FETCH_VERSION_BY_NAME = 12  # the last version naming topics (RemoteLeaderEndPoint)
LIST_OFFSETS_VERSION = 9    # Kafka 3.9 MetadataVersion.listOffsetRequestVersion
_LATEST, _EARLIEST = -1, -2
_READ_UNCOMMITTED = 0
_Fetch = REQUESTS[1]
_ListOffsets = REQUESTS[2]

# Errors after which the partition leaves the fetcher until LeaderAndIsr adds it again.
_DROP = frozenset({ErrorCode.KAFKA_STORAGE_ERROR})


@dataclass(slots=True)
class FetchState:
    """One partition in a fetcher: where it fetches from and when it may next."""

    fetch_offset: int
    delayed_until_ms: int = 0


class ReplicaFetcherManager:
    """``broker.replica_fetchers``: which leader each followed partition is fetched from."""

    def __init__(self, broker) -> None:
        self._broker = broker
        self._fetchers: dict[int, _LeaderFetcher] = {}
        self._shut_down = False   # a LeaderAndIsr handled during shutdown starts nothing

    def add_partitions(self, partitions: dict[PartitionKey, tuple[int, int]]) -> None:
        """Fetch each ``key`` from ``leader_id`` starting at ``fetch_offset``; a partition
        fetched from another leader before moves (Kafka's addFetcherForPartitions)."""
        if self._shut_down:
            return
        for key, (leader_id, fetch_offset) in partitions.items():
            for other_id, fetcher in self._fetchers.items():
                if other_id != leader_id:
                    fetcher.remove(key)
            fetcher = self._fetchers.get(leader_id)
            if fetcher is None:
                fetcher = self._fetchers[leader_id] = _LeaderFetcher(self._broker, leader_id)
                fetcher.start()
            fetcher.add(key, fetch_offset)
        self._stop_idle()

    def remove_partitions(self, keys) -> None:
        for key in keys:
            for fetcher in self._fetchers.values():
                fetcher.remove(key)
        self._stop_idle()

    def fetch_state(self, key: PartitionKey) -> tuple[int, FetchState] | None:
        """(leader id, state) of a fetched partition, else None."""
        for leader_id, fetcher in self._fetchers.items():
            state = fetcher.partitions.get(key)
            if state is not None:
                return leader_id, state
        return None

    def _stop_idle(self) -> None:
        """Kafka's shutdownIdleFetcherThreads: a fetcher with no partition stops."""
        for leader_id in [i for i, f in self._fetchers.items() if not f.partitions]:
            self._fetchers.pop(leader_id).stop()

    async def shutdown(self) -> None:
        self._shut_down = True
        fetchers = list(self._fetchers.values())
        self._fetchers.clear()
        for fetcher in fetchers:
            fetcher.stop()
        for fetcher in fetchers:
            await fetcher.wait_stopped()


class _LeaderFetcher:
    """The fetch loop towards one leader broker."""

    def __init__(self, broker, leader_id: int) -> None:
        self._broker = broker
        self.leader_id = leader_id
        self.partitions: dict[PartitionKey, FetchState] = {}
        config = broker.config
        self._max_wait_ms = config["replica.fetch.wait.max.ms"]
        self._min_bytes = config["replica.fetch.min.bytes"]
        self._max_bytes = config["replica.fetch.response.max.bytes"]
        self._partition_max_bytes = config["replica.fetch.max.bytes"]
        self._backoff_ms = config["replica.fetch.backoff.ms"]
        self._timeout_s = max(config["replica.socket.timeout.ms"], self._max_wait_ms + 1000) / 1000
        self._client_id = f"broker-{broker.node_id}-fetcher-0"
        self._conn: BrokerConnection | None = None
        self._task: asyncio.Task | None = None
        self._changed = asyncio.Event()
        # Checked by the loop too: a cancel that lands while a closed connection fails
        # the pending send is swallowed by asyncio.wait_for (Python 3.11).
        self._stopped = False

    # -- membership ---------------------------------------------------------------------
    def add(self, key: PartitionKey, fetch_offset: int) -> None:
        self.partitions[key] = FetchState(fetch_offset)
        self._changed.set()

    def remove(self, key: PartitionKey) -> None:
        if self.partitions.pop(key, None) is not None:
            self._changed.set()

    def start(self) -> None:
        self._task = self._broker.loop.create_task(self._run(), name=f"fetcher-{self.leader_id}")

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
            ready = self._ready()
            if not ready:
                await self._wait(self._next_ready_in_ms())
                continue
            try:
                if not await self._fetch_once(ready):
                    await self._wait(self._backoff_ms)  # (nothing local to fetch for yet)
            except asyncio.CancelledError:
                raise
            except (ConnectionError, asyncio.TimeoutError, OSError) as err:
                if self._stopped:
                    break
                _log.info("replica fetch failed", leader=self.leader_id, error=str(err))
                self._close()
                await self._wait(self._backoff_ms)
            except Exception:  # a bug must not end replication from this leader for good
                _log.exception("replica fetch failed", leader=self.leader_id)
                self._close()
                await self._wait(self._backoff_ms)

    def _ready(self) -> dict[PartitionKey, FetchState]:
        now = self._broker.clock.time_ms()
        return {k: s for k, s in self.partitions.items() if s.delayed_until_ms <= now}

    def _next_ready_in_ms(self) -> int | None:
        if not self.partitions:
            return None
        now = self._broker.clock.time_ms()
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

    async def _fetch_once(self, ready: dict[PartitionKey, FetchState]) -> bool:
        """One Fetch round trip and its answers; False when nothing could be asked."""
        built = self._build(ready)
        if built is None:
            return False
        request, sent = built
        conn = await self._connection()
        response = await conn.send(request, timeout_s=self._timeout_s)
        if response.error_code:
            raise ConnectionError(f"fetch answered error {response.error_code}")
        by_id = request.API_VERSION >= 13
        # Names as this request sent them: the cache may have moved on meanwhile.
        names = {t.topic_id: t.topic for t in request.topics}
        for topic in response.responses:
            name = names.get(topic.topic_id) if by_id else topic.topic
            for data in topic.partitions:
                key = (name, data.partition_index)
                if key in sent:
                    await self._apply(key, sent[key], data)
        return True

    async def _connection(self) -> BrokerConnection:
        if self._conn is not None and self._conn.connected:
            return self._conn
        self._close()
        broker = self._broker
        endpoint = broker.cache.brokers_for(broker.inter_broker_listener).get(self.leader_id)
        if endpoint is None:
            raise ConnectionError(f"no endpoint known for broker {self.leader_id} on "
                                  f"listener {broker.inter_broker_listener}")
        conn = BrokerConnection(self._client_id, self._timeout_s)
        await conn.connect(endpoint.host, endpoint.port, self._timeout_s)
        self._conn = conn
        return conn

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # -- requests ---------------------------------------------------------------------------
    def _build(self, ready: dict[PartitionKey, FetchState]):
        """(Fetch request, {key: (state, fetch offset, leader epoch) sent}), or None when
        nothing can be fetched."""
        broker = self._broker
        local = broker.replica_manager.partitions
        by_topic: dict[str, list] = {}
        sent: dict[PartitionKey, tuple[FetchState, int, int]] = {}
        for key, state in ready.items():
            partition = local.get(key)
            if partition is None or partition.is_leader:
                continue
            log = partition.log
            if state.fetch_offset != log.log_end_offset:
                # Something else moved the log end (a truncation): appends must go on
                # from the log end, byte for byte.
                _log.info("fetch offset reset to the log end", partition=_name(key),
                          fetch_offset=state.fetch_offset, log_end_offset=log.log_end_offset)
                state.fetch_offset = log.log_end_offset
            latest = log.leader_epoch_cache.latest_epoch
            by_topic.setdefault(key[0], []).append(_Fetch.FetchTopic.FetchPartition(
                partition=key[1], current_leader_epoch=partition.leader_epoch,
                fetch_offset=state.fetch_offset,
                last_fetched_epoch=latest if latest is not None else -1,
                log_start_offset=log.log_start_offset,
                partition_max_bytes=self._partition_max_bytes))
            sent[key] = (state, state.fetch_offset, partition.leader_epoch)
        if not sent:
            return None
        ids = {name: _topic_id(broker, name) for name in by_topic}
        version = FETCH_VERSION if all(ids.values()) else FETCH_VERSION_BY_NAME
        topics = [_Fetch.FetchTopic(topic=name, topic_id=ids[name], partitions=parts)
                  for name, parts in by_topic.items()]
        request = _Fetch[version](
            replica_id=broker.node_id,
            replica_state=_Fetch.ReplicaState(replica_id=broker.node_id,
                                              replica_epoch=broker.broker_epoch),
            max_wait_ms=self._max_wait_ms, min_bytes=self._min_bytes,
            max_bytes=self._max_bytes, isolation_level=_READ_UNCOMMITTED,
            session_id=0, session_epoch=-1, topics=topics, forgotten_topics_data=[],
            rack_id="")
        return request, sent

    # -- answers ------------------------------------------------------------------------------
    async def _apply(self, key: PartitionKey, sent: tuple[FetchState, int, int], data) -> None:
        """One partition's answer (Kafka's processFetchRequest for one partition)."""
        state, sent_offset, sent_epoch = sent
        partition = self._broker.replica_manager.partitions.get(key)
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
            offset = truncation_offset(partition.log, diverging.epoch, diverging.end_offset)
            _log.info("truncating diverged follower log", partition=_name((partition.topic,
                                                                           partition.index)),
                      to=offset, leader_epoch=diverging.epoch, leader_end=diverging.end_offset)
            partition.log.truncate_to(offset)
            state.fetch_offset = partition.log.log_end_offset
            return
        if data.records:
            partition.append_as_follower(data.records)
        state.fetch_offset = partition.log.log_end_offset
        partition.update_follower_high_watermark(data.high_watermark, data.log_start_offset)

    async def _out_of_range(self, key: PartitionKey, partition, state: FetchState) -> None:
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

    async def _leader_offset(self, key: PartitionKey, partition, timestamp: int) -> int:
        request = _ListOffsets[LIST_OFFSETS_VERSION](
            replica_id=self._broker.node_id, isolation_level=_READ_UNCOMMITTED, timeout_ms=0,
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

    def _delay(self, key: PartitionKey, state: FetchState, error: int,
               message: str | None = None) -> None:
        _log.info("replica fetch error; backing off", partition=_name(key), leader=self.leader_id,
                  error=_error_name(error), message=message, backoff_ms=self._backoff_ms)
        state.delayed_until_ms = self._broker.clock.time_ms() + self._backoff_ms


def truncation_offset(log, leader_epoch: int, leader_end_offset: int) -> int:
    """Where a follower truncates on a diverging epoch (Kafka's getOffsetTruncationState).

    The leader says its largest epoch <= ours is ``leader_epoch``, ending at
    ``leader_end_offset``.  If this log knows that epoch, it keeps up to the smaller
    end; if its largest epoch below is another one, it keeps up to that epoch's end
    (the next fetch asks again); without epochs, up to the leader's end.
    """
    leo = log.log_end_offset
    if leader_end_offset < 0:
        return log.high_watermark
    epoch, end = log.leader_epoch_cache.end_offset_for(leader_epoch, leo)
    if epoch < 0 or end < 0:
        return min(leader_end_offset, leo)
    if epoch != leader_epoch:
        return min(end, leo)
    return min(end, leader_end_offset, leo)


def _topic_id(broker, name: str):
    topic = broker.cache.topics.get(name)
    return topic.topic_id if topic is not None else None


def _name(key: PartitionKey) -> str:
    return f"{key[0]}-{key[1]}"


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)
