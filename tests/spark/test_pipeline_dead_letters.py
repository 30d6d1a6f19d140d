"""The pipeline's dead letters end to end: a live kafkapy broker, Spark's real Kafka connector.

Two input topics hold the same valid events, partition for partition, one of them with
malformed records between them (invalid JSON, not an object, missing fields, an amount
that is no number, a bad event time, a tombstone). The streaming job runs on the mixed
topic as the user runs it (``python -m kafkapy.pipeline stream --available-now``, a JVM of
its own); the clean topic goes through the same streaming topology in the shared session.
Checks:
- every malformed record is in the dead-letter topic once, with its original key and
  value and exactly the ``__dlq.errors.*`` headers (source topic, partition and offset as
  the producer was told them, the job's name, delivery count 1, the parse failure's reason),
  and nothing else is;
- the aggregates of the mixed topic (Parquet and the output topic) equal those of the clean
  one, and count every valid event;
- the backfill of a time range writes the range's malformed records (by record timestamp)
  to its dead-letter topic, under its own name, and aggregates as the clean input does.

Needs the connector jars (``tests.support.spark.require_connector``: skipped without them,
except under CI, where that fails).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone

import pytest

from tests.support.spark import CONNECTOR_JARS, ROOT, require_connector

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

T0 = datetime(2026, 4, 1, 10, 0, 0, tzinfo=timezone.utc)
CLEAN, MIXED = "dl-clean-events", "dl-mixed-events"
KINDS = ("click", "view", "purchase")
HEADERS = ("__dlq.errors.topic", "__dlq.errors.partition", "__dlq.errors.offset",
           "__dlq.errors.group", "__dlq.errors.delivery.count", "__dlq.errors.reason")
# (value, reason, seconds after T0 of its record timestamp)
MALFORMED = [
    (b"{not json", "invalid JSON", 3),
    (b'["click", 1]', "not a JSON object", 14),
    (b'{"kind": "click", "amount": 1}', "missing event_id", 25),
    (b'{"event_id": "x1", "amount": 2}', "missing kind", 70),
    (b'{"user": "u"}', "missing event_id and kind", 75),
    (b'{"event_id": "x2", "kind": "view", "amount": "7"}', "amount is not a number", 80),
    (b'{"event_id": "x3", "kind": "view", "event_time": "2026-13-45"}', "invalid event_time", 130),
    (None, "no value", 140),
    (b"\xff\xfe\x00binary", "invalid JSON", 600),    # outside the backfill's range
]
BACKFILL_FROM, BACKFILL_TO = T0, T0 + timedelta(minutes=3)


@pytest.fixture(scope="module", autouse=True)
def _connector():
    require_connector()


def _ms(dt: datetime) -> int:
    return int(dt.timestamp() * 1000)


def _valid_events() -> list[tuple[bytes, datetime]]:
    """Minutes 0-2, then one at 5:00 whose time closes them (watermark 10 s)."""
    out = []
    for i in range(36):
        at = T0 + timedelta(seconds=i * 5 + 1)
        body = {"event_id": f"e{i}", "user": f"u{i % 4}", "kind": KINDS[i % 3],
                "amount": float(i % 7), "event_time": at.isoformat().replace("+00:00", "Z")}
        out.append((json.dumps(body).encode(), at))
    tick = {"event_id": "tick", "kind": "view", "event_time": "2026-04-01T10:05:00Z"}
    out.append((json.dumps(tick).encode(), T0 + timedelta(minutes=5)))
    return out


def _produce(bootstrap: str, topic: str, records) -> list[tuple[int, int]]:
    """Send (key, value, timestamp, partition) records in order; their (partition, offset)."""
    from kafka import KafkaProducer
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        futures = [producer.send(topic, key=key, value=value, partition=partition,
                                 timestamp_ms=_ms(at)) for key, value, at, partition in records]
        producer.flush()
        return [(m.partition, m.offset) for m in (f.get(30) for f in futures)]
    finally:
        producer.close()


def _inputs(bootstrap: str) -> list[tuple]:
    """Both topics filled; the dead letters the mixed one must give: (key, value, headers)."""
    valid = _valid_events()
    _produce(bootstrap, CLEAN, [(f"k{i}".encode(), v, at, i % 2)
                                for i, (v, at) in enumerate(valid)])
    mixed, bad = [], []
    for i, (v, at) in enumerate(valid):
        mixed.append((f"k{i}".encode(), v, at, i % 2))
        if i < len(MALFORMED):
            value, reason, seconds = MALFORMED[i]
            key = None if i % 3 == 0 else f"bad{i}".encode()
            mixed.append((key, value, T0 + timedelta(seconds=seconds), i % 2))
            bad.append((len(mixed) - 1, key, value, reason, seconds))
    placed = _produce(bootstrap, MIXED, mixed)
    return [(key, value, reason, seconds, *placed[n]) for n, key, value, reason, seconds in bad]


def _want_letters(bad: list[tuple], group: str, in_range=lambda seconds: True) -> list[tuple]:
    letters = []
    for key, value, reason, seconds, partition, offset in bad:
        if in_range(seconds):
            headers = (MIXED, str(partition), str(offset), group, "1", f"parse_failed: {reason}")
            letters.append((key, value, tuple(zip(HEADERS, (h.encode() for h in headers)))))
    return sorted(letters, key=repr)


def _read_topic(bootstrap: str, topic: str) -> list:
    from kafka import KafkaConsumer
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=None,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             consumer_timeout_ms=5000)
    try:
        return list(consumer)
    finally:
        consumer.close()


def _letters(bootstrap: str, topic: str) -> list[tuple]:
    return sorted(((r.key, r.value, tuple(r.headers)) for r in _read_topic(bootstrap, topic)),
                  key=repr)


def _run(*args: str) -> str:
    env = dict(os.environ, KAFKAPY_SPARK_JARS=",".join(CONNECTOR_JARS),
               KAFKAPY_SPARK_MASTER="local[1]", SPARK_LOCAL_IP="127.0.0.1")
    proc = subprocess.run([sys.executable, "-m", "kafkapy.pipeline", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, (f"kafkapy-pipeline {' '.join(args)} exited {proc.returncode}\n"
                                  f"{proc.stdout[-4000:]}\n{proc.stderr[-12000:]}")
    return proc.stdout


def _parquet(spark, path) -> list[tuple]:
    return sorted(tuple(r) for r in spark.read.parquet(str(path)).drop("window_date").collect())


def _create_topics(bootstrap: str) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(CLEAN, 2, 1), NewTopic(MIXED, 2, 1)])
    finally:
        admin.close()


def _stream_clean_in_session(spark, bootstrap: str, tmp_path) -> list[tuple]:
    from kafkapy.pipeline import jobs
    from kafkapy.pipeline.settings import PipelineSettings
    s = PipelineSettings(bootstrap=bootstrap, subscribe=CLEAN, watermark="10 seconds",
                         dead_letter_topic="dlq.dl-clean", checkpoint_dir=str(tmp_path / "c-ck"),
                         parquet_dir=str(tmp_path / "c-out"))
    for q in jobs.start_streaming(spark, s, sinks=["parquet", "dead-letters"],
                                  available_now=True, query_prefix="dl-clean"):
        q.awaitTermination(300)
        assert q.exception() is None and not q.isActive, q.exception()
    return _parquet(spark, tmp_path / "c-out")


def test_malformed_events_go_to_the_dead_letter_topic(broker, spark, tmp_path):
    _create_topics(broker.bootstrap)
    bad = _inputs(broker.bootstrap)
    clean = _stream_clean_in_session(spark, broker.bootstrap, tmp_path)
    assert sum(row[3] for row in clean) == len(_valid_events()) - 1    # all but the tick
    assert _letters(broker.bootstrap, "dlq.dl-clean") == []

    _run("stream", "--bootstrap", broker.bootstrap, "--topics", MIXED, "--available-now",
         "--output-topic", "dl-mixed-aggregates", "--dead-letter-topic", "dlq.dl-mixed",
         "--checkpoint", str(tmp_path / "m-ck"), "--parquet", str(tmp_path / "m-out"),
         "--watermark", "10 seconds", "--shuffle-partitions", "1",
         "--max-offsets-per-trigger", "20")
    assert _letters(broker.bootstrap, "dlq.dl-mixed") == _want_letters(bad, "kafkapy-pipeline")
    assert _parquet(spark, tmp_path / "m-out") == clean
    on_topic = [json.loads(r.value) for r in _read_topic(broker.bootstrap, "dl-mixed-aggregates")]
    assert sorted((v["window_start"], v["kind"], v["events"], v["amount"]) for v in on_topic) == \
        sorted((row[0].strftime("%Y-%m-%dT%H:%M:%S.000Z"), row[2], row[3], row[4])
               for row in clean)

    out = _run("backfill", "--bootstrap", broker.bootstrap, "--topics", MIXED,
               "--dead-letter-topic", "dlq.dl-backfill", "--out", str(tmp_path / "b-out"),
               "--from", BACKFILL_FROM.isoformat(), "--to", BACKFILL_TO.isoformat())
    in_range = [letter for letter in MALFORMED if letter[2] < 180]
    assert f"; {len(in_range)} events that fail to parse to topic dlq.dl-backfill" in out, out
    assert _letters(broker.bootstrap, "dlq.dl-backfill") == _want_letters(
        bad, "kafkapy-pipeline-backfill", lambda seconds: seconds < 180)
    assert _parquet(spark, tmp_path / "b-out") == clean
