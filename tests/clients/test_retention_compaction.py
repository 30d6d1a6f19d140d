"""Retention, DeleteRecords, compaction, live topic configs and DescribeLogDirs, with stock
clients (kafka-python and confluent-kafka) against a kafkapy broker whose background work
runs often (log.retention.check.interval.ms, log.cleaner.backoff.ms overridden small).

Waiting for background work polls the broker's state until it holds (bounded by a
generous deadline); nothing asserts how long anything took.
"""
from __future__ import annotations

import glob
import os
import time

import pytest
from confluent_kafka import KafkaException
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   ResourceType)
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource as KConfigResource
from kafka.admin import ConfigResourceType, KafkaAdminClient, NewTopic

from tests.support.broker_process import BrokerProcess

DEADLINE_S = 90


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    overrides = {"log.retention.check.interval.ms": "300", "log.cleaner.backoff.ms": "200",
                 "log.segment.delete.delay.ms": "100"}
    with BrokerProcess(tmp_path_factory.mktemp("retention") / "logs",
                       overrides=overrides).start() as b:
        yield b


@pytest.fixture(scope="module")
def admin(broker):
    a = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    yield a
    a.close()


def wait_until(predicate, what):
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"never happened: {what}")


def create(admin, topic, **configs):
    admin.create_topics([NewTopic(topic, 1, 1, topic_configs={k.replace("_", "."): str(v)
                                                              for k, v in configs.items()})])


def produce(broker, topic, items, timestamp_ms=None):
    """items: (key, value); returns [(offset, key, value)] as acknowledged."""
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", linger_ms=0,
                      batch_size=1)
    futs = [(p.send(topic, key=k, value=v, timestamp_ms=timestamp_ms), k, v) for k, v in items]
    p.flush()
    out = [(f.get(timeout=30).offset, k, v) for f, k, v in futs]
    p.close()
    return out


def consume_all(broker, topic):
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                      consumer_timeout_ms=2000)
    tp = TopicPartition(topic, 0)
    c.assign([tp])
    c.seek_to_beginning(tp)
    end = c.end_offsets([tp])[tp]
    out = []
    while c.position(tp) < end:
        batch = c.poll(timeout_ms=2000)
        for r in batch.get(tp, []):
            out.append((r.offset, r.key, r.value))
        if not batch and c.position(tp) >= end:
            break
    c.close()
    return out


def earliest(broker, topic):
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap)
    tp = TopicPartition(topic, 0)
    off = c.beginning_offsets([tp])[tp]
    c.close()
    return off


def part_dir(broker, topic):
    return os.path.join(broker.log_dir, f"{topic}-0")


def segment_bases(broker, topic):
    return sorted(int(os.path.basename(p)[:20])
                  for p in glob.glob(os.path.join(part_dir(broker, topic), "*.log")))


# ---------------------------------------------------------------- retention


def test_time_retention_drops_old_segments(broker, admin):
    topic = "ret-time"
    create(admin, topic, segment_bytes=1024, retention_ms=3_600_000)
    old = int(time.time() * 1000) - 2 * 86_400_000
    produce(broker, topic, [(b"k%d" % i, b"old-%03d" % i + b"x" * 80) for i in range(60)], old)
    fresh = produce(broker, topic, [(b"n%d" % i, b"new-%03d" % i) for i in range(5)])
    start = wait_until(lambda: earliest(broker, topic) >= fresh[0][0] - 20 and
                       earliest(broker, topic), "old segments deleted by time")
    assert start > 0
    bases = wait_until(lambda: segment_bases(broker, topic)[0] == start and
                       segment_bases(broker, topic), ".log files of expired segments removed")
    assert bases[0] == start
    records = consume_all(broker, topic)
    assert records[0][0] == start
    assert [r[0] for r in records] == list(range(start, fresh[-1][0] + 1))
    assert records[-5:] == fresh


