"""A leader's Fetch response to a follower (v12-v17), encoded by hand.

The leader answers each follower's Fetch every replication round; building kafka-python's
message objects (one per topic, partition and response) and running its generic encoder
cost about as much as reading the log for the answer, so the Fetch handler builds these
plain records for a follower instead and encodes them here.  The records field is what
the handler gives: the file slices the log's read found, which ``encode_parts`` leaves as
parts between the bytes for the connection to send with sendfile, or bytes.

Byte format: Kafka's FetchResponse body at ``version`` (12 to 17, all flexible: compact
arrays, strings and bytes, a tagged-field count after every struct): throttle_time_ms
int32, error_code int16, session_id int32, responses (topic compact string v12 / topic_id
uuid v13+; partitions: partition_index int32, error_code int16, high_watermark int64,
last_stable_offset int64, log_start_offset int64, aborted_transactions compact nullable
array of (producer_id int64, first_offset int64, no tags), preferred_read_replica int32,
records compact nullable bytes, no tags; no tags), then no tagged field.
Only answers without a tagged field are encoded here: a partition with a diverging epoch
or a current leader, or node endpoints (v16+), are for kafka-python's objects (the Fetch
handler's ``_replica_answer`` leaves those to it).
Invariant: ``encode()`` gives exactly the bytes kafka-python's FetchResponse of the same
version and fields gives (tests/unit/replication/test_fetch_response.py checks it).

The follower reads its leader's answer with ``decode`` (the replica fetcher's request
names it as its answer's decoder): the fields kafka-python's decoding gives, records as a
view of the answer's frame (not a copy), without its objects.  ``decode`` takes only
answers ``encode`` could have written, from kafkapy or Kafka alike, and answers None for
anything else (a tagged field: a diverging epoch, a current leader, a snapshot id, node
endpoints; a preferred read replica; bytes left over; malformed), which kafka-python then
decodes.
"""
from __future__ import annotations

import struct
import uuid
from typing import NamedTuple

from kafkapy.protocol.varint import read_uvarint, write_uvarint
from kafkapy.replication.fetch_wire import (MALFORMED, read_topic_ref, write_compact_bytes,
                                            write_topic_ref)

MIN_VERSION, MAX_VERSION = 12, 17
_HEAD = struct.Struct(">ihi")          # throttle_time_ms, error_code, session_id
_PARTITION = struct.Struct(">ihqqq")   # partition_index .. log_start_offset
_ABORTED = struct.Struct(">qqb")       # producer_id, first_offset, no tags
_NOT_PREFERRED = struct.pack(">i", -1)
_INT32 = struct.Struct(">i")


class ReplicaPartition(NamedTuple):
    partition_index: int
    error_code: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted: list | None        # (producer_id, first_offset) of each; None: null
    records: bytes | memoryview | list | None    # list: file slices (``encode_parts``)

    # kafka-python's names for what such an answer never carries (the fetcher reads them)
    diverging_epoch = None
    current_leader = None
    preferred_read_replica = -1


class ReplicaTopic(NamedTuple):
    topic: str
    topic_id: uuid.UUID | None
    partitions: list[ReplicaPartition]


