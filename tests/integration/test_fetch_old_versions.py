"""Fetch v0-v3 over real sockets: v2 batches down-converted to message format 0/1.

Stored batches (built here, every codec) are fetched at v0/v1 (magic 0) and v2/v3
(magic 1) and decoded by kafka-python's own legacy-message reader: offsets, keys,
values, timestamps and the wrapper's codec must survive.  Then what Kafka 3.9 does
around it: an uncompressed batch fetched from its middle starts at the fetch offset,
a compressed one is sent whole; transaction markers disappear; zstd batches and
``compression.type=zstd`` topics answer UNSUPPORTED_COMPRESSION_TYPE, and
``message.downconversion.enable=false`` UNSUPPORTED_VERSION, both with null records.
librdkafka, told the broker is 0.8.2/0.9.0 (Fetch v0/v1), reads every codec through it.
Batches at the edge of Java's longs, as a real Kafka 3.9 answered them: a record timestamp
that wraps to Long.MAX_VALUE is served wrapped; one that overflows to a negative value
(which Kafka's down-conversion refuses) fails the whole fetch with UNKNOWN_SERVER_ERROR in
every partition, or closes the connection when it comes after the first converted chunk,
on the immediate and on the delayed (min_bytes) path, with no traceback in the log.
"""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   NewTopic)
from kafka.record import MemoryRecords

from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import REQUESTS
from kafkapy.records.record import build_batch
from tests.support.wire import WireClient
from tests.support.batchcheck_craft import assemble, record, records

Fetch = REQUESTS[1]
Produce = REQUESTS[0]
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3}
BATCH = 5
TS = int(time.time() * 1000) - 60_000


def _records(base: int) -> list[tuple]:
    return [(None if i == 0 else b"key-%d" % (base + i), b"value-%d" % (base + i),
             [("h", b"dropped")], TS + base + i) for i in range(BATCH)]


def _create(bootstrap: str, topic: str, partitions: int = 1, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1, config=configs)])[topic].result(60)


def _produce(c: WireClient, topic: str, codec: int, batches: int = 2) -> None:
    for n in range(batches):
        batch = build_batch(_records(n * BATCH), compression=codec)
        r = c.request(0, 9, transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
            Produce.TopicProduceData(name=topic, partition_data=[
                Produce.TopicProduceData.PartitionProduceData(index=0, records=batch)])])
        assert r.responses[0].partition_responses[0].error_code == 0


def _fetch(c: WireClient, version: int, topic: str, offset: int = 0):
    r = c.request(1, version, replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
                  topics=[Fetch.FetchTopic(topic=topic, partitions=[
                      Fetch.FetchTopic.FetchPartition(partition=0, fetch_offset=offset,
                                                      partition_max_bytes=1 << 20)])])
    return r.responses[0].partitions[0]


def _decode(records: bytes) -> list[tuple]:
    """(magic, codec, offset, key, value, timestamp) per message, by kafka-python."""
    out = []
    for batch in MemoryRecords(records):
        for r in batch:
            out.append((batch.magic, batch.compression_type, r.offset, r.key, r.value,
                        r.timestamp))
    return out


def _read_all(c: WireClient, version: int, topic: str, end: int) -> list[tuple]:
    """Fetch from each next offset, as a client does: a converted answer may be cut
    short (Kafka sends at most the stored size, or the first converted batch)."""
    got: list[tuple] = []
    offset = 0
    for _ in range(end + 1):
        if offset >= end:
            break
        part = _fetch(c, version, topic, offset)
        assert part.error_code == 0
        fresh = [m for m in _decode(part.records) if m[2] >= offset]
        assert fresh, f"no progress at offset {offset}"
        got += fresh
        offset = fresh[-1][2] + 1
    return got


@pytest.fixture(scope="module")
def client(broker):
    c = WireClient(broker.bootstrap)
    yield c
    c.close()


def test_api_versions_advertise_fetch_0_to_17(client):
    r = client.request(18, 3, client_software_name="t", client_software_version="1")
    assert [(a.min_version, a.max_version) for a in r.api_keys if a.api_key == 1] == [(0, 17)]


# kafka-python needs xxhash for magic-0 LZ4; librdkafka reads that one below.
@pytest.mark.parametrize("codec,version", [(c, v) for c in CODECS for v in (0, 1, 2, 3)
                                           if not (c == "lz4" and v < 2)])
