"""Fetch (key 1): serve record batches from partition logs, in fetch sessions.

Versions 0 to 17 (Kafka 3.9's range), following KafkaApis.handleFetchRequest:
- The fetch session (``kafkapy.replication.fetch_session``) picks the partitions
  (the request's, or an incremental session's) and, once read, which of them the
  answer carries; a session error answers with no partition at all.
- Partitions of unknown topics are answered UNKNOWN_TOPIC_ID (v13+, by id) or
  UNKNOWN_TOPIC_OR_PARTITION without being read, after the read ones.
- Consumers read up to the high watermark (read_uncommitted) or the last stable
  offset (read_committed); an offset outside [log start, log end] ->
  OFFSET_OUT_OF_RANGE; a stale or future ``current_leader_epoch`` ->
  FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH.  An errored partition carries empty
  records (never null: librdkafka rejects a null record set), -1 offsets and null
  aborted transactions (``[]`` when it was not read), as Kafka sends.
- ``partition_max_bytes`` per partition and ``max_bytes`` (capped by
  ``fetch.max.bytes``) in all; from v3 the first batch found is returned whole even
  past those limits (KIP-74), below v3 the limits are hard.  As Kafka's
  LogSegment.read, a read stays in one segment and is a byte count: its last batch
  may be cut short (clients drop it).
- v0-v3 read message format 0/1: batches are down-converted
  (``kafkapy.records.down_convert``), never sent with sendfile; such a fetch gets
  UNSUPPORTED_VERSION when ``message.downconversion.enable`` is false for the topic,
  and below v10 a topic with ``compression.type=zstd`` gets
  UNSUPPORTED_COMPRESSION_TYPE.  A stored batch Kafka cannot convert (a negative
  timestamp, offsets going down) fails the whole fetch as Kafka's handleError does:
  every requested partition answers the error (UNKNOWN_SERVER_ERROR) with no records;
  when it comes after the first converted chunk, Kafka was already sending and closes
  the connection, and so does kafkapy.  KAFKA_STORAGE_ERROR reads NOT_LEADER_OR_FOLLOWER
  below v6, which older clients know.
- A consumer's Fetch v11+ may be answered by a follower (Kafka's KIP-392 fetch from
  follower), up to that follower's high watermark; earlier versions read only the leader.
- v16+: NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH name the current leader,
  with its endpoint in ``node_endpoints``.
- A follower (replica id >= 0, from v15 ``replica_state``) reads only from the
  leader, must be another assigned replica (else NOT_LEADER_OR_FOLLOWER, or
  UNKNOWN_LEADER_EPOCH when it names an epoch) and reads up to the log end; its
  sessions are privileged in the session cache.  Its fetch offset is its log end
  for the leader's high watermark (``Partition.update_follower_fetch``), for every
  partition of its session (those an incremental fetch only implies too); a HW
  that moves wakes the produce and fetch purgatories.
- ``last_fetched_epoch`` (v12+) is checked against the leader-epoch cache: a
  fetcher whose log diverged gets ``diverging_epoch`` and no records.
- If fewer than ``min_bytes`` are available and no read failed, the request
  becomes a DelayedFetch in the fetch purgatory, watched on each partition read:
  an append completes it as soon as enough bytes are there, a leadership change or
  error at once, and ``max_wait_ms`` at the latest; it then reads again.
- Replication throttle (Kafka's leader quota, ``kafkapy.replication.quota``): for a
  follower not in the ISR, a partition throttled on this broker answers no records
  while the leader quota is exceeded, and its bytes do not complete a delayed fetch;
  the record bytes answered to followers for throttled partitions are recorded.
- Record bytes of v4+ are never read into Python on plain connections: each
  partition's ``records`` is a marker that the connection replaces with the
  segment file ranges, sent with os.sendfile (``kafkapy.network.zero_copy``).
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import structlog

from kafkapy.api.context import CloseConnection
from kafkapy.metrics import counters as metrics
from kafkapy.log.segment import FetchSlice
from kafkapy.network.zero_copy import ZeroCopyResponse, new_marker
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.protocol.messages import RESPONSES
from kafkapy.security import authz
from kafkapy.purgatory.delayed_fetch import DelayedFetch, FetchPartitionStatus
from kafkapy.records.down_convert import (DownConversionError, down_convert,
                                          magic_for_fetch_version)
from kafkapy.replication.fetch_session import (PartitionAnswer, PartitionRequest,
                                               TopicIdPartition)

API_KEY = 1
MIN_VERSION = 0
MAX_VERSION = 17

_R = RESPONSES[API_KEY]
_Topic = _R.FetchableTopicResponse
_Partition = _Topic.PartitionData
READ_COMMITTED = 1
_HARD_LIMIT_BELOW = 3  # v0-2: max bytes are hard limits (no KIP-74 first batch)
_ZSTD_FROM = 10  # Fetch versions that may carry zstd batches
_STORAGE_ERROR_KNOWN_FROM = 6
_LEADER_HINT_FROM = 16
_LEADER_HINT_ERRORS = (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH)
_log = structlog.get_logger("kafkapy.handlers.fetch")


@dataclass(slots=True)
class _Result:
    """One partition's read (or why it was not read), before the session filters it."""

    tip: TopicIdPartition
    request: PartitionRequest | None
    error_code: int
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    aborted: list | None = None
    found: list = field(default_factory=list)
    size: int = 0
    config: dict | None = None  # the local log's topic config, when there is a log
    diverging: tuple[int, int] | None = None  # (epoch, end offset) of a diverged fetcher

    def answer(self) -> PartitionAnswer:
        return PartitionAnswer(self.error_code, self.high_watermark, self.log_start_offset,
                               self.size, diverging=self.diverging is not None)


