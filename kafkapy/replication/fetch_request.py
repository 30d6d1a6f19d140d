"""The replica fetcher's Fetch request (v12-v17), encoded by hand.

A follower sends one Fetch per round; building kafka-python's message objects and
running its generic encoder cost more than the rest of the request's path, so the
fetcher builds this plain record instead.  Its fields carry kafka-python's names
(``topics[i].partitions[j].fetch_offset``, ``replica_state.replica_id``, ...) and it
answers what ``BrokerConnection.send`` asks of a request (``API_KEY``,
``API_VERSION``, ``expect_response()``, ``encode()``, and ``decode_response``, the
answer's own decoder: ``fetch_response.decode``).

Byte format: Kafka's FetchRequest body at ``API_VERSION`` (12 to 17, all flexible:
compact arrays and strings, a tagged-field count after every struct):
replica_id int32 (v12-14), max_wait_ms int32, min_bytes int32, max_bytes int32,
isolation_level int8, session_id int32, session_epoch int32, topics (topic compact
string v12 / topic_id uuid v13+; partitions: partition int32, current_leader_epoch
int32, fetch_offset int64, last_fetched_epoch int32, log_start_offset int64,
partition_max_bytes int32, no tags), forgotten_topics_data (topic / topic_id;
partitions compact int32 array), rack_id compact string; then the request's tagged
fields: none below v15, from v15 one, ReplicaState (tag 1: replica_id int32,
replica_epoch int64, no tags).  No ClusterId tag, no ReplicaDirectoryId tag.
Invariant: ``encode()`` gives exactly the bytes kafka-python's FetchRequest of the
same version and fields gives (tests/unit/replication/test_fetch_request.py checks it).

The leader reads a follower's Fetch back into this record (``decode``): the same bytes,
every field kafka-python's decoding gives, without its objects.  ``decode`` takes only
what a follower sends (a ReplicaState naming a broker from v15, a replica id >= 0 below,
no other tagged field, no null array or string) and answers None for anything else, which
kafka-python then decodes (or refuses).
"""
from __future__ import annotations

import struct
import uuid
from typing import NamedTuple

from kafkapy.protocol.varint import read_uvarint, write_uvarint
from kafkapy.replication import fetch_response
from kafkapy.replication.fetch_wire import (MALFORMED, read_topic_ref, write_compact_bytes,
                                            write_topic_ref)

MIN_VERSION, MAX_VERSION = 12, 17
_HEAD = struct.Struct(">iiibii")          # max_wait .. session_epoch
_PARTITION = struct.Struct(">iiqiqib")    # partition .. partition_max_bytes, no tags
_INT32 = struct.Struct(">i")
_REPLICA_STATE_TAG = struct.Struct(">bbbiqb")   # count 1, tag 1, size 13, id, epoch, no tags
_REPLICA_STATE_START = b"\x01\x01\x0d"


class ReplicaState(NamedTuple):
    replica_id: int
    replica_epoch: int


class FetchPartition(NamedTuple):
    partition: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    log_start_offset: int
    partition_max_bytes: int


class FetchTopic(NamedTuple):
    topic: str
    topic_id: uuid.UUID | None
    partitions: list[FetchPartition]


class ForgottenTopic(NamedTuple):
    topic: str
    topic_id: uuid.UUID | None
    partitions: list[int]


class ReplicaFetchRequest:
    """One replica Fetch, v12 (topic names) to v17 (topic ids, ReplicaState)."""

    API_KEY = 1
    __slots__ = ("API_VERSION", "replica_state", "max_wait_ms", "min_bytes",
                 "max_bytes", "isolation_level", "session_id", "session_epoch", "topics",
                 "forgotten_topics_data", "rack_id")

    def __init__(self, version: int, replica_state: ReplicaState, max_wait_ms: int,
                 min_bytes: int, max_bytes: int, isolation_level: int, session_id: int,
                 session_epoch: int, topics: list[FetchTopic],
                 forgotten_topics_data: list[ForgottenTopic], rack_id: str = "") -> None:
        if not MIN_VERSION <= version <= MAX_VERSION:
            raise ValueError(f"replica Fetch v{version} is not encoded here")
        self.API_VERSION = version
        self.replica_state = replica_state
        self.max_wait_ms = max_wait_ms
        self.min_bytes = min_bytes
        self.max_bytes = max_bytes
        self.isolation_level = isolation_level
        self.session_id = session_id
        self.session_epoch = session_epoch
        self.topics = topics
        self.forgotten_topics_data = forgotten_topics_data
        self.rack_id = rack_id

    @property
    def replica_id(self) -> int:
        """v12-14's replica_id field: the ReplicaState's."""
        return self.replica_state.replica_id

    def expect_response(self) -> bool:
        return True

    def decode_response(self, body: memoryview):
        """The leader's answer read by hand (``fetch_response.decode``), or None when
        only kafka-python reads it (a tagged field, ...)."""
        return fetch_response.decode(body, self.API_VERSION)

    def encode(self) -> bytes:
        version = self.API_VERSION
        by_id = version >= 13
        out = bytearray()
        if version <= 14:
            out += _INT32.pack(self.replica_id)
        out += _HEAD.pack(self.max_wait_ms, self.min_bytes, self.max_bytes,
                          self.isolation_level, self.session_id, self.session_epoch)
        write_uvarint(out, len(self.topics) + 1)
        for topic in self.topics:
            write_topic_ref(out, topic.topic, topic.topic_id, by_id)
            write_uvarint(out, len(topic.partitions) + 1)
            for p in topic.partitions:
                out += _PARTITION.pack(p.partition, p.current_leader_epoch, p.fetch_offset,
                                       p.last_fetched_epoch, p.log_start_offset,
                                       p.partition_max_bytes, 0)
            out.append(0)
        write_uvarint(out, len(self.forgotten_topics_data) + 1)
        for topic in self.forgotten_topics_data:
            write_topic_ref(out, topic.topic, topic.topic_id, by_id)
            write_uvarint(out, len(topic.partitions) + 1)
            for index in topic.partitions:
                out += _INT32.pack(index)
            out.append(0)
        write_compact_bytes(out, self.rack_id.encode())
        if version >= 15:
            state = self.replica_state
            out += _REPLICA_STATE_TAG.pack(1, 1, 13, state.replica_id, state.replica_epoch, 0)
        else:
            out.append(0)
        return bytes(out)

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__[1:])
        return f"ReplicaFetchRequest(version={self.API_VERSION}, {fields})"


