"""ListOffsets (key 2): offsets by timestamp, earliest, latest and max timestamp.

Versions 0-9 (Kafka 3.9).  Special timestamps:
-2 earliest (log start offset), -1 latest (high watermark, or the last stable
offset for read_committed), -3 max timestamp (v7+: the offset and timestamp of
the record with the largest timestamp), -4 earliest local (v8+: same as
earliest without tiered storage), -5 latest tiered (v9+: offset -1 without
tiered storage).  Any other negative timestamp, or a special one below its
version, gets UNSUPPORTED_VERSION.  Any other timestamp: the first offset whose
timestamp is >= it, or offset -1 / timestamp -1 when none is.
A partition asked for twice gets INVALID_REQUEST for both; a follower-only
replica id or a non-leader gets NOT_LEADER_OR_FOLLOWER.

v0 is Kafka's legacy lookup (UnifiedLog.legacyFetchOffsetsBefore): the
candidates are each segment's base offset (at least the log start offset)
with the segment file's modification time, plus the log end offset "now" when
the active segment is not empty; -1 starts from the last, -2 from the first,
another timestamp from the last candidate modified at or before it; up to
max_num_offsets offsets are answered newest first.  For a consumer
(replica id -1) offsets above the high watermark are replaced by it.

Cost per partition (one request may name 10,000 partitions): from v1 a partition's
answer is a tuple (index, error, timestamp, offset, leader epoch) packed straight
into its topic's encoded partition array (``_encode_results``), which
``handlers.spliced`` puts in the response: the same bytes as kafka-python's encoding
of the objects (tests compare both for every version), without one object per
partition.  v0 (legacy offsets lists) builds the objects.  The request side matches:
``FastDecode`` (this module's ``REQUEST_CLS``, used by the connection) leaves a v1+
topic's partitions as ``Rows``: their wire bytes, unpacked row by row as the handler reads
them, and the common case (latest or earliest, led here, no or the current leader
epoch) is answered inline; everything else goes through ``_lookup``.
Invariant: the answer is the one ``_lookup`` gives for every partition, and a request
``FastDecode`` does not read itself is kafka-python's to decode (or refuse).
"""
from __future__ import annotations

import os
import struct

from kafkapy.security import authz
from kafkapy.handlers.common import repeated
from kafkapy.handlers.spliced import Spliced, array_size
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.protocol.messages import REQUESTS, RESPONSES
from kafkapy.protocol.varint import read_uvarint

API_KEY = 2
MIN_VERSION = 0
MAX_VERSION = 9

EARLIEST, LATEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -2, -1, -3, -4, -5
READ_COMMITTED = 1
CONSUMER = -1  # the replica id a consumer sends
# The first version that may ask for each special timestamp (Kafka's KafkaApis).
_SPECIAL_SINCE = {EARLIEST: 1, LATEST: 1, MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8, LATEST_TIERED: 9}

_R = RESPONSES[API_KEY]
_Topic = _R.ListOffsetsTopicResponse
_Partition = _Topic.ListOffsetsPartitionResponse
_TOPIC_STRUCT = _Topic._struct.array_of   # the element struct
_INT32 = struct.Struct(">i")
_INT16 = struct.Struct(">h")
_FIRST_FLEXIBLE = 6
# A v1+ partition answer: index, error, timestamp, offset (+ leader epoch from v4).
_ROW_V1 = struct.Struct(">ihqq")
_ROW_V4 = struct.Struct(">ihqqi")
# A request partition as the wire has it: index, timestamp (v1-3); index, leader
# epoch, timestamp (v4-5); the same plus its tagged-field count, which must be 0 (v6+).
_ASK_V1 = struct.Struct(">iq")
_ASK_V4 = struct.Struct(">iiq")
_ASK_V6 = struct.Struct(">iiqx")
_REQUEST = REQUESTS[API_KEY]
_RequestTopic = _REQUEST.ListOffsetsTopic