def handle(ctx, request):
    broker = ctx.broker
    fetch_data, forgotten = _fetch_data(ctx, request)
    replica = _replica_id(ctx, request)
    context = broker.fetch_manager.new_context(
        ctx.api_version, request.session_id, request.session_epoch, replica >= 0,
        fetch_data, forgotten, broker.cache.topic_name, broker.clock.time_ms())
    if broker.authorizer is None:
        interesting, erroneous = _classify(broker, context.partitions())
    else:
        interesting, erroneous = _authorize(ctx, replica, context.partitions())
    fetch = _Fetch(ctx, request, context, interesting, erroneous, replica)
    if not interesting:
        return fetch.answer([])
    results = fetch.read()
    if fetch.can_answer_now(results):
        return fetch.answer(results)
    return fetch.delay()


def _fetch_data(ctx, request):
    """The request's partitions (a later duplicate updates the first) and forgotten ones."""
    by_id = ctx.api_version >= 13
    names = ctx.broker.cache.topic_name
    data: dict[tuple, tuple[TopicIdPartition, PartitionRequest]] = {}
    for topic in request.topics:
        topic_id = topic.topic_id if by_id else None
        name = names(topic_id) if by_id else topic.topic
        for p in topic.partitions:
            tip = TopicIdPartition(topic_id, name, p.partition)
            data[tip.key] = (tip, PartitionRequest(
                p.fetch_offset, p.log_start_offset, p.partition_max_bytes,
                p.current_leader_epoch, p.last_fetched_epoch))
    forgotten = []
    for topic in request.forgotten_topics_data or ():
        topic_id = topic.topic_id if by_id else None
        name = names(topic_id) if by_id else topic.topic
        forgotten.extend(TopicIdPartition(topic_id, name, index) for index in topic.partitions)
    return list(data.values()), forgotten


def _replica_id(ctx, request) -> int:
    """The fetching broker's id, or -1 for a consumer (a tagged field from v15)."""
    if ctx.api_version >= 15:
        state = request.replica_state
        return state.replica_id if state is not None else -1
    return request.replica_id


