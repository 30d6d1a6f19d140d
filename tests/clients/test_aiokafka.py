"""aiokafka end to end: create a topic, produce 10,000 records with keys and
headers under every codec, read them back in order, list offsets.

Per codec: AIOKafkaAdminClient.create_topics -> AIOKafkaProducer(compression_type=codec)
with explicit CreateTime timestamps -> AIOKafkaConsumer assign + seek_to_beginning
-> beginning_offsets / end_offsets / offsets_for_times.
"""
from __future__ import annotations

import asyncio
import time

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka import codec as aiokafka_codec

from tests.support import client_common as common

pytestmark = pytest.mark.timeout(300)

CLIENT = "aiokafka"


@pytest.fixture(scope="module")
def base_ts() -> int:
    return common.base_timestamp()


async def _create_topic(bootstrap: str, topic: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, client_id="e2e-aiokafka-admin",
                                request_timeout_ms=30_000)
    await admin.start()
    try:
        resp = await admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)],
                                         timeout_ms=30_000)
        errors = [tuple(t)[:2] for t in resp.topic_errors] if hasattr(resp, "topic_errors") else []
        assert errors and all(code == 0 for _name, code in errors), f"CreateTopics: {resp!r}"
        assert topic in await admin.list_topics()
        (desc,) = await admin.describe_topics([topic])
        assert desc["error_code"] == 0, desc
        parts = desc["partitions"]
        assert [p.get("partition", p.get("partition_index")) for p in parts] == [0], desc
        assert parts[0].get("leader", parts[0].get("leader_id")) >= 0, desc
    finally:
        await admin.close()


async def _produce(bootstrap: str, topic: str, codec: str, base: int) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, client_id=f"e2e-{CLIENT}-producer-{codec}",
                                compression_type=None if codec == "none" else codec,
                                linger_ms=20, request_timeout_ms=40_000)
    await producer.start()
    try:
        futures = []
        for i in range(common.N_RECORDS):
            futures.append(await producer.send(
                topic, value=common.value(i), key=common.key(i), partition=0,
                timestamp_ms=common.timestamp(base, i), headers=common.headers(i, codec)))
        await producer.flush()
        results = await asyncio.wait_for(asyncio.gather(*futures), 120)
    finally:
        await producer.stop()
    for i, md in enumerate(results):
        assert (md.topic, md.partition, md.offset) == (topic, 0, i), (
            f"send #{i}: acked at {md.topic}/{md.partition}@{md.offset}, expected {topic}/0@{i}")
        # log_append_time -1 in the Produce response (CreateTime topic) -> timestamp_type 0.
        # (The acked timestamps themselves are not checked: aiokafka 0.14 gives every
        # record of a batch the first record's timestamp in that case - a client quirk in
        # MessageBatch.done(). The consumed timestamps are checked instead.)
        assert md.timestamp_type == 0, (
            f"send #{i}: acked timestamp type {md.timestamp_type} (timestamp {md.timestamp}): "
            "the Produce response carried a log_append_time, expected -1 for CreateTime")


async def _consume(bootstrap: str, topic: str, codec: str) -> list[common.Got]:
    tp = TopicPartition(topic, 0)
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, client_id=f"e2e-{CLIENT}-consumer-{codec}",
                                group_id=None, enable_auto_commit=False, auto_offset_reset="none",
                                request_timeout_ms=40_000)
    await consumer.start()
    got: list[common.Got] = []
    try:
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        last_progress = time.monotonic()
        while len(got) < common.N_RECORDS and time.monotonic() - last_progress < 60:
            batches = await consumer.getmany(timeout_ms=1000)
            for part, records in batches.items():
                assert part == tp, part
                for r in records:
                    got.append(common.Got(r.offset, r.key, r.value,
                                          [(k, bytes(v)) for k, v in (r.headers or ())],
                                          r.timestamp, r.timestamp_type))
                if records:
                    last_progress = time.monotonic()
        extra = await consumer.getmany(timeout_ms=500)
        assert not any(extra.values()), f"records past the end: {extra!r}"
        assert await consumer.position(tp) == len(got)
    finally:
        await consumer.stop()
    return got


async def _check_offsets(bootstrap: str, topic: str, base: int) -> None:
    exp = common.expected_offsets(base)
    tp = TopicPartition(topic, 0)
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, client_id=f"e2e-{CLIENT}-offsets",
                                group_id=None, enable_auto_commit=False, request_timeout_ms=40_000)
    await consumer.start()
    try:
        assert await consumer.beginning_offsets([tp]) == {tp: exp.earliest}
        assert await consumer.end_offsets([tp]) == {tp: exp.latest}
        for target, want in exp.by_timestamp.items():
            res = await consumer.offsets_for_times({tp: target})
            assert tp in res, res
            got = None if res[tp] is None else (res[tp].offset, res[tp].timestamp)
            assert got == want, f"offsets_for_times(base{target - base:+d}): {got}, expected {want}"
    finally:
        await consumer.stop()


@pytest.mark.parametrize("codec", common.CODECS)
async def test_roundtrip(broker, base_ts, codec):
    topic = common.topic_name(CLIENT, codec)
    await _create_topic(broker.bootstrap, topic)
    await _produce(broker.bootstrap, topic, codec, base_ts)
    got = await _consume(broker.bootstrap, topic, codec)
    common.check_records(got, common.expected_records(codec, base_ts), what=f"{CLIENT}/{codec}")
    await _check_offsets(broker.bootstrap, topic, base_ts)
    common.check_stored_codec(broker.log_dir, topic, codec,
                              kept_plain=common.encoder_keeps_plain(aiokafka_codec, codec))
