"""Transaction markers to every partition leader (Kafka's TransactionMarkerChannelManager).

The coordinator's side is synchronous and polled: ``MarkerChannel.write(producer_id,
epoch, coordinator_epoch, commit, partitions) -> {tp: code}`` is called again every
``MARKER_RETRY_BACKOFF_MS`` with the partitions still remaining, and a partition is done
once it is answered 0, UNKNOWN_TOPIC_OR_PARTITION, INVALID_PRODUCER_EPOCH or
TRANSACTION_COORDINATOR_FENCED.  Each partition is routed by this broker's metadata cache
(Kafka's getPartitionLeaderEndpoint on the inter-broker listener):
- not in the cache: the topic is gone, the marker is skipped (UNKNOWN_TOPIC_OR_PARTITION);
- no leader, or a leader without a live endpoint: LEADER_NOT_AVAILABLE, tried again on the
  next call (Kafka's queue for unknown brokers);
- led by this broker: written at once through ``local_write`` (``markers.write_markers``),
  then, as Kafka appends markers with acks=all, reported ``IN_FLIGHT`` until the
  partition's high watermark passes the marker (``high_watermark_of``); if the partition
  stops being led here meanwhile, the next call routes and writes it again;
- led by another broker: queued for that broker and reported ``IN_FLIGHT`` (a retried
  code) until its answer arrives; the answer's codes are kept and handed out on the next
  call.  Codes Kafka's TransactionMarkerRequestCompletionHandler retries (NOT_LEADER,
  UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS*, REQUEST_TIMED_OUT, KAFKA_STORAGE_ERROR)
  and anything unexpected are not kept: the next call routes the partition again with the
  cache of that moment (its leader may have moved).  UNSUPPORTED_VERSION and
  UNSUPPORTED_FOR_MESSAGE_FORMAT drop the partition, as Kafka does.

Per destination broker: one connection (``BrokerConnection``, reused, replaced after any
failure), one WriteTxnMarkers request in flight (v2, which carries each marker's
transaction version, when a marker of a v2 transaction is in it and the broker serves v2,
which ApiVersions v0 asks once per connection before the first such request, as Kafka's
NetworkClient picks versions; else v1, which a Kafka 3.9 broker reads), and the queued markers of every
transaction batched into it (one marker per producer id per request, since the answer is
matched by producer id).  A failed request (connection, timeout) forgets its partitions'
in-flight state, so the next call sends them again, and delays that broker's next request
(exponential backoff, 50 ms .. 1 s).

Invariants / memory: state is kept per marker key (producer id, producer epoch, coordinator
epoch, commit); a kept code is removed when reported; a key is dropped once it holds
nothing, or, with nothing on the wire, once the coordinator has not asked about it for
``_IDLE_KEY_MS`` (a finished or abandoned job); a broker's sender (task and connection)
stops after ``_IDLE_SENDER_S`` without work, forgetting anything still queued.  Everything
runs on the event loop; no locks.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Callable, Iterable

import structlog

from kafkapy.network.client import BrokerConnection
from kafkapy.network.links import Links
from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.protocol.messages import REQUESTS
from kafkapy.protocol.topic_partition import TopicPartition

_log = structlog.get_logger("kafkapy.coordinator.transaction.markers")

MarkerKey = tuple[int, int, int, bool]   # (producer id, producer epoch, coordinator epoch, commit)
# (producer id, epoch, coordinator epoch, commit, partitions, appended={}) -> {tp: code};
# fills ``appended`` with the AppendResult of each marker written.
LocalWrite = Callable[..., dict]
# tp -> this broker's high watermark of it, or an ErrorCode when it is not led here any more.
HighWatermarkOf = Callable[[TopicPartition], int]

#: What ``write`` reports for a partition whose request is queued or on the wire: a code the
#: coordinator retries (it is not one of its "done" codes).
IN_FLIGHT = E.REQUEST_TIMED_OUT
WRITE_TXN_MARKERS_VERSION = 1   # Kafka 3.9 at IBP 3.9 (flexible)
WRITE_TXN_MARKERS_V2 = 2        # adds TransactionVersion per marker

# Answers that finish a partition (kept and reported); anything else is sent again.
_DONE = {0, E.INVALID_PRODUCER_EPOCH, E.TRANSACTION_COORDINATOR_FENCED}
# Kafka drops the partition from the transaction on these; the coordinator's "gone" code.
_DROPPED = {E.UNSUPPORTED_VERSION, E.UNSUPPORTED_FOR_MESSAGE_FORMAT}
_RETRIED = {E.UNKNOWN_TOPIC_OR_PARTITION, E.NOT_LEADER_OR_FOLLOWER, E.NOT_ENOUGH_REPLICAS,
            E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, E.REQUEST_TIMED_OUT, E.KAFKA_STORAGE_ERROR}
_LOCAL, _REMOTE, _ANSWER = "local", "remote", "answer"
_IDLE_KEY_MS = 60_000
_IDLE_SENDER_S = 60.0
_BACKOFF_MIN_S = 0.05
_BACKOFF_MAX_S = 1.0

_Requests = {v: REQUESTS[27][v] for v in (WRITE_TXN_MARKERS_VERSION, WRITE_TXN_MARKERS_V2)}
_ApiVersions = REQUESTS[18][0]


@dataclass
class _KeyState:
    """What the channel knows of one marker key's remote partitions."""
    touched_ms: int
    in_flight: set[TopicPartition] = field(default_factory=set)
    answered: dict[TopicPartition, int] = field(default_factory=dict)
    # local markers written, waiting for the high watermark: tp -> offset it must reach
    replicating: dict[TopicPartition, int] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.in_flight or self.answered or self.replicating)