def _authorize(ctx, replica: int, partitions):
    """Kafka's classification with an authorizer: unknown id, then the checks -- a
    follower needs CLUSTER_ACTION on the cluster, a consumer READ on each topic (refused:
    TOPIC_AUTHORIZATION_FAILED, unread, whether or not the topic exists) -- then unknown
    partitions."""
    named = [tip.topic for tip, _ in partitions if tip.topic is not None]
    if replica >= 0:
        if not authz.cluster(ctx, authz.CLUSTER_ACTION):
            # Kafka refuses every partition of an unauthorized follower, unknown ids too.
            return [], [_Result(tip, req, ErrorCode.TOPIC_AUTHORIZATION_FAILED, aborted=[])
                        for tip, req in partitions]
        allowed = set(named)
    else:
        allowed = authz.filter_allowed(ctx, authz.READ, authz.TOPIC, named)
    interesting, erroneous = [], []
    for tip, req in partitions:
        if tip.topic is not None and tip.topic not in allowed:
            erroneous.append(_Result(tip, req, ErrorCode.TOPIC_AUTHORIZATION_FAILED, aborted=[]))
        else:
            more, errors = _classify(ctx.broker, [(tip, req)])
            interesting += more
            erroneous += errors
    return interesting, erroneous


def _classify(broker, partitions):
    """Split into partitions to read and those answered without reading (Kafka's order)."""
    interesting, erroneous = [], []
    for tip, req in partitions:
        if tip.topic is None:
            erroneous.append(_Result(tip, req, ErrorCode.UNKNOWN_TOPIC_ID, aborted=[]))
        elif broker.cache.partition(tip.topic, tip.partition) is None:
            erroneous.append(_Result(tip, req, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, aborted=[]))
        else:
            interesting.append((tip, req))
    return interesting, erroneous