def decode(data: memoryview, version: int) -> ReplicaFetchRequest | None:
    """A follower's Fetch body at ``version``, or None when it is not one ``encode`` could
    have written (a consumer's, a tagged field other than ReplicaState, a null, bytes left
    over, or malformed)."""
    if not MIN_VERSION <= version <= MAX_VERSION:
        return None
    if version >= 15:
        if bytes(data[-_REPLICA_STATE_TAG.size:][:3]) != _REPLICA_STATE_START:
            return None     # no ReplicaState last: a consumer's (or tagged fields of another kind)
    elif len(data) < 4 or _INT32.unpack_from(data, 0)[0] < 0:
        return None         # a consumer's
    try:
        return _decode(data, version)
    except MALFORMED:
        return None


def _decode(data: memoryview, version: int) -> ReplicaFetchRequest | None:
    by_id = version >= 13
    pos = 0
    replica_id = -1
    if version <= 14:
        replica_id = _INT32.unpack_from(data, 0)[0]
        pos = 4
    head = _HEAD.unpack_from(data, pos)
    pos += _HEAD.size
    topics, pos = _read_topics(data, pos, by_id, _PARTITION, _fetch_topic)
    if topics is None:
        return None
    forgotten, pos = _read_topics(data, pos, by_id, _INT32, _forgotten_topic)
    if forgotten is None:
        return None
    size, pos = read_uvarint(data, pos)
    if size == 0:
        return None
    rack_id = bytes(data[pos:pos + size - 1]).decode()
    pos += size - 1
    if version >= 15:
        tag = _REPLICA_STATE_TAG.unpack_from(data, pos)
        pos += _REPLICA_STATE_TAG.size
        if tag[:3] != (1, 1, 13) or tag[5] != 0:
            return None
        state = ReplicaState(tag[3], tag[4])
    else:
        if data[pos] != 0:
            return None
        pos += 1
        state = ReplicaState(replica_id, -1)
    if pos != len(data) or state.replica_id < 0:
        return None
    return ReplicaFetchRequest(version, state, *head, topics, forgotten, rack_id)


def _read_topics(data: memoryview, pos: int, by_id: bool, row: struct.Struct, topic_of):
    """(topics, position after) of a compact array of topics, each a reference, a compact
    array of fixed-size ``row``s and no tagged field, made by ``topic_of(name, id, rows)``;
    None for a null array, a topic with tagged fields, or one ``topic_of`` refuses."""
    count, pos = read_uvarint(data, pos)
    if count == 0:
        return None, pos
    topics = []
    for _ in range(count - 1):
        name, topic_id, pos = read_topic_ref(data, pos, by_id)
        n, pos = read_uvarint(data, pos)
        end = pos + (n - 1) * row.size
        if n == 0 or end >= len(data) or data[end]:
            return None, pos
        topic = topic_of(name, topic_id, list(row.iter_unpack(data[pos:end])))
        if topic is None:
            return None, pos
        topics.append(topic)
        pos = end + 1
    return topics, pos


def _fetch_topic(name: str, topic_id, rows: list) -> FetchTopic | None:
    if any(row[6] for row in rows):
        return None     # a partition's tagged fields
    return FetchTopic(name, topic_id, [FetchPartition(*row[:6]) for row in rows])


def _forgotten_topic(name: str, topic_id, rows: list) -> ForgottenTopic:
    return ForgottenTopic(name, topic_id, [index for (index,) in rows])