class _Destination:
    """One remote broker: its queue of (key -> partitions), connection and sender task."""

    def __init__(self, node_id: int) -> None:
        self.node_id = node_id
        self.queue: dict[MarkerKey, set[TopicPartition]] = {}
        self.wakeup = asyncio.Event()
        self.conn: BrokerConnection | None = None
        self.max_version: int | None = None    # WriteTxnMarkers served there; None: not asked
        self.task: asyncio.Task | None = None
        self.failures = 0

    def close_connection(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


class MarkerChannel:
    """See the module docstring.  ``cache`` is the broker's MetadataCache (its ``brokers``
    are the inter-broker listener's endpoints), ``local_write`` writes markers to
    partitions this broker leads, ``clock`` gives ``monotonic_ms()``."""

    def __init__(self, node_id: int, cache, local_write: LocalWrite, clock, *,
                 high_watermark_of: HighWatermarkOf, request_timeout_ms: int = 30000,
                 connect_timeout_ms: int = 10000, links: Links | None = None) -> None:
        self._node_id = node_id
        self._cache = cache
        self._links = links     # which brokers are reachable (None: all)
        self._local_write = local_write
        self._hw_of = high_watermark_of
        self._clock = clock
        self._client_id = f"broker-{node_id}-txn-marker-sender"
        self._request_timeout_s = request_timeout_ms / 1000.0
        self._connect_timeout_s = connect_timeout_ms / 1000.0
        self._keys: dict[MarkerKey, _KeyState] = {}
        self._versions: dict[MarkerKey, int] = {}   # transaction version 2 keys sent remotely
        self._destinations: dict[int, _Destination] = {}
        self._closed = False

    # -- the coordinator's side -----------------------------------------------------------
    def write(self, producer_id: int, producer_epoch: int, coordinator_epoch: int,
              commit: bool, partitions: Iterable[TopicPartition],
              transaction_version: int = 0) -> dict[TopicPartition, int]:
        key: MarkerKey = (producer_id, producer_epoch, coordinator_epoch, bool(commit))
        now = self._clock.monotonic_ms()
        self._sweep(now)
        state = self._keys.get(key)
        results: dict[TopicPartition, int] = {}
        local: list[TopicPartition] = []
        remote: dict[int, list[TopicPartition]] = {}
        for tp in partitions:
            if state is not None and tp in state.answered:
                results[tp] = state.answered.pop(tp)
            elif state is not None and tp in state.in_flight:
                results[tp] = IN_FLIGHT
            elif state is not None and tp in state.replicating:
                results[tp] = self._replicated(state, tp)
            else:
                where, value = self._route(tp)
                if where is _LOCAL:
                    local.append(tp)
                elif where is _REMOTE:
                    remote.setdefault(value, []).append(tp)
                else:
                    results[tp] = value
        if local:
            appended: dict = {}
            codes = self._local_write(producer_id, producer_epoch, coordinator_epoch,
                                      bool(commit), local, appended=appended,
                                      transaction_version=transaction_version)
            results.update(codes)
            if appended:
                state = self._keys.setdefault(key, _KeyState(now))
                for tp, result in appended.items():
                    if codes.get(tp) == 0 and result is not None and result.last_offset >= 0:
                        state.replicating[tp] = result.last_offset + 1
                        results[tp] = self._replicated(state, tp)
        if remote and not self._closed:
            state = self._keys.setdefault(key, _KeyState(now))
            if transaction_version >= 2:
                self._versions[key] = transaction_version
            for node_id, tps in remote.items():
                self._enqueue(node_id, key, tps)
                state.in_flight.update(tps)
                results.update((tp, IN_FLIGHT) for tp in tps)
        elif remote:
            results.update((tp, IN_FLIGHT) for tps in remote.values() for tp in tps)
        if state is not None:
            state.touched_ms = now
            if state.empty:
                self._keys.pop(key, None)
                self._versions.pop(key, None)
        return results

    def close(self) -> None:
        """Stop every sender and close their connections; ``write`` then sends nothing."""
        self._closed = True
        for dest in self._destinations.values():
            dest.close_connection()
            if dest.task is not None and not dest.task.done():
                dest.task.cancel()
        self._destinations.clear()
        self._keys.clear()
        self._versions.clear()

    # -- introspection (tests, metrics) ----------------------------------------------------
    def pending_keys(self) -> int:
        return len(self._keys)

    def destinations(self) -> list[int]:
        return sorted(self._destinations)

    # -- routing --------------------------------------------------------------------------
    def _route(self, tp: TopicPartition) -> tuple[str, int]:
        """(_LOCAL, 0), (_REMOTE, leader id) or (_ANSWER, the code to report now)."""
        state = self._cache.partition(*tp)
        if state is None:
            return _ANSWER, E.UNKNOWN_TOPIC_OR_PARTITION
        leader = state.leader
        if leader == self._node_id:
            return _LOCAL, 0
        if leader < 0 or leader not in self._cache.brokers:
            return _ANSWER, E.LEADER_NOT_AVAILABLE
        return _REMOTE, leader

    def _replicated(self, state: _KeyState, tp: TopicPartition) -> int:
        """0 once the local marker is below the high watermark; IN_FLIGHT while it is not;
        the partition's error (retried: written again) once it is not led here."""
        hw = self._hw_of(tp)
        required = state.replicating[tp]
        if isinstance(hw, E):
            del state.replicating[tp]
            return E.NOT_LEADER_OR_FOLLOWER if hw == E.UNKNOWN_TOPIC_OR_PARTITION else hw
        if hw >= required:
            del state.replicating[tp]
            return 0
        return IN_FLIGHT

    def _enqueue(self, node_id: int, key: MarkerKey, tps: list[TopicPartition]) -> None:
        dest = self._destinations.get(node_id)
        if dest is None:
            dest = self._destinations[node_id] = _Destination(node_id)
        dest.queue.setdefault(key, set()).update(tps)
        if dest.task is None or dest.task.done():
            dest.task = asyncio.get_running_loop().create_task(
                self._run(dest), name=f"txn-markers-to-{node_id}")
        dest.wakeup.set()

    def _sweep(self, now: int) -> None:
        """Drop keys of finished or abandoned jobs (nothing in flight, not asked about)."""
        stale = [k for k, s in self._keys.items()
                 if s.empty or (not s.in_flight and now - s.touched_ms > _IDLE_KEY_MS)]
        for k in stale:
            del self._keys[k]
            self._versions.pop(k, None)

    # -- one destination ------------------------------------------------------------------
    async def _run(self, dest: _Destination) -> None:
        try:
            while not self._closed:
                if not dest.queue:
                    dest.wakeup.clear()
                    try:
                        await asyncio.wait_for(dest.wakeup.wait(), _IDLE_SENDER_S)
                    except asyncio.TimeoutError:
                        if not dest.queue:
                            break
                    continue
                batch = _take_batch(dest.queue)
                await self._send(dest, batch)
        finally:
            # Whatever is still queued is forgotten: the next write routes it again.
            self._forget(dest.queue)
            dest.queue.clear()
            dest.close_connection()
            if self._destinations.get(dest.node_id) is dest:
                del self._destinations[dest.node_id]

    async def _send(self, dest: _Destination, batch: dict[MarkerKey, set[TopicPartition]]) -> None:
        endpoint = self._cache.brokers.get(dest.node_id)
        if endpoint is None:   # the broker left: the next write routes the partitions again
            self._forget(batch)
            return
        try:
            conn = await self._connection(dest, endpoint)
            if dest.max_version is None and any(key in self._versions for key in batch):
                dest.max_version = await self._write_txn_markers_max(conn)
            request = _build_request(batch, self._versions,
                                     dest.max_version or WRITE_TXN_MARKERS_VERSION)
            response = await conn.send(request, self._client_id, self._request_timeout_s)
        except (ConnectionError, asyncio.TimeoutError, OSError) as exc:
            dest.close_connection()
            dest.failures += 1
            log = _log.warning if dest.failures == 1 else _log.debug
            log("transaction markers to broker failed; resent on the next retry",
                broker=dest.node_id, host=endpoint.host, port=endpoint.port,
                attempt=dest.failures, error=repr(exc))
            self._forget(batch)
            await asyncio.sleep(min(_BACKOFF_MIN_S * 2 ** (dest.failures - 1), _BACKOFF_MAX_S))
            return
        except Exception as exc:  # an answer we cannot read: a new connection, then resend
            dest.close_connection()
            _log.error("transaction markers to broker: unreadable answer", broker=dest.node_id,
                       error=repr(exc))
            self._forget(batch)
            return
        dest.failures = 0
        try:
            self._record(dest.node_id, batch, response)
        except Exception:  # a malformed answer: resend rather than wait forever
            _log.exception("transaction markers: answer not understood", broker=dest.node_id)
            self._forget(batch)

    async def _connection(self, dest: _Destination, endpoint) -> BrokerConnection:
        conn = dest.conn
        if conn is not None and conn.connected and (conn.host, conn.port) == (endpoint.host,
                                                                              endpoint.port):
            return conn
        dest.close_connection()
        conn = BrokerConnection(client_id=self._client_id,
                                request_timeout_s=self._request_timeout_s, links=self._links)
        await conn.connect(endpoint.host, endpoint.port, self._connect_timeout_s)
        if self._closed:
            conn.close()
            raise ConnectionError("marker channel closed")
        dest.max_version = None
        dest.conn = conn
        _log.info("connected to broker for transaction markers", broker=dest.node_id,
                  host=endpoint.host, port=endpoint.port)
        return conn

    async def _write_txn_markers_max(self, conn: BrokerConnection) -> int:
        """The highest WriteTxnMarkers version the broker serves (at most v2); v1 when its
        ApiVersions answer does not say (the version every broker of the cluster serves)."""
        response = await conn.send(_ApiVersions(), self._client_id, self._request_timeout_s)
        for api in response.api_keys if not response.error_code else ():
            if api.api_key == 27:
                return max(WRITE_TXN_MARKERS_VERSION, min(api.max_version, WRITE_TXN_MARKERS_V2))
        return WRITE_TXN_MARKERS_VERSION

    # -- answers --------------------------------------------------------------------------
    def _record(self, node_id: int, batch: dict[MarkerKey, set[TopicPartition]],
                response) -> None:
        by_producer = {m.producer_id: m for m in response.markers}
        for key, tps in batch.items():
            state = self._keys.get(key)
            if state is None:     # closed or swept meanwhile: nobody waits for these
                continue
            state.in_flight.difference_update(tps)
            marker = by_producer.get(key[0])
            codes = {} if marker is None else {
                (t.name, p.partition_index): p.error_code
                for t in marker.topics for p in t.partitions}
            for tp in tps:
                code = codes.get(tp)
                if code in _DONE:
                    state.answered[tp] = code
                elif code in _DROPPED:
                    _log.info("transaction marker dropped", broker=node_id, partition=tp,
                              error=E(code).name)
                    state.answered[tp] = E.UNKNOWN_TOPIC_OR_PARTITION
                elif code in _RETRIED:
                    _log.debug("transaction marker to be retried", broker=node_id, partition=tp,
                               error=E(code).name)
                else:
                    _log.warning("unexpected answer to a transaction marker; retrying",
                                 broker=node_id, partition=tp, error=code)

    def _forget(self, batch: dict[MarkerKey, set[TopicPartition]]) -> None:
        for key, tps in batch.items():
            state = self._keys.get(key)
            if state is not None:
                state.in_flight.difference_update(tps)


def _take_batch(queue: dict[MarkerKey, set[TopicPartition]]
                ) -> dict[MarkerKey, set[TopicPartition]]:
    """Every queued key, but one per producer id (answers are matched by producer id)."""
    batch: dict[MarkerKey, set[TopicPartition]] = {}
    producers: set[int] = set()
    for key in list(queue):
        if key[0] in producers:
            continue
        producers.add(key[0])
        batch[key] = queue.pop(key)
    return batch


def _build_request(batch: dict[MarkerKey, set[TopicPartition]], versions: dict[MarkerKey, int],
                   max_version: int = WRITE_TXN_MARKERS_V2):
    """WriteTxnMarkers v1, or v2 (each marker's transaction version) when a key of the
    batch is of a v2 transaction and the broker serves v2 (``max_version``)."""
    v2 = max_version >= WRITE_TXN_MARKERS_V2 and any(key in versions for key in batch)
    request = _Requests[WRITE_TXN_MARKERS_V2 if v2 else WRITE_TXN_MARKERS_VERSION]
    marker_cls = request.WritableTxnMarker
    markers = []
    for key, tps in batch.items():
        producer_id, producer_epoch, coordinator_epoch, commit = key
        topics: dict[str, list[int]] = {}
        for topic, partition in sorted(tps):
            topics.setdefault(topic, []).append(partition)
        extra = {"transaction_version": versions.get(key, 0)} if v2 else {}
        markers.append(marker_cls(
            producer_id=producer_id, producer_epoch=producer_epoch, transaction_result=commit,
            coordinator_epoch=coordinator_epoch,
            topics=[marker_cls.WritableTxnMarkerTopic(name=t, partition_indexes=ps)
                    for t, ps in topics.items()], **extra))
    return request(markers=markers)