class _Fetch:
    """One fetch request: read, maybe wait, then build the versioned answer."""

    def __init__(self, ctx, request, context, interesting, erroneous, replica: int) -> None:
        self.ctx = ctx
        self.request = request
        self.context = context
        self.interesting = interesting
        self.erroneous = erroneous
        fetch_max = ctx.broker.config["fetch.max.bytes"]
        self.max_bytes = min(request.max_bytes, fetch_max)
        self.min_bytes = min(request.min_bytes, self.max_bytes)
        self.replica = replica      # the fetching broker's id, -1 for a consumer
        self.follower = replica >= 0
        # Kafka's fetchOnlyFromLeader: followers, and consumers before v11 (no client
        # metadata); a v11+ consumer may read a follower up to its high watermark (KIP-392).
        self.leader_only = self.follower or ctx.api_version < 11
        # (Kafka's FetchIsolation: a follower reads to the log end whatever it asks.)
        self.read_committed = request.isolation_level == READ_COMMITTED and not self.follower
        self._throttling = False    # set by each read: _leader_throttle_set()

    # -- reading ----------------------------------------------------------------------
    def read(self, record_follower: bool = True) -> list[_Result]:
        """Read every partition; a follower's fetch offsets are recorded on the first read
        only (Kafka's readFromPurgatory: the offsets are the same when a wait ends)."""
        limit = self.max_bytes
        min_one = self.ctx.api_version >= _HARD_LIMIT_BELOW
        results = []
        self._throttling = self._leader_throttle_set()
        for tip, req in self.interesting:
            result = self._read_one(tip, req, min(req.max_bytes, limit), min_one)
            if result.size:
                min_one = False  # only the first non-empty partition may exceed the limits
            limit = max(0, limit - result.size)
            results.append(result)
        if self.follower and record_follower:
            self._record_follower_fetches(results)
        return results

    def _record_follower_fetches(self, results: list[_Result]) -> None:
        """Kafka's updateFollowerFetchState: each partition read for a follower records its
        fetch offset as the follower's log end; where that moves the high watermark, the
        delayed produces (acks=all) and consumer fetches watching the partition may now
        complete.  (The answer carries the HW as read, as Kafka's: the follower learns a
        new HW with its next fetch.)"""
        broker = self.ctx.broker
        replicas = broker.replica_manager
        replica = self.replica
        state = self.request.replica_state if self.ctx.api_version >= 15 else None
        replica_epoch = state.replica_epoch if state is not None else -1
        now = broker.clock.time_ms()
        moved = []
        for result in results:
            if result.error_code or result.diverging is not None:
                continue
            key = (result.tip.topic, result.tip.partition)
            partition = replicas.partitions.get(key)
            req = result.request
            if partition is not None and partition.update_follower_fetch(
                    replica, req.fetch_offset, now, req.log_start_offset, replica_epoch):
                moved.append(key)
        for key in moved:
            replicas.appended(key)

    def _read_one(self, tip, req, max_bytes: int, min_one: bool) -> _Result:
        replicas = self.ctx.broker.replica_manager
        local = replicas.partitions.get((tip.topic, tip.partition))
        config = local.log.config.values if local is not None else None
        try:
            if local is None:
                # Known to the cluster but not hosted here.
                raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
            partition = replicas.readable_partition(tip.topic, tip.partition,
                                                    req.current_leader_epoch, self.leader_only)
            if self.follower:
                self._check_follower(partition, req)
            log = partition.log
            result = _Result(tip, req, 0, partition.high_watermark,
                             partition.last_stable_offset, log.log_start_offset, config=config)
            if req.last_fetched_epoch >= 0 and _diverging(log, req, result):
                return result
            upper = self._upper(partition)
            result.found, result.aborted = _read_log(partition, req.fetch_offset, max_bytes,
                                                     upper, min_one, self.read_committed)
            if self._throttling and result.found and self._throttled(partition):
                result.found = []   # Kafka: the throttled partition answers no records
        except KafkaError as err:
            return _Result(tip, req, err.code, config=config)
        result.size = sum(s.size for s in result.found)
        return result

    def _leader_throttle_set(self) -> bool:
        """A follower's fetch on a broker with a leader throttle rate set: only then can a
        partition be throttled (replication.quota), so only then are partitions checked."""
        broker = self.ctx.broker
        return self.follower and broker.replica_manager.leader_quota.bounded(broker)

    def _throttled(self, partition) -> bool:
        """Kafka's shouldLeaderThrottle for this follower (see replication.quota)."""
        broker = self.ctx.broker
        return broker.replica_manager.leader_quota.should_leader_throttle(
            broker, partition, self.replica)

    def _upper(self, partition) -> int:
        """Where this fetcher's read stops: log end (followers), LSO or high watermark."""
        if self.follower:
            return partition.log.log_end_offset
        return partition.last_stable_offset if self.read_committed else partition.high_watermark

    def _check_follower(self, partition, req: PartitionRequest) -> None:
        """Kafka's followerReplicaOrThrow: the fetcher must be another assigned replica."""
        if self.replica == self.ctx.broker.node_id or self.replica not in partition.state.replicas:
            raise KafkaError(ErrorCode.UNKNOWN_LEADER_EPOCH if req.current_leader_epoch >= 0
                             else ErrorCode.NOT_LEADER_OR_FOLLOWER)

    def can_answer_now(self, results: list[_Result]) -> bool:
        return (self.request.max_wait_ms <= 0
                or sum(r.size for r in results) >= self.min_bytes
                or any(r.error_code or r.diverging for r in results))

    # -- waiting ----------------------------------------------------------------------
    def delay(self):
        """Park the fetch in the purgatory; the future resolves with the response."""
        broker = self.ctx.broker
        future = broker.loop.create_future()
        statuses = [FetchPartitionStatus(tip.topic, tip.partition, req.fetch_offset,
                                         req.max_bytes, _start_metadata(broker, tip, req))
                    for tip, req in self.interesting]
        requests = {(tip.topic, tip.partition): req for tip, req in self.interesting}

        def respond(response):
            if not future.done():
                if isinstance(response, CloseConnection):
                    future.set_exception(response)
                else:
                    future.set_result(response)

        def read_and_answer():
            try:
                return self.answer(self.read(record_follower=False))
            except CloseConnection as closing:  # a later down-converted chunk failed
                return closing

        starts = {(s.topic, s.partition): s.start for s in statuses}

        def state(topic, index):
            end = _end_metadata(broker, topic, index, requests[(topic, index)], self._upper,
                                self.leader_only)
            if self.follower and not isinstance(end, int) and self._leader_throttle_set():
                start = starts[(topic, index)]
                if start is not None and end.offset >= start.offset and self._throttled(
                        broker.replica_manager.partitions[(topic, index)]):
                    # Kafka's DelayedFetch: a throttled partition's bytes do not count
                    # (and do not end the wait); the read at the end leaves them out.
                    return start
            return end

        operation = DelayedFetch(self.request.max_wait_ms, self.min_bytes, statuses,
                                 read_and_answer, respond, state)
        keys = [(s.topic, s.partition) for s in statuses]
        broker.fetch_purgatory.try_complete_else_watch(operation, keys)
        return future

    # -- answering --------------------------------------------------------------------
    def answer(self, results: list[_Result]):
        """Let the session pick the partitions to send; encode them for this version."""
        ctx = self.ctx
        updates = results + self.erroneous
        error, session_id, kept = self.context.generate(
            [(r.tip, r.answer()) for r in updates], ctx.broker.clock.time_ms())
        slices: dict[bytes, list] = {}
        endpoints: dict[int, object] = {}
        topics: list = []
        unsendable = None  # a partition whose later down-converted chunk fails
        for index in kept:
            result = updates[index]
            try:
                data = self._partition_data(result, slices, endpoints)
            except DownConversionError as err:
                if not err.after_first_chunk:
                    return self._conversion_failed(result, err)
                unsendable = unsendable or (result, err)
                continue
            _add_to_topics(topics, result.tip, data)
        if unsendable is not None:
            # Kafka converts later chunks while sending: it closes the connection mid-answer.
            result, err = unsendable
            raise CloseConnection(f"down-conversion of {result.tip.topic}-"
                                  f"{result.tip.partition} failed: {err.message}")
        if self.follower:
            self._record_throttled(updates, kept)
        response = ctx.response(throttle_time_ms=0, error_code=error, session_id=session_id,
                                responses=topics, node_endpoints=list(endpoints.values()))
        return ZeroCopyResponse(response, slices) if slices else response

    def _record_throttled(self, updates: list[_Result], kept) -> None:
        """Kafka's quotas.leader.record(sizeOfThrottledPartitions): the bytes answered for
        throttled partitions, to in-sync followers too (here: their record bytes), zero
        included (every follower fetch answered keeps the quota's samples alive)."""
        broker = self.ctx.broker
        replicas = broker.replica_manager
        quota = replicas.leader_quota
        size = 0
        for index in kept:
            result = updates[index]
            if result.size:
                partition = replicas.partitions.get((result.tip.topic, result.tip.partition))
                if partition is not None and quota.is_throttled(partition):
                    size += result.size
        quota.record(broker, size)

    def _partition_data(self, result: _Result, slices, endpoints):
        version = self.ctx.api_version
        refusal = self._refusal(result)
        if refusal is None:
            try:
                records = self._records(result, slices)
            except DownConversionError:
                raise   # the whole fetch fails (answer)
            except KafkaError as err:  # a zstd batch first in line for down-conversion
                refusal = err.code
        if refusal is not None:
            # Kafka's bare partition error: records and offsets unset.
            return _Partition(partition_index=result.tip.partition, error_code=refusal,
                              high_watermark=-1, last_stable_offset=-1, log_start_offset=-1,
                              aborted_transactions=[], preferred_read_replica=-1, records=None)
        if result.size:     # Kafka's BytesOutPerSec (consumers) / ReplicationBytesOutPerSec
            if self.follower:
                metrics.BROKER.replication_bytes_out += result.size
            else:
                metrics.fetched(result.tip.topic, result.size)
        error = result.error_code
        if error == ErrorCode.KAFKA_STORAGE_ERROR and version < _STORAGE_ERROR_KNOWN_FROM:
            error = ErrorCode.NOT_LEADER_OR_FOLLOWER
        data = _Partition(partition_index=result.tip.partition, error_code=error,
                          high_watermark=result.high_watermark,
                          last_stable_offset=result.last_stable_offset,
                          log_start_offset=result.log_start_offset,
                          aborted_transactions=result.aborted, preferred_read_replica=-1,
                          records=records)
        if result.diverging is not None:
            data.diverging_epoch = _Partition.EpochEndOffset(epoch=result.diverging[0],
                                                             end_offset=result.diverging[1])
        if version >= _LEADER_HINT_FROM and error in _LEADER_HINT_ERRORS:
            data.current_leader = self._leader_hint(result.tip, endpoints)
        return data

    def _conversion_failed(self, result: _Result, err: DownConversionError):
        """Kafka's answer when the first chunk of a down-conversion throws (its handleError,
        FetchRequest.getErrorResponse): every requested partition, in the request's order,
        answers the error with no records."""
        _log.error("Unexpected error handling request: down-conversion failed",
                   partition=f"{result.tip.topic}-{result.tip.partition}",
                   version=self.ctx.api_version, peer=self.ctx.peer, error=err.message)
        code = err.code
        topics = [_Topic(topic=t.topic, topic_id=getattr(t, "topic_id", None), partitions=[
            _Partition(partition_index=p.partition, error_code=code, high_watermark=-1,
                       last_stable_offset=-1, log_start_offset=-1, aborted_transactions=None,
                       preferred_read_replica=-1, records=None)
            for p in t.partitions]) for t in self.request.topics]
        return self.ctx.response(throttle_time_ms=0, error_code=code,
                                 session_id=getattr(self.request, "session_id", 0),
                                 responses=topics, node_endpoints=[])

    def _refusal(self, result: _Result) -> int | None:
        """An error answered instead of the read (Kafka's maybeConvertFetchedData)."""
        config = result.config
        if config is None:
            return None
        version = self.ctx.api_version
        if version < _ZSTD_FROM and config.get("compression.type") == "zstd":
            return ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
        if (magic_for_fetch_version(version) is not None
                and not self.follower
                and not config.get("message.downconversion.enable", True)):
            return ErrorCode.UNSUPPORTED_VERSION
        return None

    def _records(self, result: _Result, slices) -> bytes:
        magic = magic_for_fetch_version(self.ctx.api_version)
        if magic is not None:
            raw = b"".join(s.read_bytes() for s in result.found)
            metrics.BROKER.copied_bytes += len(raw)
            if not raw:
                return b""
            try:
                return down_convert(raw, magic, result.request.fetch_offset)
            except KafkaError:
                raise
            except Exception as exc:  # a kafkapy bug: Kafka's answer to an unexpected error
                _log.exception("down-conversion failed", topic=result.tip.topic,
                               partition=result.tip.partition)
                raise DownConversionError(ErrorCode.UNKNOWN, repr(exc)) from exc
        if not result.size:
            return b""
        if self.ctx.zero_copy:
            marker = new_marker()
            slices[marker] = result.found
            return marker
        metrics.BROKER.copied_bytes += result.size
        return b"".join(s.read_bytes() for s in result.found)

    def _leader_hint(self, tip: TopicIdPartition, endpoints):
        """The partition's leader and epoch as this broker knows them; its endpoint."""
        broker = self.ctx.broker
        local = broker.replica_manager.partitions.get((tip.topic, tip.partition))
        state = local.state if local is not None else broker.cache.partition(tip.topic,
                                                                             tip.partition)
        leader, epoch = (state.leader, state.leader_epoch) if state is not None else (-1, -1)
        node = broker.cache.brokers_for(self.ctx.listener).get(leader)
        if node is not None:
            endpoints[leader] = _R.NodeEndpoint(node_id=node.node_id, host=node.host,
                                                port=node.port, rack=node.rack)
        return _Partition.LeaderIdAndEpoch(leader_id=leader, leader_epoch=epoch)