class Rows:
    """A topic's asked partitions as ``_decode_request`` leaves them: their wire bytes,
    unpacked on iteration into (index, timestamp) tuples below v4, (index, leader epoch,
    timestamp) from v4.  Each tuple dies at once: a request of 10,000 partitions keeps
    no 10,000 objects alive (each would count towards a garbage collection)."""

    __slots__ = ("_raw", "_ask", "_count")

    def __init__(self, raw: bytes, ask: struct.Struct, count: int) -> None:
        self._raw = raw
        self._ask = ask
        self._count = count

    def __len__(self) -> int:
        return self._count

    def __iter__(self):
        return self._ask.iter_unpack(self._raw)


class FastDecode:
    """What the connection uses of a request class (``decode``; ``name`` and
    ``max_version`` for the ApiSpec): kafka-python's ListOffsetsRequest, except that
    from v1 a well-formed request keeps each topic's partitions as ``Rows``.  Anything
    unusual (tagged fields, null arrays or names, bytes left over) is decoded by
    kafka-python, as before, which also raises on malformed input."""

    KAFKA_CLASS = _REQUEST
    name = _REQUEST.name
    max_version = _REQUEST.max_version

    @staticmethod
    def decode(data, version=None, header=False, framed=False):
        if version is not None and version >= 1 and not header and not framed:
            try:
                request = _decode_request(memoryview(data), version)
            except (struct.error, UnicodeDecodeError, ValueError, IndexError):
                request = None
            if request is not None:
                return request
        return _REQUEST.decode(data, version=version, header=header, framed=framed)


REQUEST_CLS = FastDecode


def _decode_request(data: memoryview, version: int):
    """The request with ``Rows`` partitions, or None to let kafka-python decode it."""
    flexible = version >= _FIRST_FLEXIBLE
    ask = _ASK_V6 if flexible else _ASK_V4 if version >= 4 else _ASK_V1
    fields = {"replica_id": _INT32.unpack_from(data, 0)[0]}
    pos = 4
    if version >= 2:
        fields["isolation_level"] = data[pos]
        if fields["isolation_level"] >= 128:
            return None
        pos += 1
    count, pos = _array_count(data, pos, flexible)
    if count < 0:
        return None
    topics = []
    for _ in range(count):
        size, pos = _string_size(data, pos, flexible)
        if size < 0:
            return None
        name = bytes(data[pos:pos + size]).decode("utf-8")
        pos += size
        n, pos = _array_count(data, pos, flexible)
        if n < 0:
            return None
        end = pos + n * ask.size
        if end > len(data):
            return None
        if flexible:
            if bytes(data[pos + ask.size - 1:end:ask.size]) != bytes(n):
                return None     # a partition with tagged fields
            if data[end] != 0:
                return None     # the topic's tagged fields
        rows = Rows(bytes(data[pos:end]), ask, n)
        topics.append(_RequestTopic(version=version, name=name, partitions=rows))
        pos = end + flexible
    if flexible:
        if data[pos] != 0:
            return None         # the request's tagged fields
        pos += 1
    if pos != len(data):
        return None
    return _REQUEST(version=version, topics=topics, **fields)


def _array_count(data: memoryview, pos: int, flexible: bool) -> tuple[int, int]:
    """An array's element count (-1: null) and the position after it."""
    if not flexible:
        return _INT32.unpack_from(data, pos)[0], pos + 4
    value, pos = read_uvarint(data, pos)
    return value - 1, pos


def _string_size(data: memoryview, pos: int, flexible: bool) -> tuple[int, int]:
    if not flexible:
        return _INT16.unpack_from(data, pos)[0], pos + 2
    value, pos = read_uvarint(data, pos)
    return value - 1, pos


