"""Produce v0-2 (magic 0/1 message sets) against a real broker, as Kafka 3.9 serves them.

Old producers are accepted: each message set is up-converted to one v2 batch on
append (Kafka 3.x stores nothing else), compressed sets included, and read back
by a current consumer with their keys, values and timestamps (-1 for magic 0).
Covered over raw frames (every version x magic x codec, LogAppendTime, compacted
topics, empty sets) and with kafka-python's producer pinned to old API versions.
Timestamps at Java's edges are answered and stored as Kafka 3.9 does: below -1 refused
(UNKNOWN_SERVER_ERROR, in Kafka's order against the other record checks), Long.MAX_VALUE
kept byte for byte.
"""
from __future__ import annotations

import struct
import zlib

import pytest
from confluent_kafka import Consumer, TopicPartition
from kafka import KafkaProducer
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from kafkapy.protocol.messages import REQUESTS
from kafkapy.records.record import compress, decode_records
from tests.support.wire import WireClient, stored_records

Produce = REQUESTS[0]
CreateTopics = REQUESTS[19]
TS = 1_800_000_000_000
RECORDS = [(b"k0", b"v0"), (None, b"v1"), (b"k2", None)]


def legacy(magic: int, codec: int = 0, records=RECORDS) -> bytes:
    b = LegacyRecordBatchBuilder(magic, codec, 1 << 20)
    for i, (k, v) in enumerate(records):
        b.append(i, TS + i if magic else None, k, v)
    return bytes(b.build())


def produce(client, topic, records, version, acks=-1):
    r = client.request(0, version, transactional_id=None, acks=acks, timeout_ms=5000,
                       topic_data=[Produce.TopicProduceData(name=topic, partition_data=[
                           Produce.TopicProduceData.PartitionProduceData(
                               index=0, records=records)])])
    return r.responses[0].partition_responses[0]


def create(client, name, **configs):
    r = client.request(19, 5, topics=[CreateTopics.CreatableTopic(
        name=name, num_partitions=1, replication_factor=1, assignments=[],
        configs=[CreateTopics.CreatableTopic.CreatableTopicConfig(name=k.replace("_", "."),
                                                                  value=v)
                 for k, v in configs.items()])], timeout_ms=5000, validate_only=False)
    assert r.topics[0].error_code == 0


