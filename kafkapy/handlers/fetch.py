"""Fetch (key 1): serve record batches from partition logs, in fetch sessions.

Versions 0 to 17 (Kafka 3.9's range), following KafkaApis.handleFetchRequest: the
handler opens the session, authorizes and classifies the partitions, caps the sizes,
makes one call to the replica manager (``ReplicaManager.fetch_messages``, which
reads, and waits when it must) and encodes what it answers (``_Answer``).
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
  UnifiedLog.read (``Log.read_for_fetch``), a read stays in one log file and is a
  byte count: its last batch may be cut short (clients drop it).
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
  waits in the fetch purgatory, watched on each partition read: an append completes it
  as soon as enough bytes are there, a leadership change or error at once, and
  ``max_wait_ms`` at the latest; the answer is the read made then (a consumer's fetch
  reads again when it completes, a follower's completes on a read), and it leaves from
  inside the append that ended the wait (``LateAnswer``).
- Replication throttle (Kafka's leader quota, ``kafkapy.replication.quota``): for a
  follower not in the ISR, a partition throttled on this broker answers no records
  while the leader quota is exceeded, and its bytes do not complete a delayed fetch;
  the record bytes answered to followers for throttled partitions are recorded.
- Client quota (a consumer only; ``kafkapy.quota.client``, Kafka's fetch
  ClientQuotaManager): ``max_bytes`` is capped to what the consumer_byte_rate allows in
  ``quota.window.num - 1`` windows, so a throttled consumer still progresses; the answer's
  size (records plus a fixed per-partition part) is recorded when it is made, and when that
  puts the client over its quota the size is taken back and the answer has no partitions,
  the throttle time, and a connection that reads nothing more for that long.  An
  incremental session keeps its state (its epoch is checked as for any answer).
- Request quota (``kafkapy.quota.request``): a consumer's fetch time is recorded when
  its answer is decided; over ``request_percentage`` the answer is the throttled one
  above (the fetch size taken back), with the larger of the two throttles.  A
  follower's fetch is exempt.
- Record bytes of v4+ are never read into Python on plain connections: each
  partition's ``records`` is a marker that the connection replaces with the log's
  file ranges the read found, sent with os.sendfile (``kafkapy.network.zero_copy``); a
  follower's answer (below) carries those file ranges themselves and is encoded around
  them.
- A follower's Fetch (v12+) is the replication round's: it is read into the replica
  fetcher's own record (``FetchDecode``, ``replication.fetch_request.decode``) and
  answered as plain records encoded by hand (``replication.fetch_response``), the same
  bytes as kafka-python's objects without building them; an answer with a tagged field
  (a diverging epoch, the current leader) is built as kafka-python's objects as before.
"""
from __future__ import annotations

import structlog

from kafkapy.api.context import CloseConnection
from kafkapy.metrics import counters as metrics
from kafkapy.network.zero_copy import PartsResponse, ZeroCopyResponse, new_marker
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.protocol.messages import REQUESTS, RESPONSES
from kafkapy.security import authz
from kafkapy.records.down_convert import (DownConversionError, down_convert,
                                          magic_for_fetch_version)
from kafkapy.quota import request as request_quota
from kafkapy.quota.client import session_user
from kafkapy.replication.fetch_session import (PartitionAnswer, PartitionRequest,
                                               TopicIdPartition)
from kafkapy.replication.fetch_request import decode as decode_replica_fetch
from kafkapy.replication.fetch_response import (MIN_VERSION as REPLICA_ANSWER_FROM,
                                                ReplicaFetchResponse, ReplicaPartition,
                                                ReplicaTopic)
from kafkapy.replication.replica_manager import FetchParams, LogReadResult

API_KEY = 1
MIN_VERSION = 0
MAX_VERSION = 17

_REQUEST = REQUESTS[API_KEY]
_R = RESPONSES[API_KEY]
_Topic = _R.FetchableTopicResponse
_Partition = _Topic.PartitionData
_ZSTD_FROM = 10  # Fetch versions that may carry zstd batches
_STORAGE_ERROR_KNOWN_FROM = 6
_LEADER_HINT_FROM = 16
_INT_MAX = 2 ** 31 - 1
# What a partition adds to a fetch answer besides its records (index, error, offsets,
# aborted transactions' count, ...), counted into the consumer's byte rate.
_PARTITION_OVERHEAD = 46
_LEADER_HINT_ERRORS = (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH)
_log = structlog.get_logger("kafkapy.handlers.fetch")


class FetchDecode:
    """What the connection uses of a request class (``decode``; ``name`` and
    ``max_version`` for the ApiSpec): kafka-python's FetchRequest, except that a
    follower's Fetch (v12+) is read into the replica fetcher's own record
    (``ReplicaFetchRequest``, the same fields without kafka-python's objects).  Anything
    else, a consumer's Fetch among them, kafka-python decodes (or refuses)."""

    KAFKA_CLASS = _REQUEST
    name = _REQUEST.name
    max_version = _REQUEST.max_version

    @staticmethod
    def decode(data, version=None, header=False, framed=False):
        if version is not None and not header and not framed:
            request = decode_replica_fetch(memoryview(data), version)
            if request is not None:
                return request
        return _REQUEST.decode(data, version=version, header=header, framed=framed)