def _add_to_topics(topics: list, tip: TopicIdPartition, data) -> None:
    """Append to the last topic if it is the same one, else start a topic (Kafka's order)."""
    if topics:
        last = topics[-1]
        same = (last.topic_id == tip.topic_id) if tip.topic_id else (
            last.topic_id is None and last.topic == (tip.topic or ""))
        if same:
            last.partitions.append(data)
            return
    topics.append(_Topic(topic=tip.topic or "", topic_id=tip.topic_id, partitions=[data]))


def _start_metadata(broker, tip, req):
    partition = broker.replica_manager.partitions.get((tip.topic, tip.partition))
    return partition.offset_metadata(req.fetch_offset) if partition is not None else None


def _end_metadata(broker, topic, index, req: PartitionRequest, upper, leader_only=True):
    """Where a waiting fetch may read to, or an error code when it must answer now."""
    try:
        partition = broker.replica_manager.readable_partition(topic, index,
                                                              req.current_leader_epoch,
                                                              leader_only)
    except KafkaError as err:
        return err.code
    if req.last_fetched_epoch >= 0:
        # Kafka's case H: the fetcher's log diverged meanwhile (or cannot be placed).
        epoch, end = _epoch_end(partition.log, req)
        if epoch < 0 or end < 0 or epoch < req.last_fetched_epoch or end < req.fetch_offset:
            return ErrorCode.OFFSET_OUT_OF_RANGE
    return partition.offset_metadata(upper(partition))