def test_size_retention_drops_oldest_segments(broker, admin):
    topic = "ret-size"
    create(admin, topic, segment_bytes=1024, retention_bytes=3000)
    acked = produce(broker, topic, [(None, b"v%03d" % i + b"y" * 100) for i in range(80)])

    def small_enough():
        sizes = [os.path.getsize(p) for p in
                 glob.glob(os.path.join(part_dir(broker, topic), "*.log"))]
        return sum(sizes) <= 3000 + 1024 and earliest(broker, topic) > 0
    wait_until(small_enough, "size retention")
    start = earliest(broker, topic)
    records = consume_all(broker, topic)
    assert [r[0] for r in records] == list(range(start, acked[-1][0] + 1))
    assert records == [r for r in acked if r[0] >= start]


def test_delete_records_advances_log_start(broker, admin):
    topic = "del-records"
    create(admin, topic, segment_bytes=1024)
    acked = produce(broker, topic, [(None, b"r%03d" % i + b"z" * 60) for i in range(100)])
    # kafka-python admin
    res = admin.delete_records({TopicPartition(topic, 0): 30})
    assert res[TopicPartition(topic, 0)]["low_watermark"] == 30
    assert earliest(broker, topic) == 30
    # confluent-kafka admin
    ca = AdminClient({"bootstrap.servers": broker.bootstrap})
    fut = ca.delete_records([CTopicPartition(topic, 0, 70)])[CTopicPartition(topic, 0, 70)]
    assert fut.result(30).low_watermark == 70
    assert earliest(broker, topic) == 70
    records = consume_all(broker, topic)
    assert records == [r for r in acked if r[0] >= 70]
    # beyond the high watermark: OFFSET_OUT_OF_RANGE
    fut = ca.delete_records([CTopicPartition(topic, 0, 10_000)])[CTopicPartition(topic, 0, 10_000)]
    with pytest.raises(KafkaException) as err:
        fut.result(30)
    assert "OFFSET_OUT_OF_RANGE" in str(err.value) or "out of range" in str(err.value).lower()
    # segments wholly below the new start are removed by the retention pass
    wait_until(lambda: segment_bases(broker, topic)[0] <= 70 < (
        segment_bases(broker, topic)[1:2] or [10**9])[0] and
        segment_bases(broker, topic)[0] > 0, "segments below the log start deleted")


# ---------------------------------------------------------------- compaction


def test_compacted_topic_keeps_latest_per_key_and_drops_tombstones(broker, admin):
    topic = "compacted"
    create(admin, topic, cleanup_policy="compact", segment_bytes=1024,
           min_cleanable_dirty_ratio="0.01", delete_retention_ms=1000)
    acked = []
    for round_ in range(12):
        acked += produce(broker, topic, [(b"k%d" % i, b"r%02d-v%d" % (round_, i) + b"p" * 40)
                                         for i in range(8)])
    acked += produce(broker, topic, [(b"k3", None)])
    acked += produce(broker, topic, [(b"f%d" % i, b"filler" + b"q" * 60) for i in range(12)])
    produced = set(acked)
    latest = {}
    for off, k, v in acked:
        latest[k] = (off, v)

    def compacted():
        recs = consume_all(broker, topic)
        keys = [k for _o, k, _v in recs if k.startswith(b"k")]
        return recs if keys.count(b"k0") == 1 else None
    recs = wait_until(compacted, "the cleaner compacted the log")
    offs = [r[0] for r in recs]
    assert offs == sorted(set(offs)), "offsets ascend without duplicates"
    assert set(recs) <= produced, "every record keeps its original offset"
    for k, (off, v) in latest.items():
        assert (off, k, v) in recs, f"latest value of {k!r} kept"
    assert (latest[b"k3"][0], b"k3", None) in recs, "the tombstone is kept for now"
    # after delete.retention.ms, more data makes the log dirty again: the tombstone goes
    time.sleep(1.2)
    extra = []

    def tombstone_gone():
        extra.extend(produce(broker, topic, [(b"g%d" % i, b"more" + b"m" * 80)
                                             for i in range(12)]))
        return all(k != b"k3" for _o, k, _v in consume_all(broker, topic))
    wait_until(tombstone_gone, "tombstone removed after delete.retention.ms")
    recs = consume_all(broker, topic)
    assert set(recs) <= produced | set(extra)
    for k, (off, v) in latest.items():
        if k != b"k3":
            assert (off, k, v) in recs
    ckpt = os.path.join(broker.log_dir, "cleaner-offset-checkpoint")
    lines = open(ckpt).read().split("\n")
    assert lines[0] == "0" and any(line.startswith(f"{topic} 0 ") for line in lines[2:])


