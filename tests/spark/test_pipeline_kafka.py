"""The pipeline's jobs on Spark's real Kafka connector against a live kafkapy broker, in-process.

The shared ``spark`` session carries the connector jars (``CONNECTOR_JARS``:
``KAFKAPY_SPARK_JARS`` or ``<repo>/../shared/spark-jars``), so these call
``kafkapy.pipeline.jobs`` directly, without a JVM per test. Tests that need
Spark are skipped without the jars, except under CI, where that is a failure.

Checks (each a defect found with the real connector):
- the backfill reads every record of its range even when a record with a
  later timestamp (a transaction marker carries the coordinator's clock, a
  producer may send out of order) sits between records of the range;
- the streaming job can be started before its input topic exists (the
  README's order), the topic is created as a consumer's metadata request
  would create it, and events sent afterwards reach the query;
- a broker with ``auto.create.topics.enable=false`` gets a one-line error
  naming the topic instead of a Spark failure.
"""
from __future__ import annotations

import json
import time
from collections import Counter
from datetime import datetime, timedelta, timezone

import pytest

from tests.support.broker_process import BrokerProcess
from tests.support.spark import require_connector

pytestmark = [pytest.mark.timeout(600)]

T0 = datetime(2026, 5, 1, 9, 0, 0, tzinfo=timezone.utc)


@pytest.fixture
def kspark(spark):
    """The shared session, which must have the connector."""
    require_connector()
    return spark


def _ms(dt: datetime) -> int:
    return int(dt.timestamp() * 1000)


def _event(i: int, kind: str, at: datetime) -> tuple[bytes, int]:
    body = {"event_id": f"e{i}", "user": f"u{i % 3}", "kind": kind, "amount": 1.0,
            "event_time": at.isoformat(timespec="milliseconds").replace("+00:00", "Z")}
    return json.dumps(body).encode(), _ms(at)


def _produce(bootstrap: str, topic: str, events: list[tuple[bytes, int]]) -> None:
    from kafka import KafkaProducer
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        for value, ts in events:
            producer.send(topic, value=value, partition=0, timestamp_ms=ts)
        producer.flush()
    finally:
        producer.close()


def _produce_aborted(bootstrap: str, topic: str, events: list[tuple[bytes, int]]) -> None:
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-aborter"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for value, ts in events:
        producer.produce(topic, value, partition=0, timestamp=ts)
    producer.flush(30)
    producer.abort_transaction(30)


def _create(bootstrap: str, topic: str) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, 1, 1)])
    finally:
        admin.close()


def test_backfill_reads_past_records_with_later_timestamps(broker, kspark, tmp_path):
    from kafkapy.pipeline import jobs
    from kafkapy.pipeline.settings import PipelineSettings
    topic = "backfill-order"
    _create(broker.bootstrap, topic)
    at = lambda s: T0 + timedelta(seconds=s)  # noqa: E731
    # In range [9:00, 9:02): 2 clicks, an aborted transaction (its marker is
    # stamped with the broker's clock, months after the range), 3 views, a
    # record at 9:05, then 1 purchase.
    _produce(broker.bootstrap, topic, [_event(0, "click", at(5)), _event(1, "click", at(65))])
    _produce_aborted(broker.bootstrap, topic, [_event(10 + i, "click", at(30)) for i in range(4)])
    _produce(broker.bootstrap, topic, [_event(20 + i, "view", at(40 + i)) for i in range(3)]
             + [_event(30, "view", at(300)), _event(31, "purchase", at(100))])
    s = PipelineSettings(bootstrap=broker.bootstrap, subscribe=topic,
                         isolation_level="read_committed")
    jobs.run_backfill(kspark, s, _ms(T0), _ms(at(120)), str(tmp_path / "out"))
    rows = kspark.read.parquet(str(tmp_path / "out")).collect()
    got = Counter({(r.window_start.replace(tzinfo=timezone.utc), r.kind): r.events for r in rows})
    assert got == Counter({(T0, "click"): 1, (T0, "view"): 3, (at(60), "click"): 1,
                           (at(60), "purchase"): 1})


def _input_rows(query) -> int:
    return sum(p["numInputRows"] for p in query.recentProgress)


def _first_trigger_done(query, limit_s: float = 120) -> None:
    """Returns once the query planned a trigger (it waits for data) or stopped.

    The source looks its topics up on the first trigger; events sent before
    that would create the topic and hide a failure to find it.
    """
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline and query.isActive:
        if query.status["message"].startswith("Waiting"):
            return
        time.sleep(0.2)


def test_stream_started_before_its_topic_exists(broker, kspark, tmp_path):
    from kafka import KafkaConsumer

    from kafkapy.pipeline import jobs
    from kafkapy.pipeline.settings import PipelineSettings
    topic = "stream-first"
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap)
    try:
        assert topic not in consumer.topics()
    finally:
        consumer.close()
    s = PipelineSettings(bootstrap=broker.bootstrap, subscribe=topic,
                         checkpoint_dir=str(tmp_path / "ckpt"),
                         parquet_dir=str(tmp_path / "out"), trigger_seconds=0.5)
    (query,) = jobs.start_streaming(kspark, s, sinks=["parquet"], query_prefix="before-topic")
    try:
        _first_trigger_done(query)
        assert query.exception() is None and query.isActive
        events = [_event(i, "click", T0 + timedelta(seconds=i)) for i in range(7)]
        _produce(broker.bootstrap, topic, events)
        query.processAllAvailable()
        assert query.exception() is None and query.isActive
        assert _input_rows(query) == len(events)
    finally:
        query.stop()


def test_missing_topic_without_auto_create_is_one_line(tmp_path):
    from kafkapy.pipeline import topics
    from kafkapy.pipeline.settings import PipelineSettings
    b = BrokerProcess(tmp_path / "logs", overrides={"auto.create.topics.enable": "false"}).start()
    try:
        s = PipelineSettings(bootstrap=b.bootstrap, subscribe="absent")
        with pytest.raises(topics.TopicMissingError) as err:
            topics.ensure_input_topics(s, wait_ms=2000)
    finally:
        b.stop()
    message = str(err.value)
    assert "'absent'" in message and "auto.create.topics.enable" in message
    assert "\n" not in message