def _epoch_end(log, req: PartitionRequest) -> tuple[int, int]:
    """The largest epoch <= the fetcher's last one and where it ends (-1s if unknown)."""
    return log.leader_epoch_cache.end_offset_for(req.last_fetched_epoch, log.log_end_offset)


def _diverging(log, req: PartitionRequest, result: _Result) -> bool:
    """Kafka's check of ``last_fetched_epoch`` (v12+): True when the fetcher's log diverged.

    The answer then carries the end of the largest epoch at or below the fetcher's,
    and no records.
    """
    epoch, end = _epoch_end(log, req)
    if epoch < 0 or end < 0 or req.fetch_offset < log.log_start_offset:
        raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE)
    if epoch < req.last_fetched_epoch or end < req.fetch_offset:
        result.diverging = (epoch, end)
        return True
    return False


def _read_log(partition, offset: int, max_bytes: int, upper: int, min_one: bool,
              read_committed: bool) -> tuple[list, list | None]:
    """Kafka's UnifiedLog.read for a consumer: (file slices, aborted transactions).

    As Kafka, the read stays in the first segment holding a batch at or after
    ``offset`` and stops at ``max_bytes`` (at least the first batch when
    ``min_one``) or at ``upper``'s position, so its last batch may be cut short;
    clients drop such a partial batch.
    """
    log = partition.log
    if offset < log.log_start_offset or offset > log.log_end_offset:
        raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE,
                         f"offset {offset} is out of range for {log.name}: "
                         f"[{log.log_start_offset}, {log.log_end_offset}]")
    if offset >= upper:
        return [], ([] if read_committed else None)
    limit = partition.offset_metadata(upper)
    segments = log.segments
    for index in range(log.segment_for(offset), len(segments)):
        segment = segments[index]
        first = segment.find_offset_position(offset)
        if first is None:
            continue  # nothing at or after the offset here: the next segment
        found = _segment_slice(segment, first, max_bytes, _max_position(segment, limit), min_one)
        aborted = (_aborted(log, index, offset, first.position, found) if read_committed
                   else None)
        return found, aborted
    return [], None  # everything from the offset on was removed


