"""kafkapy.testing.broker(): a real broker in the test process, async and threaded.

Stock clients (kafka-python, confluent-kafka) produce and consume against it; its settings
show in DescribeConfigs; ``records()`` reads what was produced straight from the log; its
temporary directory goes when the block ends, also on failure; 50 starts and stops leave no
threads or file descriptors behind.
"""
from __future__ import annotations

import asyncio
import os
import re
import socket
import threading
import uuid
from collections import Counter
from pathlib import Path

import pytest

from kafkapy.testing import MockClock, Record, broker
from tests.support.wire import WireClient

kafka = pytest.importorskip("kafka")
confluent_kafka = pytest.importorskip("confluent_kafka")


def _produce_kafka_python(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        for i, value in enumerate(values):
            producer.send(topic, key=b"k%d" % i, value=value, partition=0,
                          headers=[("h", b"%d" % i)])
        producer.flush(timeout=30)
    finally:
        producer.close(timeout=10)


def _consume_kafka_python(bootstrap: str, topic: str, count: int) -> list[bytes]:
    consumer = kafka.KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=None,
                                   auto_offset_reset="earliest", consumer_timeout_ms=15000)
    try:
        got = []
        for message in consumer:
            got.append(message.value)
            if len(got) == count:
                break
        return got
    finally:
        consumer.close()


def _produce_confluent(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap})
    for i, value in enumerate(values):
        producer.produce(topic, key=b"k%d" % i, value=value, partition=0,
                         headers=[("h", b"%d" % i)])
    assert producer.flush(30) == 0


def _consume_confluent(bootstrap: str, topic: str, count: int) -> list[bytes]:
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
        "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([topic])
        got: list[bytes] = []
        for _ in range(300):                    # bounded: 300 polls of at most 0.1 s
            message = consumer.poll(0.1)
            if message is None:
                continue
            assert message.error() is None, message.error()
            got.append(message.value())
            if len(got) == count:
                break
        return got
    finally:
        consumer.close()


def _check_records(records: list[Record], values: list[bytes]) -> None:
    assert [r.value for r in records] == values
    assert [r.offset for r in records] == list(range(len(values)))
    assert [r.key for r in records] == [b"k%d" % i for i in range(len(values))]
    assert [r.headers for r in records] == [[("h", b"%d" % i)] for i in range(len(values))]
    assert all(r.timestamp > 0 for r in records)


async def test_async_broker_with_kafka_python():
    values = [b"v%d" % i for i in range(20)]
    async with broker(num_partitions=2) as b:
        assert b.bootstrap == f"127.0.0.1:{b.port}" and b.port > 0
        assert b.broker_id == 0 and b.clock is None
        await b.create_topic("t", partitions=2)
        # Blocking clients run in a thread: the broker serves from this loop meanwhile.
        await asyncio.to_thread(_produce_kafka_python, b.bootstrap, "t", values)
        assert await asyncio.to_thread(_consume_kafka_python, b.bootstrap, "t", 20) == values
        _check_records(await b.records("t", 0), values)
        assert await b.records("t", 1) == []


def test_sync_broker_with_confluent_kafka():
    values = [b"c%d" % i for i in range(20)]
    with broker() as b:
        assert threading.current_thread() is threading.main_thread()
        b.create_topic("t", partitions=1)
        _produce_confluent(b.bootstrap, "t", values)
        assert _consume_confluent(b.bootstrap, "t", 20) == values
        _check_records(b.records("t", 0), values)


def test_sync_broker_with_kafka_python_and_auto_created_topic():
    with broker(num_partitions=1) as b:
        _produce_kafka_python(b.bootstrap, "auto", [b"a", b"b"])
        assert _consume_kafka_python(b.bootstrap, "auto", 2) == [b"a", b"b"]
        assert [r.value for r in b.records("auto", 0)] == [b"a", b"b"]


def _describe_broker_configs(bootstrap: str, broker_id: int) -> dict[str, str]:
    """DescribeConfigs v4 of the broker resource, over a raw socket."""
    from tests.support.request_fields import fields
    client = WireClient(bootstrap)
    try:
        response = client.request(32, 4, **fields(32, resources=[
            dict(resource_type=4, resource_name=str(broker_id), configuration_keys=None)],
            include_synonyms=False, include_documentation=False))
    finally:
        client.close()
    assert response.results[0].error_code == 0
    return {c.name: c.value for c in response.results[0].configs}