REQUEST_CLS = FetchDecode


def handle(ctx, request):
    services = ctx.services
    fetch_data, forgotten = _fetch_data(ctx, request)
    replica = _replica_id(ctx, request)
    context = services.fetch_manager.new_context(
        ctx.api_version, request.session_id, request.session_epoch, replica >= 0,
        fetch_data, forgotten, services.cache.topic_name, services.clock.time_ms())
    if services.authorizer is None:
        interesting, erroneous = _classify(services, context.partitions())
    else:
        interesting, erroneous = _authorize(ctx, replica, context.partitions())
    answer = _Answer(ctx, request, context, erroneous, replica >= 0)
    return services.replica_manager.fetch_messages(
        _params(ctx, request, replica), interesting, answer.respond, context.unchanged)


def _params(ctx, request, replica: int) -> FetchParams:
    """KafkaApis' FetchParams: the sizes capped by fetch.max.bytes (min_bytes by
    max_bytes), the follower's broker epoch (v15+)."""
    max_bytes = min(request.max_bytes, ctx.services.config["fetch.max.bytes"])
    quota = ctx.services.client_quotas.fetch
    if replica < 0 and quota.enabled:
        # a consumer gets at most what its quota allows in a window, so it always progresses
        window = quota.max_value_in_window(session_user(ctx.session), ctx.client_id or "")
        max_bytes = min(max_bytes, int(min(window, _INT_MAX)))
    state = request.replica_state if ctx.api_version >= 15 else None
    return FetchParams(ctx.api_version, replica,
                       state.replica_epoch if state is not None else -1,
                       request.max_wait_ms, min(request.min_bytes, max_bytes), max_bytes,
                       request.isolation_level)


def _fetch_data(ctx, request):
    """The request's partitions (a later duplicate updates the first) and forgotten ones."""
    by_id = ctx.api_version >= 13
    names = ctx.services.cache.topic_name
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
            return [], [LogReadResult(tip, req, ErrorCode.TOPIC_AUTHORIZATION_FAILED, aborted=[])
                        for tip, req in partitions]
        allowed = set(named)
    else:
        allowed = authz.filter_allowed(ctx, authz.READ, authz.TOPIC, named)
    interesting, erroneous = [], []
    for tip, req in partitions:
        if tip.topic is not None and tip.topic not in allowed:
            erroneous.append(LogReadResult(tip, req, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                           aborted=[]))
        else:
            more, errors = _classify(ctx.services, [(tip, req)])
            interesting += more
            erroneous += errors
    return interesting, erroneous


def _classify(services, partitions):
    """Split into partitions to read and those answered without reading (Kafka's order)."""
    interesting, erroneous = [], []
    for tip, req in partitions:
        if tip.topic is None:
            erroneous.append(LogReadResult(tip, req, ErrorCode.UNKNOWN_TOPIC_ID, aborted=[]))
        elif services.cache.partition(tip.topic, tip.partition) is None:
            erroneous.append(LogReadResult(tip, req, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                           aborted=[]))
        else:
            interesting.append((tip, req))
    return interesting, erroneous