def read(bootstrap, topic, count):
    """(offset, timestamp, key, value) of the first ``count`` records, read by librdkafka."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got = []
    for _ in range(200):  # bounded: 200 polls of at most 0.5 s
        if len(got) >= count:
            break
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            got.append((msg.offset(), msg.timestamp()[1], msg.key(), msg.value()))
    consumer.close()
    return got


@pytest.fixture(scope="module")
def client(broker):
    c = WireClient(broker.bootstrap)
    create(c, "old-plain")
    create(c, "old-append-time", message_timestamp_type="LogAppendTime")
    create(c, "old-compacted", cleanup_policy="compact")
    yield c
    c.close()


CASES = [(v, m, c) for v in (0, 1, 2) for m in (0, 1) for c in (0, 1, 2, 3)
         if not (m == 0 and c == 3)]  # kafka-python builds magic-0 LZ4 only with xxhash


def test_every_old_version_magic_and_codec_is_appended_and_read_back(client, broker):
    for i, (version, magic, codec) in enumerate(CASES):
        r = produce(client, "old-plain", legacy(magic, codec), version)
        assert (r.error_code, r.base_offset) == (0, 3 * i), (version, magic, codec)
        if version == 2:
            assert r.log_append_time_ms == -1
    got = read(broker.bootstrap, "old-plain", 3 * len(CASES))
    assert len(got) == 3 * len(CASES)
    for i, (version, magic, codec) in enumerate(CASES):
        expected = [(3 * i + j, TS + j if magic else -1, k, v)
                    for j, (k, v) in enumerate(RECORDS)]
        assert got[3 * i:3 * i + 3] == expected, (version, magic, codec)


def test_log_append_time_topic_answers_and_stamps_the_append_time(client, broker):
    r = produce(client, "old-append-time", legacy(1, 1), 2)
    assert r.error_code == 0 and r.log_append_time_ms > TS - 10**12
    got = read(broker.bootstrap, "old-append-time", 3)
    assert [t for _, t, _, _ in got] == [r.log_append_time_ms] * 3


def test_compacted_topic_refuses_keyless_old_messages(client):
    r = produce(client, "old-compacted", legacy(1, 0), 2)
    assert r.error_code == 87  # uncompressed: each message is its own batch
    r = produce(client, "old-compacted", legacy(1, 1, RECORDS + [(None, b"v3")]), 2)
    assert r.error_code == 87
    keyed = produce(client, "old-compacted", legacy(0, 1, [(b"a", b"1"), (b"b", b"2")]), 1)
    assert (keyed.error_code, keyed.base_offset) == (0, 0), "refused sets stored nothing"


def test_old_sets_with_no_whole_message_append_nothing(client):
    for data in (b"", b"12345", legacy(1)[:20]):
        r = produce(client, "old-plain", data, 2)
        assert (r.error_code, r.base_offset) == (0, -1)


def test_old_sets_are_checked_like_kafka(client):
    corrupt = bytearray(legacy(1))
    corrupt[-1] ^= 0xFF
    assert produce(client, "old-plain", bytes(corrupt), 2).error_code == 2
    assert produce(client, "old-plain", legacy(1) + b"x" * 20, 2).error_code == 2
    assert produce(client, "old-plain", legacy(1) + legacy(0), 2).error_code == 87
    assert produce(client, "old-plain", legacy(1, 1) + legacy(1, 1), 2).error_code == 87
    assert produce(client, "old-plain", legacy(1), 3).error_code == 87  # v3+: magic 2 only


@pytest.mark.parametrize("api_version,codec", [((0, 9), None), ((0, 9), "gzip"),
                                               ((0, 10, 1), None), ((0, 10, 1), "snappy")])
def test_kafka_python_producer_pinned_to_old_versions(broker, api_version, codec):
    topic = f"old-client-{'-'.join(map(str, api_version))}-{codec}"
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, api_version=api_version,
                             compression_type=codec)
    futures = [producer.send(topic, key=b"k%d" % i, value=b"v%d" % i, timestamp_ms=TS + i)
               for i in range(5)]
    producer.flush(timeout=30)
    assert [f.get(timeout=30).offset for f in futures] == list(range(5))
    producer.close()
    magic_1 = api_version >= (0, 10)
    assert read(broker.bootstrap, topic, 5) == [
        (i, TS + i if magic_1 else -1, b"k%d" % i, b"v%d" % i) for i in range(5)]


# -- timestamps of old messages at Java's edges ----------------------------------------------
# What Kafka 3.9 answered to Produce v2 with these message sets.  Its MemoryRecordsBuilder
# refuses a timestamp below -1 (UNKNOWN_SERVER_ERROR, nothing stored); in an uncompressed set
# each message is checked and appended in turn, so the first message with a problem decides;
# in a compressed set every record is checked first.  [-1, Long.MAX_VALUE] is stored with a
# Long.MIN_VALUE delta, which Java reads back as Long.MAX_VALUE.
LONG_MAX = (1 << 63) - 1
FUTURE = TS + 10**12  # beyond message.timestamp.after.max.ms=3600000 of "old-bounded"


def message(value: bytes, timestamp: int, key: bytes | None = None, offset: int = 0,
            attributes: int = 0) -> bytes:
    """One magic-1 message written by hand (kafka-python will not write these timestamps)."""
    body = struct.pack(">bbq", 1, attributes, timestamp)
    for blob in (key, value):
        body += struct.pack(">i", -1) if blob is None else struct.pack(">i", len(blob)) + blob
    return struct.pack(">qiI", offset, 4 + len(body), zlib.crc32(body)) + body


def gzip_set(*messages: bytes) -> bytes:
    return message(compress(1, b"".join(messages)), TS, offset=len(messages) - 1, attributes=1)




NEGATIVE_CASES = [
    ("old-negative", message(b"x", -5), -1),
    ("old-negative", message(b"x", TS) + message(b"y", -5, offset=1), -1),
    ("old-negative", gzip_set(message(b"x", -5), message(b"y", TS, offset=1)), -1),
    # A LogAppendTime wrapper gives its timestamp to its records.
    ("old-negative", message(compress(1, message(b"x", TS)), -5, attributes=1 | 0x08), -1),
    ("old-bounded", message(b"x", -5) + message(b"y", FUTURE, offset=1), -1),
    ("old-bounded", message(b"x", FUTURE) + message(b"y", -5, offset=1), 32),
    ("old-bounded", gzip_set(message(b"x", -5), message(b"y", FUTURE, offset=1)), 32),
    ("old-negative-compacted", message(b"x", -5, b"k") + message(b"y", TS, offset=1), -1),
    ("old-negative-compacted", message(b"x", TS) + message(b"y", -5, b"k", offset=1), 87),
    ("old-negative-compacted", gzip_set(message(b"x", -5, b"k"), message(b"y", TS, offset=1)),
     87),
]


def test_negative_old_timestamps_are_refused_as_kafka_refuses_them(client):
    create(client, "old-negative")
    create(client, "old-bounded", message_timestamp_after_max_ms="3600000")
    create(client, "old-negative-compacted", cleanup_policy="compact")
    for i, (topic, data, code) in enumerate(NEGATIVE_CASES):
        r = produce(client, topic, data, 2)
        assert (r.error_code, r.base_offset) == (code, -1), i
    for topic in ("old-negative", "old-bounded", "old-negative-compacted"):
        assert stored_records(client, topic) == b"", topic


# Kafka 3.9's stored batch for [-1, Long.MAX_VALUE] (values b"x", b"y"), offset 0, epoch 0.
KAFKA_LONG_MAX = ("00000000000000000000004a0000000002d9fe5725000000000001ffffffffffffffff"
                  "7fffffffffffffffffffffffffffffffffffffffffff000000020e0000000102780020"
                  "00ffffffffffffffffff010201027900")


def test_a_long_max_old_timestamp_is_stored_as_kafka_stores_it(client):
    create(client, "old-long-max")
    r = produce(client, "old-long-max",
                message(b"x", -1) + message(b"y", LONG_MAX, offset=1), 2)
    assert (r.error_code, r.base_offset) == (0, 0)
    batch = stored_records(client, "old-long-max")
    assert batch.hex() == KAFKA_LONG_MAX
    assert [x.timestamp for x in decode_records(batch)] == [-1, LONG_MAX]
