"""kafka-python end to end: create a topic, produce 10,000 records with keys and
headers under every codec, read them back in order, list offsets.

Per codec: KafkaAdminClient.create_topics -> KafkaProducer(compression_type=codec)
with explicit CreateTime timestamps -> KafkaConsumer assign + seek_to_beginning
-> beginning_offsets / end_offsets / offsets_for_times and the admin client's
list_partition_offsets (EARLIEST, LATEST, MAX_TIMESTAMP, by timestamp).
"""
from __future__ import annotations

import time

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import OffsetSpec
from kafka import codec as kafka_codec

from tests.support import client_common as common

pytestmark = pytest.mark.timeout(300)

CLIENT = "kafka-python"


@pytest.fixture(scope="module")
def base_ts() -> int:
    return common.base_timestamp()


@pytest.fixture(scope="module")
def admin(broker):
    a = KafkaAdminClient(bootstrap_servers=broker.bootstrap, client_id="e2e-kafka-python-admin",
                         request_timeout_ms=30_000)
    yield a
    a.close()


def _create_topic(admin: KafkaAdminClient, topic: str) -> None:
    resp = admin.create_topics({topic: {"num_partitions": 1, "replication_factor": 1}},
                               timeout_ms=30_000)
    errors = [(t.get("name"), t.get("error_code")) for t in resp.get("topics", [])] \
        if isinstance(resp, dict) else []
    assert all(code == 0 for _, code in errors), f"CreateTopics errors: {resp!r}"
    admin.wait_for_topics([topic], timeout_ms=30_000)
    assert topic in admin.list_topics()
    (desc,) = admin.describe_topics([topic])
    assert desc["error_code"] == 0, desc
    assert len(desc["partitions"]) == 1, desc
    assert desc["partitions"][0]["leader_id"] >= 0, desc


def _produce(bootstrap: str, topic: str, codec: str, base: int) -> None:
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        client_id=f"e2e-{CLIENT}-producer-{codec}",
        compression_type=None if codec == "none" else codec,
        linger_ms=20,
        request_timeout_ms=30_000,
    )
    try:
        futures = [
            producer.send(topic, key=common.key(i), value=common.value(i),
                          headers=common.headers(i, codec), partition=0,
                          timestamp_ms=common.timestamp(base, i))
            for i in range(common.N_RECORDS)
        ]
        producer.flush(timeout=120)
        for i, fut in enumerate(futures):
            md = fut.get(timeout=60)
            assert (md.topic, md.partition, md.offset) == (topic, 0, i), (
                f"send #{i}: acked at {md.topic}/{md.partition}@{md.offset}, expected {topic}/0@{i}")
            assert md.timestamp == common.timestamp(base, i), (
                f"send #{i}: acked timestamp {md.timestamp}, expected CreateTime {common.timestamp(base, i)}")
    finally:
        producer.close(timeout=30)


def _consume(bootstrap: str, topic: str, codec: str) -> list[common.Got]:
    tp = TopicPartition(topic, 0)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, client_id=f"e2e-{CLIENT}-consumer-{codec}",
                             group_id=None, enable_auto_commit=False,
                             auto_offset_reset="none", request_timeout_ms=40_000)
    got: list[common.Got] = []
    try:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        last_progress = time.monotonic()
        while len(got) < common.N_RECORDS and time.monotonic() - last_progress < 60:
            batches = consumer.poll(timeout_ms=1000)
            for part, records in batches.items():
                assert part == tp, f"record from unassigned partition {part}"
                for r in records:
                    got.append(common.Got(r.offset, r.key, r.value,
                                          [(k, bytes(v)) for k, v in (r.headers or [])],
                                          r.timestamp, r.timestamp_type))
                if records:
                    last_progress = time.monotonic()
        # Nothing more must come after the last record.
        extra = consumer.poll(timeout_ms=500)
        assert not any(extra.values()), f"records past the end: {extra!r}"
        assert consumer.position(tp) == len(got), (consumer.position(tp), len(got))
    finally:
        consumer.close()
    return got


def _check_offsets(bootstrap: str, admin: KafkaAdminClient, topic: str, base: int) -> None:
    exp = common.expected_offsets(base)
    tp = TopicPartition(topic, 0)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, client_id=f"e2e-{CLIENT}-offsets",
                             group_id=None, enable_auto_commit=False, request_timeout_ms=40_000)
    try:
        assert consumer.beginning_offsets([tp]) == {tp: exp.earliest}
        assert consumer.end_offsets([tp]) == {tp: exp.latest}
        for target, want in exp.by_timestamp.items():
            res = consumer.offsets_for_times({tp: target})
            assert tp in res, res
            got = None if res[tp] is None else (res[tp].offset, res[tp].timestamp)
            assert got == want, f"offsets_for_times({target} = base{target - base:+d}): {got}, expected {want}"
    finally:
        consumer.close()

    specs = {OffsetSpec.EARLIEST: (exp.earliest, -1), OffsetSpec.LATEST: (exp.latest, -1),
             OffsetSpec.MAX_TIMESTAMP: exp.max_timestamp}
    for spec, want in specs.items():
        res = admin.list_partition_offsets({tp: spec})
        ot = res[tp]
        if spec == OffsetSpec.MAX_TIMESTAMP:
            assert (ot.offset, ot.timestamp) == want, f"list_partition_offsets({spec!r}): {ot}, expected {want}"
        else:
            assert ot.offset == want[0], f"list_partition_offsets({spec!r}): {ot}, expected offset {want[0]}"
    for target, want in exp.by_timestamp.items():
        ot = admin.list_partition_offsets({tp: target})[tp]
        got = None if ot is None or ot.offset == -1 else (ot.offset, ot.timestamp)
        assert got == want, f"list_partition_offsets(timestamp base{target - base:+d}): {ot}, expected {want}"


@pytest.mark.parametrize("codec", common.CODECS)
def test_roundtrip(broker, admin, base_ts, codec):
    topic = common.topic_name(CLIENT, codec)
    _create_topic(admin, topic)
    _produce(broker.bootstrap, topic, codec, base_ts)
    got = _consume(broker.bootstrap, topic, codec)
    common.check_records(got, common.expected_records(codec, base_ts), what=f"{CLIENT}/{codec}")
    _check_offsets(broker.bootstrap, admin, topic, base_ts)
    # The broker keeps the producer's batches with their codec (compression.type=producer).
    common.check_stored_codec(broker.log_dir, topic, codec,
                              kept_plain=common.encoder_keeps_plain(kafka_codec, codec))