class _Answer:
    """The handler's half of one fetch (Kafka's processResponseCallback): let the session
    pick the partitions to send, convert or refuse what this version cannot carry, and
    encode the answer."""

    def __init__(self, ctx, request, context, erroneous: list[LogReadResult],
                 follower: bool) -> None:
        self.ctx = ctx
        self.request = request
        self.context = context
        self.erroneous = erroneous
        self.follower = follower

    def respond(self, results: list[LogReadResult]):
        """The response for the partitions read (and those answered unread)."""
        ctx = self.ctx
        if self.follower:
            request_quota.exempt(ctx)
        elif ctx.timer is not None or ctx.services.client_quotas.fetch.enabled:
            throttled = self._throttled(results)
            if throttled is not None:
                return throttled
        updates = results + self.erroneous
        error, session_id, kept = self.context.generate(
            [(r.tip, _session_answer(r)) for r in updates], ctx.services.clock.time_ms())
        if self.follower and ctx.api_version >= REPLICA_ANSWER_FROM:
            answer = self._replica_answer([updates[i] for i in kept], error, session_id)
            if answer is not None:
                return answer
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
            ctx.services.replica_manager.record_leader_throttled(updates[i] for i in kept)
        response = ctx.response(throttle_time_ms=0, error_code=error, session_id=session_id,
                                responses=topics, node_endpoints=list(endpoints.values()))
        return ZeroCopyResponse(response, slices) if slices else response

    def _replica_answer(self, chosen: list[LogReadResult], error: int, session_id: int):
        """A follower's answer as plain records, encoded by hand (``ReplicaFetchResponse``),
        or None when a partition needs a tagged field, which only kafka-python's objects
        carry (a diverging epoch, the current leader).  ``_refusal`` never refuses a
        follower's v12+ read (its refusals are for versions below 10 and consumers)."""
        version = self.ctx.api_version
        for result in chosen:
            hinted = version >= _LEADER_HINT_FROM and result.error_code in _LEADER_HINT_ERRORS
            if result.diverging is not None or hinted:
                return None
        zero_copy = self.ctx.zero_copy
        topics: list = []
        for result in chosen:
            metrics.BROKER.replication_bytes_out += result.size
            aborted = result.aborted
            if aborted:
                aborted = [(t.producer_id, t.first_offset) for t in aborted]
            # The slices read go to the answer as they are: it encodes around them.
            records = (result.found if zero_copy and result.size
                       else self._records(result, None))
            data = ReplicaPartition(result.tip.partition, result.error_code,
                                    result.high_watermark, result.last_stable_offset,
                                    result.log_start_offset, aborted, records)
            _add_to_topics(topics, result.tip, data, ReplicaTopic)
        self.ctx.services.replica_manager.record_leader_throttled(chosen)
        return PartsResponse(ReplicaFetchResponse(version, error, session_id, topics))

    def _throttled(self, results: list[LogReadResult]):
        """Kafka's fetch and request quotas: record the request's time and the answer's
        size; over either quota, take the size back and answer nothing (no partitions)
        with the larger throttle time, then mute the connection for it."""
        ctx = self.ctx
        quotas = ctx.services.client_quotas
        quota = quotas.fetch
        user, client = session_user(ctx.session), ctx.client_id or ""
        size = sum(r.size for r in results) + _PARTITION_OVERHEAD * (
            len(results) + len(self.erroneous))
        bytes_ms = quota.record(user, client, size)
        throttle_ms = request_quota.throttle_with(quotas.request, ctx, bytes_ms,
                                                  lambda ms: quota.throttled(user, client, ms))
        if throttle_ms <= 0:
            return None
        quota.unrecord(user, client, size)
        error, session_id = self.context.throttled(ctx.services.clock.time_ms())
        return ctx.response(throttle_time_ms=throttle_ms, error_code=error,
                            session_id=session_id, responses=[], node_endpoints=[])

    def _partition_data(self, result: LogReadResult, slices, endpoints):
        version = self.ctx.api_version
        refusal = self._refusal(result)
        if refusal is None:
            try:
                records = self._records(result, slices)
            except DownConversionError:
                raise   # the whole fetch fails (respond)
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
                          aborted_transactions=_aborted_transactions(result.aborted),
                          preferred_read_replica=-1, records=records)
        if result.diverging is not None:
            data.diverging_epoch = _Partition.EpochEndOffset(epoch=result.diverging[0],
                                                             end_offset=result.diverging[1])
        if version >= _LEADER_HINT_FROM and error in _LEADER_HINT_ERRORS:
            data.current_leader = self._leader_hint(result.tip, endpoints)
        return data

    def _conversion_failed(self, result: LogReadResult, err: DownConversionError):
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

    def _refusal(self, result: LogReadResult) -> int | None:
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

    def _records(self, result: LogReadResult, slices) -> bytes:
        magic = magic_for_fetch_version(self.ctx.api_version)
        if magic is not None:
            raw = result.read_bytes()
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
        return result.read_bytes()

    def _leader_hint(self, tip: TopicIdPartition, endpoints):
        """The partition's leader and epoch as this broker knows them; its endpoint."""
        services = self.ctx.services
        leader, epoch = services.replica_manager.leader_and_epoch(tip.topic, tip.partition)
        node = services.cache.brokers_for(self.ctx.listener).get(leader)
        if node is not None:
            endpoints[leader] = _R.NodeEndpoint(node_id=node.node_id, host=node.host,
                                                port=node.port, rack=node.rack)
        return _Partition.LeaderIdAndEpoch(leader_id=leader, leader_epoch=epoch)


def _session_answer(result: LogReadResult) -> PartitionAnswer:
    """What the fetch session keeps of a partition's answer."""
    return PartitionAnswer(result.error_code, result.high_watermark, result.log_start_offset,
                           result.size, diverging=result.diverging is not None)


def _aborted_transactions(aborted):
    """The log's aborted transactions as the response's (None and [] as they are)."""
    if not aborted:
        return aborted
    return [_Partition.AbortedTransaction(producer_id=t.producer_id, first_offset=t.first_offset)
            for t in aborted]


def _add_to_topics(topics: list, tip: TopicIdPartition, data, topic_type=_Topic) -> None:
    """Append to the last topic if it is the same one, else start a topic (Kafka's order)."""
    if topics:
        last = topics[-1]
        same = (last.topic_id == tip.topic_id) if tip.topic_id else (
            last.topic_id is None and last.topic == (tip.topic or ""))
        if same:
            last.partitions.append(data)
            return
    topics.append(topic_type(topic=tip.topic or "", topic_id=tip.topic_id, partitions=[data]))
