"""What the append path stores and answers for timestamps at the edges, against Kafka 3.9.

The same Produce request goes to the real Kafka 3.9 broker and to kafkapy of the
differential suite, each on a fresh one-partition topic with the same configs; the answers
(error code, base offset) and the stored batch, fetched back raw, must be equal byte for
byte (the append time, and so the CRC, of a LogAppendTime topic's batch are masked).
Covered: the header's maxTimestamp Kafka's LogValidator writes (the largest record
timestamp, not the producer's claim; attributes rebuilt when it changes), old magic-1
messages with timestamps below -1 (refused by Kafka's MemoryRecordsBuilder, in its order
against the other record checks) or at Long.MAX_VALUE (a Long.MIN_VALUE varlong delta).
"""
from __future__ import annotations

import struct
import time
import zlib

import pytest

from kafkapy.records.batch import iter_headers
from kafkapy.records.record import build_batch, compress
from tests.support.batchcheck_craft import claimed

# Recent, so that no retention check removes what a case stored during the run.
T = int(time.time()) * 1000 - 60_000
LONG_MAX = (1 << 63) - 1
FUTURE = T + 10**9  # beyond message.timestamp.after.max.ms of BOUNDED
BOUNDED = {"message.timestamp.after.max.ms": "3600000"}
OLD_BOUNDED = {"message.timestamp.before.max.ms": "3600000"}
COMPACTED = {"cleanup.policy": "compact"}
APPEND_TIME = {"message.timestamp.type": "LogAppendTime"}


def _message(value: bytes, timestamp: int, key: bytes | None = None, offset: int = 0,
             attributes: int = 0) -> bytes:
    body = struct.pack(">bbq", 1, attributes, timestamp)
    for blob in (key, value):
        body += struct.pack(">i", -1) if blob is None else struct.pack(">i", len(blob)) + blob
    return struct.pack(">qiI", offset, 4 + len(body), zlib.crc32(body)) + body


def _gzip_set(*messages: bytes) -> bytes:
    return _message(compress(1, b"".join(messages)), T, offset=len(messages) - 1,
                    attributes=1)


def _two(first: int, second: int, **kw) -> bytes:
    return _message(b"x", first, **kw) + _message(b"y", second, offset=1)


PAIR = [(b"k", b"v", (), T), (None, b"w", (), T + 100)]

# name -> (topic configs, Produce version, records)
CASES = {
    "v2-record-at-minus-5": ({}, 9, build_batch([(None, b"x", (), -5)])),
    "v2-claimed-max-above": ({}, 9, claimed(build_batch(PAIR), T + 10**9)),
    "v2-claimed-max-below": ({}, 9, claimed(build_batch(PAIR), T - 10**6)),
    "v2-claimed-no-timestamp": ({}, 9, claimed(build_batch(PAIR), -1)),
    "v2-unknown-attribute-bits-rewritten": (
        {}, 9, claimed(build_batch(PAIR), T + 5, attributes=0x0180)),
    "v2-unknown-attribute-bits-kept": (
        {}, 9, claimed(build_batch(PAIR), T + 100, attributes=0x0180)),
    "v2-delete-horizon-bit-kept": ({}, 9, claimed(build_batch(PAIR), T + 5, attributes=0x40)),
    "v2-log-append-time-batch-on-create-time-topic": (
        {}, 9, build_batch(PAIR, timestamp_type=1)),
    "v2-log-append-time-topic-unknown-bits": (
        APPEND_TIME, 9, claimed(build_batch(PAIR), T + 100, attributes=0x0180)),
    "v2-gzip-claimed-max": ({}, 9, claimed(build_batch(PAIR, compression=1), T + 10**9)),
    "v2-gzip-negative-records": (
        {}, 9, build_batch([(None, b"x", (), -5), (None, b"y", (), -7)], compression=1)),
    "v2-lz4-only-minus-one": (
        {}, 9, claimed(build_batch([(None, b"x", (), -1)], compression=3), 5)),
    "v1-minus-5": ({}, 2, _message(b"x", -5)),
    "v1-minus-5-second": ({}, 2, _two(T, -5)),
    "v1-long-min": ({}, 2, _message(b"x", -(1 << 63))),
    "v1-minus-5-gzip": ({}, 2, _gzip_set(_message(b"x", -5), _message(b"y", T, offset=1))),
    "v1-minus-5-log-append-time-wrapper": (
        {}, 2, _message(compress(1, _message(b"x", T)), -5, attributes=1 | 0x08)),
    "v1-minus-5-log-append-time-topic": (APPEND_TIME, 2, _message(b"x", -5)),
    "v1-minus-1-then-long-max": ({}, 2, _two(-1, LONG_MAX)),
    "v1-long-max-then-minus-1": ({}, 2, _two(LONG_MAX, -1)),
    "v1-minus-1-then-long-max-gzip-topic": ({"compression.type": "gzip"}, 2,
                                            _two(-1, LONG_MAX)),
    "v1-minus-5-then-future": (BOUNDED, 2, _two(-5, FUTURE)),
    "v1-future-then-minus-5": (BOUNDED, 2, _two(FUTURE, -5)),
    "v1-gzip-minus-5-then-future": (
        BOUNDED, 2, _gzip_set(_message(b"x", -5), _message(b"y", FUTURE, offset=1))),
    "v1-minus-5-keyed-then-keyless": (COMPACTED, 2, _two(-5, T, key=b"k")),
    "v1-keyless-then-minus-5-keyed": (
        COMPACTED, 2, _message(b"x", T) + _message(b"y", -5, key=b"k", offset=1)),
    "v1-gzip-minus-5-keyed-then-keyless": (
        COMPACTED, 2, _gzip_set(_message(b"x", -5, key=b"k"), _message(b"y", T, offset=1))),
    "v1-old-keyed-then-keyless": (
        dict(COMPACTED, **OLD_BOUNDED), 2, _two(1000, T, key=b"k")),
    "v1-gzip-keyless-then-old": (
        dict(COMPACTED, **OLD_BOUNDED), 2,
        _gzip_set(_message(b"x", T), _message(b"y", 1000, key=b"k", offset=1))),
    "v1-log-append-time-message-on-log-append-time-topic": (
        APPEND_TIME, 2, _message(b"x", T, attributes=0x08)),
    "v1-log-append-time-wrapper-on-log-append-time-topic": (
        APPEND_TIME, 2, _message(compress(1, _message(b"x", T)), T, attributes=1 | 0x08)),
    "v1-log-append-time-message-on-create-time-topic": ({}, 2, _message(b"x", T, attributes=8)),
}


