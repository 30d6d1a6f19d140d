"""Produce v0-2 (magic 0/1 message sets) against a real broker, as Kafka 3.9 serves them.

Old producers are accepted: each message set is up-converted to one v2 batch on
append (Kafka 3.x stores nothing else), compressed sets included, and read back
by a current consumer with their keys, values and timestamps (-1 for magic 0).
Covered over raw frames (every version x magic x codec, LogAppendTime, compacted
topics, empty sets) and with kafka-python's producer pinned to old API versions.
"""
from __future__ import annotations

import pytest
from confluent_kafka import Consumer, TopicPartition
from kafka import KafkaProducer
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from kafkapy.protocol.messages import REQUESTS
from tests.integration.wire import WireClient

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