def test_every_codec_is_down_converted(broker, client, codec, version):
    topic = f"old-{codec}-v{version}"
    _create(broker.bootstrap, topic)
    _produce(client, topic, CODECS[codec])
    part = _fetch(client, version, topic)
    assert (part.error_code, part.high_watermark) == (0, 2 * BATCH)
    magic = 0 if version < 2 else 1
    got = _read_all(client, version, topic, 2 * BATCH)
    expected = [(magic, CODECS[codec], i, r[0], r[1], r[3] if magic else None)
                for i, r in enumerate(_records(0) + _records(BATCH))]
    assert got == expected


def test_uncompressed_batch_starts_at_the_fetch_offset_compressed_is_whole(broker, client):
    for codec in ("none", "gzip"):
        topic = f"old-middle-{codec}"
        _create(broker.bootstrap, topic)
        _produce(client, topic, CODECS[codec])
        offsets = [m[2] for m in _decode(_fetch(client, 3, topic, offset=3).records)]
        # (the answer may stop early: Kafka sends no more than the stored size)
        if codec == "none":
            assert offsets[:2] == [3, 4]
        else:
            assert offsets[:BATCH] == list(range(BATCH))


def test_transaction_markers_are_dropped(broker, client):
    topic = "old-txn"
    _create(broker.bootstrap, topic)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "old-txn"})
    producer.init_transactions(30)
    for _ in range(2):
        producer.begin_transaction()
        for i in range(3):
            producer.produce(topic, value=b"t%d" % i)
        producer.commit_transaction(30)
    part = _fetch(client, 2, topic)
    assert part.high_watermark == 8  # 2 x (3 records + 1 commit marker)
    assert [m[2] for m in _decode(part.records)] == [0, 1, 2, 4, 5, 6]


def test_zstd_cannot_be_down_converted(broker, client):
    topic = "old-zstd"
    _create(broker.bootstrap, topic)
    _produce(client, topic, 4)
    part = _fetch(client, 3, topic)
    assert (part.error_code, part.records) == (ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, None)
    assert _fetch(client, 4, topic).error_code == 0


def test_zstd_topic_is_refused_below_fetch_v10(broker, client):
    topic = "old-zstd-topic"
    _create(broker.bootstrap, topic, **{"compression.type": "zstd"})
    for version in (3, 9):
        part = _fetch(client, version, topic)
        assert (part.error_code, part.records) == (ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, None)
    assert _fetch(client, 10, topic).error_code == 0