class ReplicaFetchResponse:
    """One Fetch answer to a follower; what the connection uses of a response is
    ``encode()`` (the body) and ``flexible_version_q``."""

    __slots__ = ("version", "throttle_time_ms", "error_code", "session_id", "responses")

    def __init__(self, version: int, error_code: int, session_id: int,
                 responses: list[ReplicaTopic], throttle_time_ms: int = 0) -> None:
        if not MIN_VERSION <= version <= MAX_VERSION:
            raise ValueError(f"Fetch response v{version} is not encoded here")
        self.version = version
        self.throttle_time_ms = throttle_time_ms
        self.error_code = error_code
        self.session_id = session_id
        self.responses = responses

    @staticmethod
    def flexible_version_q(version: int) -> bool:
        return True

    def encode(self) -> bytes:
        """The body, every partition's records given as bytes (or None)."""
        parts = self.encode_parts()
        if len(parts) != 1:
            raise TypeError("records given as file slices: the body is encode_parts()")
        return parts[0]

    def encode_parts(self) -> list:
        """The body as parts: bytes, and where a partition's ``records`` is a list of file
        slices (``fd``, ``position``, ``size``: what the log's read found), those slices,
        for the connection to send with sendfile; the bytes around them are ``encode``'s."""
        by_id = self.version >= 13
        parts: list = []
        out = bytearray(_HEAD.pack(self.throttle_time_ms, self.error_code, self.session_id))
        write_uvarint(out, len(self.responses) + 1)
        for topic in self.responses:
            write_topic_ref(out, topic.topic, topic.topic_id, by_id)
            write_uvarint(out, len(topic.partitions) + 1)
            for p in topic.partitions:
                out += _PARTITION.pack(p.partition_index, p.error_code, p.high_watermark,
                                       p.last_stable_offset, p.log_start_offset)
                aborted = p.aborted
                if aborted is None:
                    out.append(0)
                else:
                    write_uvarint(out, len(aborted) + 1)
                    for producer_id, first_offset in aborted:
                        out += _ABORTED.pack(producer_id, first_offset, 0)
                out += _NOT_PREFERRED
                records = p.records
                if isinstance(records, list):
                    size = 0
                    for piece in records:
                        size += piece.size
                    write_uvarint(out, size + 1)
                    parts.append(bytes(out))
                    for piece in records:
                        if piece.size:
                            parts.append(piece)
                    out = bytearray()
                else:
                    write_compact_bytes(out, records)
                out.append(0)
            out.append(0)
        out.append(0)
        parts.append(bytes(out))
        return parts

    def __repr__(self) -> str:
        return (f"ReplicaFetchResponse(version={self.version}, error_code={self.error_code}, "
                f"session_id={self.session_id}, responses={self.responses!r})")


def decode(data: memoryview, version: int) -> ReplicaFetchResponse | None:
    """A FetchResponse body at ``version`` that ``encode`` could have written, or None."""
    if not MIN_VERSION <= version <= MAX_VERSION:
        return None
    try:
        return _decode(data, version)
    except MALFORMED:
        return None


def _decode(data: memoryview, version: int) -> ReplicaFetchResponse | None:
    by_id = version >= 13
    throttle_time_ms, error_code, session_id = _HEAD.unpack_from(data, 0)
    pos = _HEAD.size
    count, pos = read_uvarint(data, pos)
    if count == 0:
        return None
    topics: list[ReplicaTopic] = []
    for _ in range(count - 1):
        name, topic_id, pos = read_topic_ref(data, pos, by_id)
        n, pos = read_uvarint(data, pos)
        if n == 0:
            return None
        partitions = []
        for _ in range(n - 1):
            partition, pos = _decode_partition(data, pos)
            if partition is None:
                return None
            partitions.append(partition)
        if data[pos]:
            return None     # the topic's tagged fields
        topics.append(ReplicaTopic(name, topic_id, partitions))
        pos += 1
    if data[pos] or pos + 1 != len(data):
        return None         # the response's tagged fields, or bytes left over
    return ReplicaFetchResponse(version, error_code, session_id, topics, throttle_time_ms)


def _decode_partition(data: memoryview, pos: int) -> tuple[ReplicaPartition | None, int]:
    fields = _PARTITION.unpack_from(data, pos)
    pos += _PARTITION.size
    count, pos = read_uvarint(data, pos)
    aborted = None
    if count:
        end = pos + (count - 1) * _ABORTED.size
        rows = list(_ABORTED.iter_unpack(data[pos:end]))
        if len(rows) != count - 1 or any(row[2] for row in rows):
            return None, pos
        aborted = [row[:2] for row in rows]
        pos = end
    if _INT32.unpack_from(data, pos)[0] != -1:
        return None, pos    # a preferred read replica: a consumer's answer
    size, pos = read_uvarint(data, pos + 4)
    records = None
    if size:
        end = pos + size - 1
        if end > len(data):
            return None, pos
        records = data[pos:end]     # a view of the answer's frame, not a copy
        pos = end
    if data[pos]:
        return None, pos    # a diverging epoch, a current leader, a snapshot id
    return ReplicaPartition(*fields, aborted, records), pos + 1
