"""Fetch (key 1): serve whole record batches from partition logs.

Versions 4 (Kafka 4.0's minimum, message format v2) to 17 (Kafka 3.9).
- Topics by name, or by topic id from v13 (unknown id -> UNKNOWN_TOPIC_ID).
- Consumers (replica_id -1) read up to the high watermark (read_uncommitted)
  or the last stable offset (read_committed); an offset outside
  [log start, log end] -> OFFSET_OUT_OF_RANGE.
- ``partition_max_bytes`` per partition and ``max_bytes`` in all, except that
  the first batch found is always returned whole so a consumer can progress
  past a batch larger than its limits (KIP-74).
- Fetch sessions (KIP-227) are not kept: every answer carries session id 0,
  which tells the client to send full fetches; an unknown non-zero session id
  gets FETCH_SESSION_ID_NOT_FOUND.
- If fewer than ``min_bytes`` are available and no partition errored, the
  request becomes a DelayedFetch in the fetch purgatory, watched on each of its
  partitions: an append completes it as soon as enough bytes are there, a
  leadership change or error at once, and ``max_wait_ms`` at the latest.
- Record bytes are never read into Python on plain connections: each
  partition's ``records`` is a marker that the connection replaces with the
  segment file ranges, sent with os.sendfile (``kafkapy.network.zero_copy``).
"""
from __future__ import annotations

from kafkapy import metrics
from kafkapy.network.zero_copy import ZeroCopyResponse, new_marker
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.protocol.messages import RESPONSES
from kafkapy.purgatory.delayed_fetch import DelayedFetch, FetchPartitionStatus

API_KEY = 1
MIN_VERSION = 4
MAX_VERSION = 17

_R = RESPONSES[API_KEY]
_Topic = _R.FetchableTopicResponse
_Partition = _Topic.PartitionData
READ_COMMITTED = 1


def handle(ctx, request):
    if request.session_id != 0:
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
                            session_id=0, responses=[])
    wanted = _resolve(ctx, request)
    slices: dict[bytes, list] = {}
    responses, total, errored = _read_all(ctx, request, wanted, slices)
    if request.max_wait_ms <= 0 or total >= request.min_bytes or errored:
        return _answer(ctx, responses, slices)
    return _delay(ctx, request, wanted)


def _answer(ctx, responses, slices):
    response = ctx.response(throttle_time_ms=0, error_code=0, session_id=0,
                            responses=responses)
    return ZeroCopyResponse(response, slices) if slices else response


def _delay(ctx, request, wanted):
    """Park the fetch in the purgatory; the future resolves with the response."""
    broker = ctx.broker
    future = broker.loop.create_future()
    statuses = [FetchPartitionStatus(name, p.partition, p.fetch_offset, p.partition_max_bytes,
                                     _start_metadata(broker, name, p))
                for name, _, parts in wanted for p in parts]

    def read():
        slices: dict[bytes, list] = {}
        responses, _, _ = _read_all(ctx, request, wanted, slices)
        return _answer(ctx, responses, slices)

    def respond(response):
        if not future.done():
            future.set_result(response)

    def state(topic, index):
        return _end_metadata(broker, topic, index, request.isolation_level)

    operation = DelayedFetch(request.max_wait_ms, request.min_bytes, statuses, read, respond,
                             state)
    keys = [(s.topic, s.partition) for s in statuses if s.topic]
    broker.fetch_purgatory.try_complete_else_watch(operation, keys)
    return future


def _start_metadata(broker, name, p):
    partition = broker.replica_manager.partitions.get((name, p.partition)) if name else None
    return partition.offset_metadata(p.fetch_offset) if partition is not None else None


def _end_metadata(broker, topic, index, isolation_level):
    partition = broker.replica_manager.partitions.get((topic, index)) if topic else None
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if not partition.is_leader:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    upper = (partition.last_stable_offset if isolation_level == READ_COMMITTED
             else partition.high_watermark)
    return partition.offset_metadata(upper)


def _resolve(ctx, request):
    """[(name or None, topic_id, partitions)] with names resolved from ids at v13+."""
    cache = ctx.broker.cache
    out = []
    for topic in request.topics:
        if ctx.api_version >= 13:
            out.append((cache.topic_name(topic.topic_id), topic.topic_id, topic.partitions))
        else:
            out.append((topic.topic, None, topic.partitions))
    return out


def _read_all(ctx, request, wanted, slices: dict[bytes, list]):
    remaining = request.max_bytes
    total = 0
    errored = False
    responses = []
    for name, topic_id, partitions in wanted:
        parts = []
        for p in partitions:
            data, size = _read_one(ctx, request, name, p, min(p.partition_max_bytes, remaining),
                                   (total == 0), slices)
            total += size
            remaining = max(0, remaining - size)
            errored = errored or data.error_code != 0
            parts.append(data)
        responses.append(_Topic(topic=name or "", topic_id=topic_id, partitions=parts))
    return responses, total, errored


def _read_one(ctx, request, name, p, max_bytes: int, min_one: bool, slices):
    """(partition data, record bytes) for one partition; file ranges go into ``slices``."""
    if name is None:
        return _error(p.partition, ErrorCode.UNKNOWN_TOPIC_ID), 0
    try:
        partition = ctx.broker.replica_manager.leader_partition(name, p.partition,
                                                                p.current_leader_epoch)
        upper = (partition.last_stable_offset if request.isolation_level == READ_COMMITTED
                 else partition.high_watermark)
        found = partition.log.read(p.fetch_offset, max_bytes, upper, min_one)
    except KafkaError as err:
        return _error(p.partition, err.code), 0
    size = sum(s.size for s in found)
    if ctx.zero_copy and size:
        records = new_marker()
        slices[records] = found
    else:
        records = b"".join(s.read_bytes() for s in found)
        metrics.FALLBACK_BYTES.inc(size)
    return _Partition(partition_index=p.partition, error_code=0,
                      high_watermark=partition.high_watermark,
                      last_stable_offset=partition.last_stable_offset,
                      log_start_offset=partition.log.log_start_offset,
                      aborted_transactions=(_aborted(partition, p.fetch_offset, upper, size)
                                            if request.isolation_level == READ_COMMITTED
                                            else None),
                      preferred_read_replica=-1, records=records), size


def _aborted(partition, fetch_offset: int, upper: int, size: int) -> list:
    """read_committed: the aborted transactions overlapping [fetch_offset, LSO)."""
    if not size:
        return []
    return [_Partition.AbortedTransaction(producer_id=t.producer_id, first_offset=t.first_offset)
            for t in partition.log.collect_aborted_transactions(fetch_offset, upper)]


def _error(index: int, code: int):
    return _Partition(partition_index=index, error_code=code, high_watermark=-1,
                      last_stable_offset=-1, log_start_offset=-1, aborted_transactions=None,
                      preferred_read_replica=-1, records=None)
