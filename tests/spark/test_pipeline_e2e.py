"""The PySpark pipeline end to end against a live kafkapy broker, in Spark local mode.

Needs the Kafka connector jars (spark-sql-kafka-0-10_2.13-4.0.x,
spark-token-provider-kafka-0-10_2.13-4.0.x, commons-pool2, kafka-clients
3.9.x): ``KAFKAPY_SPARK_JARS`` when set, else ``<repo>/../shared/spark-jars``
(``tests.support.spark.CONNECTOR_JARS``). Without them the test is skipped
with that reason, except under CI (``CI=true``), where it fails: CI must run it.

The jobs run as the user runs them: ``python -m kafkapy.pipeline stream
--available-now`` and ``... backfill``, each a fresh JVM, so a second streaming
run really restarts from the checkpoint. Checks:
- every event is counted exactly once: each (window, kind) appears once in the
  Parquet output and once on the output topic, with the expected count, over
  two runs and several rate-limited micro-batches (maxOffsetsPerTrigger);
- the restarted query resumes from its checkpoint (the second run adds only
  the new windows, nothing is counted twice);
- read_committed input excludes aborted records (a transaction that is
  aborted never shows up in any count);
- the backfill (batch read from ListOffsets by time to the log end, with
  ``assign`` and with ``subscribePattern``) gives the same aggregates for its
  range, including the records produced after the aborted transaction's marker
  (whose timestamp is the broker's clock, past the range).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from datetime import datetime, timedelta, timezone

import pytest

from tests.support.spark import CONNECTOR_JARS, ROOT, require_connector

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module", autouse=True)
def _connector():
    require_connector()


T0 = datetime(2026, 3, 1, 8, 0, 0, tzinfo=timezone.utc)
INPUT, OUTPUT = "e2e-pipeline-events", "e2e-pipeline-aggregates"
KINDS = ("click", "view", "purchase")


def _ms(dt: datetime) -> int:
    return int(dt.timestamp() * 1000)


def _event(i: int, kind: str, at: datetime) -> dict:
    return {"event_id": f"e{i}", "user": f"u{i % 5}", "kind": kind, "amount": 1.0,
            "event_time": at.isoformat(timespec="milliseconds").replace("+00:00", "Z")}


def _minute_events(first_id: int, minute: int, per_kind: int) -> list[dict]:
    out = []
    for k, kind in enumerate(KINDS):
        for j in range(per_kind * (k + 1)):  # click: n, view: 2n, purchase: 3n
            at = T0 + timedelta(minutes=minute, seconds=(j * 7 + k) % 60)
            out.append(_event(first_id + len(out), kind, at))
    return out


def _produce(bootstrap: str, events: list[dict]) -> None:
    from kafka import KafkaProducer
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        for n, e in enumerate(events):
            producer.send(INPUT, key=e["user"].encode(), value=json.dumps(e).encode(),
                          partition=n % 2, headers=[("source", b"e2e")],
                          timestamp_ms=_ms(datetime.fromisoformat(
                              e["event_time"].replace("Z", "+00:00"))))
        producer.flush()
    finally:
        producer.close()


def _produce_aborted(bootstrap: str, events: list[dict]) -> None:
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "e2e-aborter"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for n, e in enumerate(events):
        at = datetime.fromisoformat(e["event_time"].replace("Z", "+00:00"))
        producer.produce(INPUT, json.dumps(e).encode(), e["user"].encode(), partition=n % 2,
                         timestamp=_ms(at))
    producer.flush(30)
    producer.abort_transaction(30)


def _expected(events: list[dict], before: datetime) -> Counter:
    counts: Counter = Counter()
    for e in events:
        at = datetime.fromisoformat(e["event_time"].replace("Z", "+00:00"))
        if at < before:
            counts[(at.replace(second=0, microsecond=0), e["kind"])] += 1
    return counts


def _run(*args: str, timeout: float = 600) -> None:
    env = dict(os.environ, KAFKAPY_SPARK_JARS=",".join(CONNECTOR_JARS),
               KAFKAPY_SPARK_MASTER="local[1]", SPARK_LOCAL_IP="127.0.0.1")
    proc = subprocess.run([sys.executable, "-m", "kafkapy.pipeline", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, (f"kafkapy-pipeline {' '.join(args)} exited {proc.returncode}\n"
                                  f"{proc.stdout[-4000:]}\n{proc.stderr[-12000:]}")


def _parquet_counts(spark, path: str) -> Counter:
    rows = spark.read.parquet(path).collect()
    keys = [(r.window_start.replace(tzinfo=timezone.utc), r.kind) for r in rows]
    assert len(keys) == len(set(keys)), f"a window was written twice: {sorted(keys)}"
    return Counter({(r.window_start.replace(tzinfo=timezone.utc), r.kind): r.events
                    for r in rows})


def _topic_counts(bootstrap: str) -> Counter:
    from kafka import KafkaConsumer
    consumer = KafkaConsumer(OUTPUT, bootstrap_servers=bootstrap, group_id=None,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             consumer_timeout_ms=5000)
    try:
        values = [json.loads(r.value) for r in consumer]
    finally:
        consumer.close()
    keys = [(v["window_start"], v["kind"]) for v in values]
    assert len(keys) == len(set(keys)), f"a window was sent twice: {sorted(keys)}"
    return Counter({(datetime.fromisoformat(v["window_start"].replace("Z", "+00:00")),
                     v["kind"]): v["events"] for v in values})


def test_stream_restart_and_backfill(broker, spark, tmp_path):
    from kafka.admin import KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([NewTopic(INPUT, 2, 1), NewTopic(OUTPUT, 1, 1)])
    finally:
        admin.close()
    common = ["--bootstrap", broker.bootstrap, "--output-topic", OUTPUT,
              "--checkpoint", str(tmp_path / "checkpoint"), "--parquet", str(tmp_path / "out"),
              "--isolation-level", "read_committed", "--window", "1 minute",
              "--watermark", "10 seconds", "--shuffle-partitions", "1"]

    # Run 1: minutes 0 and 1, an aborted transaction inside minute 1, and an
    # event at 2:15 that moves the watermark past minute 1.
    first = _minute_events(0, 0, 4) + _minute_events(100, 1, 5)
    _produce(broker.bootstrap, first)
    _produce_aborted(broker.bootstrap, [_event(900 + i, "click", T0 + timedelta(minutes=1, seconds=i))
                                        for i in range(10)])
    tick = [_event(999, "view", T0 + timedelta(minutes=2, seconds=15))]
    _produce(broker.bootstrap, tick)
    _run("stream", *common, "--topics", INPUT, "--available-now",
         "--max-offsets-per-trigger", "25")
    want = _expected(first + tick, T0 + timedelta(minutes=2))
    assert _parquet_counts(spark, str(tmp_path / "out")) == want
    assert _topic_counts(broker.bootstrap) == want

    # Run 2 from the same checkpoint: minutes 2 and 3 and an event at 5:00.
    second = _minute_events(200, 2, 3) + _minute_events(300, 3, 2)
    _produce(broker.bootstrap, second + [_event(1999, "view", T0 + timedelta(minutes=5))])
    _run("stream", *common, "--topics", INPUT, "--available-now",
         "--max-offsets-per-trigger", "40")
    want = _expected(first + tick + second, T0 + timedelta(minutes=4))
    assert _parquet_counts(spark, str(tmp_path / "out")) == want
    assert _topic_counts(broker.bootstrap) == want
    assert sum(want.values()) == len(first) + len(tick) + len(second)

    # Backfill minutes 1 and 2 with a batch read, by assign and by pattern.
    range_args = ["--from", (T0 + timedelta(minutes=1)).isoformat(),
                  "--to", (T0 + timedelta(minutes=3)).isoformat()]
    want_range = Counter({k: v for k, v in want.items()
                          if T0 + timedelta(minutes=1) <= k[0] < T0 + timedelta(minutes=3)})
    _run("backfill", *common, "--assign", f"{INPUT}:0,1", *range_args,
         "--out", str(tmp_path / "backfill-assign"))
    assert _parquet_counts(spark, str(tmp_path / "backfill-assign")) == want_range
    _run("backfill", *common, "--topic-pattern", "e2e-pipeline-ev.*", *range_args,
         "--out", str(tmp_path / "backfill-pattern"))
    assert _parquet_counts(spark, str(tmp_path / "backfill-pattern")) == want_range