def handle(ctx, request):
    version = ctx.api_version
    topics = []
    kept: dict[int, bytes] = {}   # id(topic answer) -> its encoded partition array (v1+)
    allowed = None
    if ctx.services.authorizer is not None:
        allowed = authz.filter_allowed(ctx, authz.DESCRIBE, authz.TOPIC, [t.name for t in request.topics])
    # Fields absent at this version read through kafka-python's slow default lookup:
    # read them once per request, not per partition.
    read_committed = version >= 2 and request.isolation_level == READ_COMMITTED
    epochs_sent = version >= 4
    for topic in request.topics:
        denied = allowed is not None and topic.name not in allowed
        if version == 0:
            parts = [_denied(ctx, p) if denied else _legacy(ctx, request, topic.name, p)
                     for p in topic.partitions]
            topics.append(_Topic(name=topic.name, partitions=parts))
            continue
        answer = _Topic(name=topic.name, partitions=[])
        if denied:
            parts = topic.partitions
            indices = ([row[0] for row in parts] if type(parts) is Rows
                       else [p.partition_index for p in parts])
            kept[id(answer)] = _encode_results(
                version, [_result(i, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for i in indices])
        else:
            kept[id(answer)] = _answer_topic(ctx, request, topic.name, topic.partitions,
                                             read_committed, epochs_sent)
        topics.append(answer)
    response = ctx.response(throttle_time_ms=0, topics=topics)
    if version == 0:
        return response
    tail = 1 if version >= _FIRST_FLEXIBLE else 0     # tagged fields
    return Spliced(response, kept, _TOPIC_STRUCT, top_tail=tail, topic_tail=tail)


def _answer_topic(ctx, request, name: str, partitions: list, read_committed: bool,
                  epochs_sent: bool) -> bytes:
    """One topic's encoded partition array (v1+), answers in request order.

    The common case (latest or earliest, the partition led here and online, no leader
    epoch or the current one) is read and packed inline: one dict lookup and a few
    attribute reads per partition (a request may name 10,000 partitions).  Anything
    else goes through ``_lookup``, whose checks (and their order) define the answer;
    the inline case is exactly the one in which all of them pass.
    """
    version = ctx.api_version
    flexible = version >= _FIRST_FLEXIBLE
    row = _ROW_V4 if epochs_sent else _ROW_V1
    stride = row.size + flexible   # flexible: each element ends with its (empty) tags, 0
    count = len(partitions)
    prefix = array_size(count, flexible)
    out = bytearray(len(prefix) + count * stride)
    out[:len(prefix)] = prefix
    pos = len(prefix)
    pack_into = row.pack_into
    if type(partitions) is not Rows:    # decoded by kafka-python, or built by a caller
        partitions = [(p.partition_index, p.current_leader_epoch, p.timestamp)
                      if epochs_sent else (p.partition_index, p.timestamp)
                      for p in partitions]
    indices = {row[0] for row in partitions}
    duplicated = repeated(row[0] for row in partitions) if len(indices) != count else ()
    hosted = ctx.services.replica_manager.partitions.get
    epoch = -1
    for row in partitions:   # (index, timestamp), or (index, leader epoch, timestamp) v4+
        index = row[0]
        ts = row[-1]
        if epochs_sent:
            epoch = row[1]
        part = hosted((name, index))
        if part is not None and (ts == LATEST or ts == EARLIEST) and index not in duplicated:
            state = part.state
            log = part.log
            leader_epoch = state.leader_epoch
            if (state.leader == part.node_id and not log.offline
                    and (epoch < 0 or epoch == leader_epoch)):
                if ts == EARLIEST:
                    offset = log.log_start_offset
                elif read_committed:
                    offset = part.last_stable_offset
                else:
                    offset = log.high_watermark
                if epochs_sent:
                    pack_into(out, pos, index, 0, -1, offset, leader_epoch)
                else:
                    pack_into(out, pos, index, 0, -1, offset)
                pos += stride
                continue
        found = _lookup(ctx, name, index, ts, index in duplicated, read_committed, epoch)
        pack_into(out, pos, *(found if epochs_sent else found[:4]))
        pos += stride
    return bytes(out)


def _encode_results(version: int, rows: list[tuple]) -> bytes:
    """A partition array (v1+) from (index, error, timestamp, offset, epoch) rows."""
    flexible = version >= _FIRST_FLEXIBLE
    if version >= 4:
        packed = [_ROW_V4.pack(*row) for row in rows]
    else:
        packed = [_ROW_V1.pack(*row[:4]) for row in rows]
    if flexible and packed:   # each element ends with its (empty) tagged fields
        return array_size(len(packed), True) + b"\x00".join(packed) + b"\x00"
    return array_size(len(packed), flexible) + b"".join(packed)


def _lookup(ctx, name, index: int, ts: int, duplicated: bool, read_committed: bool,
            current_leader_epoch: int) -> tuple:
    """A v1+ partition's answer row, every case (``_answer_topic`` inlines the common one)."""
    if duplicated:
        return _result(index, ErrorCode.INVALID_REQUEST)
    if ts < 0 and ctx.api_version < _SPECIAL_SINCE.get(ts, 99):
        return _result(index, ErrorCode.UNSUPPORTED_VERSION)
    try:
        partition = ctx.services.replica_manager.leader_partition(name, index,
                                                                current_leader_epoch)
    except KafkaError as err:
        return _result(index, err.code)
    log = partition.log
    epoch = partition.leader_epoch
    if ts in (EARLIEST, EARLIEST_LOCAL):
        return _result(index, 0, -1, log.log_start_offset, epoch)
    if ts == LATEST:
        latest = partition.last_stable_offset if read_committed else partition.high_watermark
        return _result(index, 0, -1, latest, epoch)
    if ts == LATEST_TIERED:
        return _result(index, 0, -1, -1, -1)  # nothing is tiered
    if ts == MAX_TIMESTAMP:
        found = log.max_timestamp_and_offset()
    else:
        found = log.offset_for_timestamp(ts)
    if found is None or found[0] >= partition.high_watermark:
        return _result(index, 0, -1, -1, -1)
    offset, timestamp = found
    return _result(index, 0, timestamp, offset, epoch)


def _denied(ctx, p):
    """v0, DESCRIBE refused on the topic: TOPIC_AUTHORIZATION_FAILED."""
    return _Partition(partition_index=p.partition_index,
                      error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, old_style_offsets=[])


def _result(index: int, error: int, timestamp: int = -1, offset: int = -1,
            epoch: int = -1) -> tuple:
    """A v1+ partition answer as a row for ``_encode_results``."""
    return (index, error, timestamp, offset, epoch)


def _legacy(ctx, request, name, p):
    """A v0 partition: Kafka's legacy, segment-based offset list."""
    index = p.partition_index
    if p.timestamp < EARLIEST:
        return _Partition(partition_index=index, error_code=ErrorCode.UNSUPPORTED_VERSION,
                          old_style_offsets=[])
    try:
        partition = ctx.services.replica_manager.leader_partition(name, index, -1)
    except KafkaError as err:
        return _Partition(partition_index=index, error_code=err.code, old_style_offsets=[])
    offsets = _offsets_before(partition.log, p.timestamp, p.max_num_offsets,
                              ctx.services.clock.time_ms())
    if request.replica_id == CONSUMER:
        hw = partition.high_watermark
        if any(o > hw for o in offsets):
            offsets = [hw] + [o for o in offsets if o <= hw]
    return _Partition(partition_index=index, error_code=0, old_style_offsets=offsets)


def _offsets_before(log, timestamp: int, max_num: int, now_ms: int) -> list[int]:
    candidates = [(max(seg.base_offset, log.log_start_offset),
                   os.fstat(seg.fd).st_mtime_ns // 1_000_000) for seg in log.segments]
    if log.segments[-1].size > 0:
        candidates.append((log.log_end_offset, now_ms))
    if timestamp == LATEST:
        start = len(candidates) - 1
    elif timestamp == EARLIEST:
        start = 0
    else:
        start = len(candidates) - 1
        while start >= 0 and candidates[start][1] > timestamp:
            start -= 1
    count = max(0, min(max_num, start + 1))
    return [candidates[start - j][0] for j in range(count)]