def _create(side, topic: str, configs: dict) -> None:
    side.call(19, 5, {"timeout_ms": 30000, "topics": [
        {"name": topic, "num_partitions": 1, "replication_factor": 1, "assignments": [],
         "configs": [{"name": k, "value": v} for k, v in configs.items()]}]})

    def leaderless(r):
        return int(any(t.error_code or any(p.leader_id < 0 for p in t.partitions)
                       for t in r.topics))
    side.call(3, 12, {"topics": [{"name": topic}], "allow_auto_topic_creation": False},
              retry_codes=(1,), code=leaderless)


def _outcome(side, topic: str, version: int, records: bytes, append_time: bool):
    answer = side.conn.exchange(0, version, {
        "transactional_id": None, "acks": -1, "timeout_ms": 10000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}]})
    assert answer.response is not None, f"{side.name}: {answer.failure}"
    produced = answer.response.responses[0].partition_responses[0]
    fetched = side.conn.exchange(1, 12, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
        "isolation_level": 0, "session_id": 0, "session_epoch": -1, "topics": [
            {"topic": topic, "partitions": [
                {"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
                 "last_fetched_epoch": -1, "log_start_offset": -1,
                 "partition_max_bytes": 1 << 20}]}],
        "forgotten_topics_data": [], "rack_id": ""})
    assert fetched.response is not None, f"{side.name}: {fetched.failure}"
    stored = bytearray(fetched.response.responses[0].partitions[0].records or b"")
    if append_time:  # the append time and the CRC over it are each broker's own
        for h in iter_headers(stored):
            stored[h.position + 17:h.position + 21] = bytes(4)
            stored[h.position + 35:h.position + 43] = bytes(8)
    return produced.error_code, produced.base_offset, stored.hex()


@pytest.mark.parametrize("name", CASES)
def test_append_matches_kafka(conformance_brokers, name):
    configs, version, records = CASES[name]
    topic = f"conf-append-{name}"
    outcomes = []
    for side in conformance_brokers:
        _create(side, topic, configs)
        outcomes.append(_outcome(side, topic, version, records, configs == APPEND_TIME))
    kafka, ours = outcomes
    assert ours == kafka


def test_list_offsets_by_time_matches_kafka_after_a_claimed_max(conformance_brokers):
    topic = "conf-append-list-offsets"
    later = build_batch([(b"k", b"x", (), T + 200)])
    answers = []
    for side in conformance_brokers:
        _create(side, topic, {})
        for records in (claimed(build_batch(PAIR), T + 10**9), later):
            side.call(0, 9, {"transactional_id": None, "acks": -1, "timeout_ms": 10000,
                             "topic_data": [{"name": topic, "partition_data": [
                                 {"index": 0, "records": records}]}]})
        got = []
        for timestamp in (-3, T + 50, T + 150, T + 10**8):
            r = side.call(2, 7, {"replica_id": -1, "isolation_level": 0, "topics": [
                {"name": topic, "partitions": [{"partition_index": 0, "timestamp": timestamp,
                                                "current_leader_epoch": -1}]}]})
            p = r.topics[0].partitions[0]
            got.append((p.error_code, p.offset, p.timestamp))
        answers.append(got)
    kafka, ours = answers
    assert ours == kafka