def test_down_conversion_can_be_disabled(broker, client):
    topic = "old-disabled"
    _create(broker.bootstrap, topic, **{"message.downconversion.enable": "false"})
    _produce(client, topic, 0)
    part = _fetch(client, 3, topic)
    assert (part.error_code, part.records) == (ErrorCode.UNSUPPORTED_VERSION, None)
    assert _fetch(client, 4, topic).error_code == 0
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    resource = ConfigResource("topic", topic, incremental_configs=[ConfigEntry(
        "message.downconversion.enable", "true",
        incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(60)
    assert [m[2] for m in _read_all(client, 3, topic, 2 * BATCH)] == list(range(2 * BATCH))


# librdkafka sends Fetch v0 to a 0.8.2 broker and v1 to a 0.9.0 one (magic 0 both);
# from 0.10.0 on it asks ApiVersions and uses v16.
@pytest.mark.parametrize("fallback", ["0.8.2", "0.9.0"])
@pytest.mark.parametrize("codec", CODECS)
def test_librdkafka_reads_old_formats(broker, client, fallback, codec):
    topic = f"old-rdkafka-{codec}-{fallback}"
    _create(broker.bootstrap, topic)
    _produce(client, topic, CODECS[codec])
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "old",
                         "api.version.request": False, "broker.version.fallback": fallback,
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got = []
    try:
        for _ in range(60):  # bounded: one poll a second at most
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            got.append((msg.offset(), msg.key(), msg.value()))
            if len(got) == 2 * BATCH:
                break
    finally:
        consumer.close()
    assert got == [(i, r[0], r[1]) for i, r in enumerate(_records(0) + _records(BATCH))]


LONG_MAX = (1 << 63) - 1
LONG_MIN = -(1 << 63)
NOW = int(time.time() * 1000)
# The second record's timestamp, Long.MAX_VALUE - 5 + 10, wraps to a negative one.
OVERFLOWING = assemble(record(0, 0) + record(1, 10), 2, base_ts=LONG_MAX - 5,
                       max_ts=LONG_MAX - 5)
NEGATIVE = assemble(record(0, 0), 1, base_ts=-5, max_ts=-5)
GOOD = assemble(records(1), 1, base_ts=NOW, max_ts=NOW)


def _produce_batch(c: WireClient, topic: str, batch: bytes, partition: int = 0) -> None:
    r = c.request(0, 9, transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
        Produce.TopicProduceData(name=topic, partition_data=[
            Produce.TopicProduceData.PartitionProduceData(index=partition, records=batch)])])
    assert r.responses[0].partition_responses[0].error_code == 0  # Kafka 3.9 stores it too


def _fetch_partitions(c: WireClient, version: int, topic: str, partitions: list[int],
                      min_bytes: int = 1, max_wait_ms: int = 0):
    """(partition, error, high watermark, records) of each answered partition."""
    r = c.request(1, version, replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes,
                  max_bytes=1 << 20, isolation_level=0, topics=[Fetch.FetchTopic(
                      topic=topic, partitions=[Fetch.FetchTopic.FetchPartition(
                          partition=p, fetch_offset=0, partition_max_bytes=1 << 20)
                          for p in partitions])])
    return [(p.partition_index, p.error_code, p.high_watermark,
             None if p.records is None else bytes(p.records)) for p in r.responses[0].partitions]


def test_a_wrapped_record_timestamp_is_served_wrapped(broker, client):
    topic = "old-wrapped-timestamp"
    _create(broker.bootstrap, topic)
    # baseTimestamp Long.MIN_VALUE, delta -1: Java's sum wraps to Long.MAX_VALUE.
    _produce_batch(client, topic, assemble(record(0, -1), 1, base_ts=LONG_MIN, max_ts=LONG_MAX))
    filler = bytes.fromhex("ffffffffffffffff0000003d")
    # Kafka 3.9's answers, byte for byte.
    assert _fetch_partitions(client, 1, topic, [0]) == [(0, 0, 1, bytes.fromhex(
        "0000000000000000000000101fecd70a0000000000016b0000000176") + filler + bytes(30))]
    assert _fetch_partitions(client, 3, topic, [0]) == [(0, 0, 1, bytes.fromhex(
        "0000000000000000000000181640e1a501007fffffffffffffff000000016b0000000176")
        + filler + bytes(22))]
    assert [m[5] for m in _decode(_fetch(client, 3, topic).records)] == [LONG_MAX]
    assert "Traceback" not in broker.output()


@pytest.mark.parametrize("wait", [False, True], ids=["now", "delayed"])
def test_a_batch_kafka_cannot_down_convert_fails_the_whole_fetch(broker, wait):
    topic = f"old-overflow-{'delayed' if wait else 'now'}"
    _create(broker.bootstrap, topic, partitions=2)
    c = WireClient(broker.bootstrap)
    try:
        _produce_batch(c, topic, OVERFLOWING, partition=0)
        _produce_batch(c, topic, GOOD, partition=1)
        # delayed: too few bytes for min_bytes, so the answer is built when the wait ends
        waiting = dict(min_bytes=1 << 20, max_wait_ms=200) if wait else {}
        for version in (0, 1, 2, 3):
            # Kafka 3.9: every partition of the request, the good one too.
            assert _fetch_partitions(c, version, topic, [0, 1], **waiting) == [
                (0, ErrorCode.UNKNOWN, -1, None), (1, ErrorCode.UNKNOWN, -1, None)]
        [(_, error, _, stored)] = _fetch_partitions(c, 4, topic, [0])
        assert (error, stored[16:]) == (0, OVERFLOWING[16:])  # (the broker set the epoch)
    finally:
        c.close()
    assert "Traceback" not in broker.output()


@pytest.mark.parametrize("wait", [False, True], ids=["now", "delayed"])
def test_a_later_batch_kafka_cannot_down_convert_closes_the_connection(broker, wait):
    topic = f"old-negative-later-{'delayed' if wait else 'now'}"
    _create(broker.bootstrap, topic)
    c = WireClient(broker.bootstrap)
    _produce_batch(c, topic, GOOD)
    _produce_batch(c, topic, NEGATIVE)
    c.close()
    waiting = dict(min_bytes=1 << 20, max_wait_ms=200) if wait else {}
    for version in (1, 3):
        c = WireClient(broker.bootstrap)
        try:
            # Kafka 3.9 converts the second batch while sending the answer: it closes.
            with pytest.raises(ConnectionError):
                _fetch_partitions(c, version, topic, [0], **waiting)
        finally:
            c.close()
    c = WireClient(broker.bootstrap)
    try:
        assert _fetch_partitions(c, 4, topic, [0])[0][1] == 0
    finally:
        c.close()
    assert "Traceback" not in broker.output()