def test_settings_as_keywords_show_in_describe_configs():
    with broker(num_partitions=3, auto_create_topics_enable=False, log_cleaner_enable=True,
                settings={"log.retention.ms": 1234567, "message.max.bytes": "2000000"}) as b:
        configs = _describe_broker_configs(b.bootstrap, b.broker_id)
        assert configs["num.partitions"] == "3"
        assert configs["auto.create.topics.enable"] == "false"
        assert configs["log.retention.ms"] == "1234567"
        assert configs["message.max.bytes"] == "2000000"


async def test_create_topic_with_configs_and_default_partitions():
    async with broker(num_partitions=3) as b:
        await b.create_topic("compacted", **{"cleanup.policy": "compact"})
        await b.create_topic("short", partitions=1, retention_ms=60000)
        server = b.server
        assert sorted(server.cache.topic("compacted").partitions) == [0, 1, 2]
        assert server.topic_config("compacted")["cleanup.policy"] == ["compact"]
        assert server.topic_config("short")["retention.ms"] == 60000
        with pytest.raises(Exception):          # TOPIC_ALREADY_EXISTS from the admin path
            await b.create_topic("short", partitions=1)


async def test_temp_dir_removed_after_the_block_and_after_a_failure():
    async with broker() as b:
        log_dir = Path(b.log_dir)
        assert (log_dir / "kafkapy-metadata.json").exists()   # embedded store in the temp dir
    assert not log_dir.exists() and not log_dir.parent.exists()

    with pytest.raises(RuntimeError, match="boom"):
        with broker() as b:
            log_dir = Path(b.log_dir)
            raise RuntimeError("boom")
    assert not log_dir.parent.exists()
    with socket.socket() as s:                  # and the port is free again
        s.bind(("127.0.0.1", b.port))


async def test_a_start_failure_removes_the_temp_dir(tmp_path, monkeypatch):
    made: list[str] = []
    import tempfile
    real = tempfile.mkdtemp
    monkeypatch.setattr(tempfile, "mkdtemp", lambda **kw: made.append(real(**kw)) or made[-1])
    with pytest.raises(Exception):
        async with broker(settings={"num.partitions": "not a number"}):
            pass
    assert made and not Path(made[0]).exists()


async def test_the_broker_answers_api_versions_and_metadata_once_entered():
    async with broker() as b:
        def ask() -> tuple:
            client = WireClient(b.bootstrap)
            try:
                versions = client.request(18, 3, client_software_name="t",
                                          client_software_version="1")
                metadata = client.request(3, 1, topics=None)
            finally:
                client.close()
            return versions.error_code, [x.node_id for x in metadata.brokers]
        assert await asyncio.to_thread(ask) == (0, [0])


def test_mock_clock_starts_at_wall_time():
    import time
    clock = MockClock()
    assert abs(clock.time_ms() - time.time() * 1000) < 60_000
    clock.advance(5)
    assert MockClock(start_ms=10).time_ms() == 10


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _threads() -> Counter:
    """Live threads by kind: a pool's workers (``<prefix>_<n>``) count under their prefix."""
    return Counter(re.sub(r"_\d+$", "", t.name) for t in threading.enumerate())


def _assert_no_thread_leak(before: Counter) -> None:
    """No new kind of thread, and no more threads of a kind, except the workers of the
    event loop's default executor: it starts them lazily, one per overlapping
    ``to_thread`` call, up to its bound (min(32, cpus + 4)), and keeps them."""
    after = _threads()
    bound = min(32, (os.cpu_count() or 1) + 4)
    assert set(after - before) <= {"asyncio"} and after["asyncio"] <= bound, (before, after)


async def test_fifty_async_starts_leak_no_fds_threads_or_tasks():
    async with broker() as b:                   # warm up: imports, executor threads
        await b.create_topic("t")
    fds, threads = _fds(), _threads()
    tasks = len(asyncio.all_tasks())
    for _ in range(50):
        async with broker() as b:
            await b.create_topic("t")
    await asyncio.sleep(0)
    assert _fds() <= fds
    _assert_no_thread_leak(threads)
    assert len(asyncio.all_tasks()) <= tasks


def test_fifty_threaded_starts_leak_no_fds_or_threads():
    with broker() as b:
        b.create_topic("t")
    fds, threads = _fds(), _threads()
    for _ in range(50):
        with broker() as b:
            b.create_topic("t")
    assert _fds() <= fds
    _assert_no_thread_leak(threads)


async def test_a_misspelt_setting_is_warned_about():
    with pytest.warns(UserWarning, match="num.partition\\b"):
        async with broker(num_partition=3):
            pass
