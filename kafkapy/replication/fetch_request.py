"""The replica fetcher's Fetch request (v12-v17), encoded by hand.

A follower sends one Fetch per round; building kafka-python's message objects and
running its generic encoder cost more than the rest of the request's path, so the
fetcher builds this plain record instead.  Its fields carry kafka-python's names
(``topics[i].partitions[j].fetch_offset``, ``replica_state.replica_id``, ...) and it
answers what ``BrokerConnection.send`` asks of a request (``API_KEY``,
``API_VERSION``, ``expect_response()``, ``encode()``).

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
"""
from __future__ import annotations

import struct
import uuid
from typing import NamedTuple

from kafkapy.protocol.varint import write_uvarint

MIN_VERSION, MAX_VERSION = 12, 17
_NO_ID = bytes(16)
_HEAD = struct.Struct(">iiibii")          # max_wait .. session_epoch
_PARTITION = struct.Struct(">iiqiqib")    # partition .. partition_max_bytes, no tags
_INT32 = struct.Struct(">i")
_REPLICA_STATE_TAG = struct.Struct(">bbbiqb")   # count 1, tag 1, size 13, id, epoch, no tags


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
            _topic_ref(out, topic, by_id)
            write_uvarint(out, len(topic.partitions) + 1)
            for p in topic.partitions:
                out += _PARTITION.pack(p.partition, p.current_leader_epoch, p.fetch_offset,
                                       p.last_fetched_epoch, p.log_start_offset,
                                       p.partition_max_bytes, 0)
            out.append(0)
        write_uvarint(out, len(self.forgotten_topics_data) + 1)
        for topic in self.forgotten_topics_data:
            _topic_ref(out, topic, by_id)
            write_uvarint(out, len(topic.partitions) + 1)
            for index in topic.partitions:
                out += _INT32.pack(index)
            out.append(0)
        _compact_string(out, self.rack_id)
        if version >= 15:
            state = self.replica_state
            out += _REPLICA_STATE_TAG.pack(1, 1, 13, state.replica_id, state.replica_epoch, 0)
        else:
            out.append(0)
        return bytes(out)

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__[1:])
        return f"ReplicaFetchRequest(version={self.API_VERSION}, {fields})"


def _topic_ref(out: bytearray, topic, by_id: bool) -> None:
    if by_id:
        out += _NO_ID if topic.topic_id is None else topic.topic_id.bytes
    else:
        _compact_string(out, topic.topic)


def _compact_string(out: bytearray, text: str) -> None:
    data = text.encode()
    write_uvarint(out, len(data) + 1)
    out += data
