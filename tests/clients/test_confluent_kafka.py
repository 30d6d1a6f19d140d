"""confluent-kafka (librdkafka) end to end: create a topic, produce 10,000 records
with keys and headers under every codec, read them back in order, list offsets.

Per codec: AdminClient.create_topics -> Producer(compression.type=codec) with
explicit CreateTime timestamps and delivery reports -> Consumer assigned at
OFFSET_BEGINNING -> get_watermark_offsets, offsets_for_times and
AdminClient.list_offsets (earliest, latest, max_timestamp, for_timestamp).

The consumer needs a group.id (librdkafka insists) but never joins or commits:
partitions are assigned by hand.
"""
from __future__ import annotations

import time

import pytest
from confluent_kafka import (OFFSET_BEGINNING, TIMESTAMP_CREATE_TIME, Consumer, KafkaException,
                             Producer, TopicPartition)
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from tests.support import client_common as common

pytestmark = pytest.mark.timeout(300)

CLIENT = "confluent-kafka"


@pytest.fixture(scope="module")
def base_ts() -> int:
    return common.base_timestamp()


@pytest.fixture(scope="module")
def admin(broker):
    return AdminClient({"bootstrap.servers": broker.bootstrap, "client.id": "e2e-confluent-admin"})


def _create_topic(admin: AdminClient, topic: str) -> None:
    futures = admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)],
                                  operation_timeout=30, request_timeout=60)
    assert set(futures) == {topic}
    assert futures[topic].result(timeout=60) is None
    md = admin.list_topics(topic=topic, timeout=30)
    assert topic in md.topics, md.topics
    tmd = md.topics[topic]
    assert tmd.error is None, tmd.error
    assert sorted(tmd.partitions) == [0], tmd.partitions
    assert tmd.partitions[0].leader >= 0, tmd.partitions[0]
    assert tmd.partitions[0].leader in md.brokers, (tmd.partitions[0].leader, md.brokers)


def _produce(bootstrap: str, topic: str, codec: str, base: int) -> None:
    producer = Producer({
        "bootstrap.servers": bootstrap,
        "client.id": f"e2e-{CLIENT}-producer-{codec}",
        "compression.type": codec,
        "linger.ms": 20,
        "message.timeout.ms": 120_000,
    })
    reports: list[tuple[int, object, object]] = []

    def on_delivery(i: int):
        return lambda err, msg: reports.append((i, err, msg))

    for i in range(common.N_RECORDS):
        while True:
            try:
                producer.produce(topic, value=common.value(i), key=common.key(i), partition=0,
                                 timestamp=common.timestamp(base, i),
                                 headers=common.headers(i, codec), on_delivery=on_delivery(i))
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    remaining = producer.flush(120)
    assert remaining == 0, f"{remaining} messages still undelivered after flush"
    assert len(reports) == common.N_RECORDS, f"{len(reports)} delivery reports"
    for i, err, msg in sorted(reports, key=lambda r: r[0]):
        assert err is None, f"delivery of #{i} failed: {err}"
        assert (msg.topic(), msg.partition(), msg.offset()) == (topic, 0, i), (
            f"#{i} delivered at {msg.topic()}/{msg.partition()}@{msg.offset()}, expected {topic}/0@{i}")
        assert msg.timestamp() == (TIMESTAMP_CREATE_TIME, common.timestamp(base, i)), (
            f"#{i}: delivery report timestamp {msg.timestamp()}")


def _consumer(bootstrap: str, name: str) -> Consumer:
    return Consumer({
        "bootstrap.servers": bootstrap,
        "client.id": f"e2e-{CLIENT}-{name}",
        "group.id": f"e2e-{CLIENT}-{name}-unused",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": False,
        "auto.offset.reset": "error",
    })


def _consume(bootstrap: str, topic: str, codec: str) -> list[common.Got]:
    consumer = _consumer(bootstrap, f"consumer-{codec}")
    got: list[common.Got] = []
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        last_progress = time.monotonic()
        while len(got) < common.N_RECORDS and time.monotonic() - last_progress < 60:
            msgs = consumer.consume(num_messages=1000, timeout=1.0)
            for m in msgs:
                if m.error() is not None:
                    raise KafkaException(m.error())
                assert (m.topic(), m.partition()) == (topic, 0)
                ts_type, ts = m.timestamp()
                got.append(common.Got(m.offset(), m.key(), m.value(),
                                      [(k, bytes(v)) for k, v in (m.headers() or [])], ts,
                                      0 if ts_type == TIMESTAMP_CREATE_TIME else ts_type))
            if msgs:
                last_progress = time.monotonic()
        extra = [m for m in consumer.consume(num_messages=10, timeout=0.5) if m.error() is None]
        assert not extra, f"records past the end, first at offset {extra[0].offset()}"
        (pos,) = consumer.position([TopicPartition(topic, 0)])
        assert pos.offset == len(got), (pos, len(got))
    finally:
        consumer.close()
    return got


def _check_offsets(bootstrap: str, admin: AdminClient, topic: str, base: int) -> None:
    exp = common.expected_offsets(base)
    consumer = _consumer(bootstrap, "offsets")
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
        assert (low, high) == (exp.earliest, exp.latest)
        for target, want in exp.by_timestamp.items():
            (res,) = consumer.offsets_for_times([TopicPartition(topic, 0, target)], timeout=30)
            assert res.error is None, res.error
            want_offset = -1 if want is None else want[0]   # librdkafka: -1 (OFFSET_END) when none
            assert res.offset == want_offset, (
                f"offsets_for_times(base{target - base:+d}): {res.offset}, expected {want_offset}")
    finally:
        consumer.close()

    tp = TopicPartition(topic, 0)
    checks = [("earliest", OffsetSpec.earliest(), exp.earliest, None),
              ("latest", OffsetSpec.latest(), exp.latest, None),
              ("max_timestamp", OffsetSpec.max_timestamp(), *exp.max_timestamp)]
    checks += [(f"for_timestamp(base{t - base:+d})", OffsetSpec.for_timestamp(t),
                -1 if w is None else w[0], None if w is None else w[1])
               for t, w in exp.by_timestamp.items()]
    for name, spec, want_offset, want_ts in checks:
        res = admin.list_offsets({tp: spec}, request_timeout=30)[tp].result(timeout=60)
        assert res.offset == want_offset, f"list_offsets {name}: offset {res.offset}, expected {want_offset}"
        if want_ts is not None:
            assert res.timestamp == want_ts, f"list_offsets {name}: timestamp {res.timestamp}, expected {want_ts}"


@pytest.mark.parametrize("codec", common.CODECS)
def test_roundtrip(broker, admin, base_ts, codec):
    topic = common.topic_name(CLIENT, codec)
    _create_topic(admin, topic)
    _produce(broker.bootstrap, topic, codec, base_ts)
    got = _consume(broker.bootstrap, topic, codec)
    common.check_records(got, common.expected_records(codec, base_ts), what=f"{CLIENT}/{codec}")
    _check_offsets(broker.bootstrap, admin, topic, base_ts)
    common.check_librdkafka_stored_codec(broker.bootstrap, broker.log_dir, topic, codec)