def _max_position(segment, limit) -> int | None:
    """How far this segment may be read: to its end, to the limit's position, or not at all."""
    if segment.base_offset < limit.segment_base_offset:
        return segment.size
    if segment.base_offset == limit.segment_base_offset:
        return limit.position
    return None


def _segment_slice(segment, first, max_bytes: int, max_position: int | None,
                   min_one: bool) -> list[FetchSlice]:
    """Kafka's LogSegment.read: from the batch holding the offset, a byte count, not batches."""
    wanted = max(max_bytes, first.size) if min_one else max_bytes
    if wanted <= 0 or max_position is None:
        return []
    size = min(max_position - first.position, wanted)
    return [FetchSlice(segment.fd, first.position, size, first.base_offset)] if size > 0 else []


def _aborted(log, index: int, offset: int, start_position: int, found: list) -> list:
    """read_committed: aborted transactions up to Kafka's upper bound for this read.

    The bound is the first offset-index entry at or past the end of the bytes read,
    else the next segment's base offset, else the log end (LocalLog.addAbortedTransactions).
    """
    segment = log.segments[index]
    end = start_position + sum(s.size for s in found)
    entries = segment.offset_index
    slot = bisect.bisect_left(range(entries.entries), end, key=lambda i: entries.entry(i)[1])
    if slot < entries.entries:
        upper = entries.entry(slot)[0]
    elif index + 1 < len(log.segments):
        upper = log.segments[index + 1].base_offset
    else:
        upper = log.log_end_offset
    return [_Partition.AbortedTransaction(producer_id=t.producer_id, first_offset=t.first_offset)
            for t in log.collect_aborted_transactions(offset, upper)]