# ---------------------------------------------------------------- live topic configs


def _describe(ca, topic):
    res = ConfigResource(ResourceType.TOPIC, topic)
    return ca.describe_configs([res])[res].result(30)


def test_alter_configs_change_retention_live(broker, admin):
    topic = "alter-live"
    create(admin, topic, segment_bytes=1024)
    old = int(time.time() * 1000) - 2 * 86_400_000
    produce(broker, topic, [(None, b"o%03d" % i + b"x" * 80) for i in range(40)], old)
    produce(broker, topic, [(None, b"fresh")])
    assert earliest(broker, topic) == 0  # the default 7 days keeps the old records
    # legacy AlterConfigs through kafka-python
    admin.alter_configs([KConfigResource(ConfigResourceType.TOPIC, topic,
                                         configs={"retention.ms": "3600000",
                                                  "segment.bytes": "1024"})])
    wait_until(lambda: earliest(broker, topic) > 0, "new retention.ms applied at once")
    ca = AdminClient({"bootstrap.servers": broker.bootstrap})
    desc = _describe(ca, topic)
    assert desc["retention.ms"].value == "3600000"
    assert desc["retention.ms"].source == 1  # DYNAMIC_TOPIC_CONFIG
    # IncrementalAlterConfigs through confluent-kafka: SET, APPEND, DELETE
    res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.bytes", "123456", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
        ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE)])
    ca.incremental_alter_configs([res])[res].result(30)
    desc = _describe(ca, topic)
    assert desc["retention.bytes"].value == "123456"
    assert desc["cleanup.policy"].value == "delete,compact"
    assert desc["retention.ms"].value == "604800000" and desc["retention.ms"].source != 1
    assert desc["segment.bytes"].value == "1024"
    # SUBTRACT, validate_only, a bad value and an unknown topic
    res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SUBTRACT)])
    ca.incremental_alter_configs([res])[res].result(30)
    assert _describe(ca, topic)["cleanup.policy"].value == "delete"
    res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.bytes", "1", incremental_operation=AlterConfigOpType.SET)])
    ca.incremental_alter_configs([res], validate_only=True)[res].result(30)
    assert _describe(ca, topic)["retention.bytes"].value == "123456"
    res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "soon", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException) as err:
        ca.incremental_alter_configs([res])[res].result(30)
    assert err.value.args[0].name() == "INVALID_CONFIG"
    res = ConfigResource(ResourceType.TOPIC, "no-such-topic", incremental_configs=[
        ConfigEntry("retention.ms", "1", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException) as err:
        ca.incremental_alter_configs([res])[res].result(30)
    assert err.value.args[0].name() == "UNKNOWN_TOPIC_OR_PART"
    # a static broker config cannot be changed dynamically
    res = ConfigResource(ResourceType.BROKER, "0", incremental_configs=[
        ConfigEntry("log.dirs", "/tmp/x", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException) as err:
        ca.incremental_alter_configs([res])[res].result(30)
    assert err.value.args[0].name() == "INVALID_REQUEST"
    assert "dynamically" in err.value.args[0].str()


def test_describe_log_dirs(broker, admin):
    topic = "logdirs"
    create(admin, topic)
    produce(broker, topic, [(None, b"d" * 100) for _ in range(10)])
    out = admin.describe_log_dirs()
    text = repr(out)
    assert str(broker.log_dir) in text
    # find our partition and its size
    found = []

    def walk(o):
        if isinstance(o, dict):
            if o.get("name") == topic or o.get("topic") == topic:
                found.append(o)
            for v in o.values():
                walk(v)
        elif isinstance(o, (list, tuple)):
            for v in o:
                walk(v)
    walk(out)
    assert found, text
    size = os.path.getsize(glob.glob(os.path.join(part_dir(broker, topic), "*.log"))[0])
    assert str(size) in repr(found)
