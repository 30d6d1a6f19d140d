"""The PySpark pipeline end to end against a live kafkapy broker, in Spark local mode.

Needs the Kafka connector jars (spark-sql-kafka-0-10_2.13-4.0.x,
spark-token-provider-kafka-0-10_2.13-4.0.x, commons-pool2, kafka-clients
3.9.x): ``KAFKAPY_SPARK_JARS`` when set, else ``<repo>/../shared/spark-jars``
(``tests.support.spark.CONNECTOR_JARS``). Without them the test is skipped
with that reason, except under CI (``CI=true``), where it fails: CI must run it.

The jobs run as the user runs them: ``python -m kafkapy.pipeline stream
--available-now`` and ``... backfill``, each a fresh JVM, so a second streaming
run really restarts from the checkpoint. Malformed records of every kind (invalid
JSON, not an object, missing fields, an amount that is no number, a bad event time,
a tombstone; with and without a key) sit between the valid events of both runs.
Checks:
- every valid event is counted exactly once and nothing else is: each (window,
  kind) appears once in the Parquet output and once on the output topic, with the
  count (and amount sum) of the valid events alone, over two runs and several
  rate-limited micro-batches (maxOffsetsPerTrigger), so the malformed records
  change no aggregate;
- the restarted query resumes from its checkpoint (the second run adds only
  the new windows, nothing is counted twice);
- read_committed input excludes aborted records (a transaction that is
  aborted never shows up in any count);
- every malformed record is in the stream's dead-letter topic once (the restarted
  dead-letter query resumes from its checkpoint too), with its original key and
  value and exactly the ``__dlq.errors.*`` headers (source topic, partition and
  offset as the producer was told them, the job's name ``kafkapy-pipeline``,
  delivery count 1, the parse failure's reason), and nothing else is;
- the backfill (batch read from ListOffsets by time to the log end, with
  ``assign`` and with ``subscribePattern``) gives the same aggregates for its
  range, including the records produced after the aborted transaction's marker
  (whose timestamp is the broker's clock, past the range), and writes the
  malformed records whose record timestamp is in the range, and only those, to
  its dead-letter topic under its own name (``kafkapy-pipeline-backfill``), and
  says how many.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from tests.support.spark import CONNECTOR_JARS, ROOT, require_connector
from tests.support.spark_cluster import TEST_JVM_OPTIONS, spark_defaults

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module", autouse=True)
def _connector():
    require_connector()


T0 = datetime(2026, 3, 1, 8, 0, 0, tzinfo=timezone.utc)
INPUT, OUTPUT = "e2e-pipeline-events", "e2e-pipeline-aggregates"
DLQ = "dlq.e2e-stream"
DLQ_ASSIGN, DLQ_PATTERN = "dlq.e2e-backfill-assign", "dlq.e2e-backfill-pattern"
KINDS = ("click", "view", "purchase")
HEADERS = ("__dlq.errors.topic", "__dlq.errors.partition", "__dlq.errors.offset",
           "__dlq.errors.group", "__dlq.errors.delivery.count", "__dlq.errors.reason")
# (key, value, reason, record timestamp as seconds after T0); the backfill's range is
# minutes 1 and 2 (60 <= seconds < 180). Run 1 sends the first six, run 2 the rest.
MALFORMED = [
    (None, b"{not json", "invalid JSON", 3),
    (b"bad1", b'["click", 1]', "not a JSON object", 64),
    (b"bad2", b'{"kind": "click", "amount": 1}', "missing event_id", 75),
    (None, b'{"event_id": "x1", "amount": 2}', "missing kind", 110),
    (b"bad4", b'{"user": "u"}', "missing event_id and kind", 40),
    (b"bad5", b'{"event_id": "x2", "kind": "view", "amount": "7"}',
     "amount is not a number", 119),
    (None, b'{"event_id": "x3", "kind": "view", "event_time": "2026-13-45"}',
     "invalid event_time", 130),
    (b"bad7", None, "no value", 170),
    (b"bad8", b"\xff\xfe\x00binary", "invalid JSON", 250),     # outside the backfill's range
]


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


def _produce(bootstrap: str, events: list[dict], malformed=()) -> list[tuple]:
    """The events in order, round robin over both partitions, one malformed record after
    each of the first ones; the malformed records as (key, value, reason, record time
    in seconds after T0, partition, offset), placed as the producer was told."""
    from kafka import KafkaProducer
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    placed = []
    try:
        for n, e in enumerate(events):
            producer.send(INPUT, key=e["user"].encode(), value=json.dumps(e).encode(),
                          partition=n % 2, headers=[("source", b"e2e")],
                          timestamp_ms=_ms(datetime.fromisoformat(
                              e["event_time"].replace("Z", "+00:00"))))
            if n < len(malformed):
                key, value, reason, seconds = malformed[n]
                placed.append(((key, value, reason, seconds), producer.send(
                    INPUT, key=key, value=value, partition=n % 2,
                    headers=[("source", b"e2e")],
                    timestamp_ms=_ms(T0 + timedelta(seconds=seconds)))))
        producer.flush()
        return [(*bad, m.partition, m.offset) for bad, m in
                ((bad, future.get(30)) for bad, future in placed)]
    finally:
        producer.close()


def _want_letters(bad: list[tuple], group: str, in_range=lambda seconds: True) -> list[tuple]:
    """The dead letters of the malformed records ``in_range``: key, value, headers."""
    letters = []
    for key, value, reason, seconds, partition, offset in bad:
        if in_range(seconds):
            headers = (INPUT, str(partition), str(offset), group, "1", f"parse_failed: {reason}")
            letters.append((key, value, tuple(zip(HEADERS, (h.encode() for h in headers)))))
    return sorted(letters, key=repr)


def _letters(bootstrap: str, topic: str) -> list[tuple]:
    return sorted(((r.key, r.value, tuple(r.headers)) for r in _read(bootstrap, topic)),
                  key=repr)


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


def _run(conf: Path, *args: str, timeout: float = 600) -> str:
    """``kafkapy-pipeline args``, its Spark configured by ``conf/spark-defaults.conf``."""
    env = dict(os.environ, KAFKAPY_SPARK_JARS=",".join(CONNECTOR_JARS),
               KAFKAPY_SPARK_MASTER="local[1]", SPARK_LOCAL_IP="127.0.0.1",
               SPARK_CONF_DIR=str(conf))
    proc = subprocess.run([sys.executable, "-m", "kafkapy.pipeline", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, (f"kafkapy-pipeline {' '.join(args)} exited {proc.returncode}\n"
                                  f"{proc.stdout[-4000:]}\n{proc.stderr[-12000:]}")
    return proc.stdout


def _parquet_counts(spark, path: str) -> Counter:
    rows = spark.read.parquet(path).collect()
    keys = [(r.window_start.replace(tzinfo=timezone.utc), r.kind) for r in rows]
    assert len(keys) == len(set(keys)), f"a window was written twice: {sorted(keys)}"
    assert all(r.amount == r.events for r in rows), rows    # every valid amount is 1.0
    return Counter({(r.window_start.replace(tzinfo=timezone.utc), r.kind): r.events
                    for r in rows})


def _read(bootstrap: str, topic: str) -> list:
    """Every record of ``topic``, up to the end offsets of its partitions when called."""
    from kafka import KafkaConsumer, TopicPartition
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        deadline = time.monotonic() + 30
        while not consumer.partitions_for_topic(topic):
            assert time.monotonic() < deadline, f"no topic {topic}"
            time.sleep(0.2)
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))]
        consumer.assign(tps)
        ends = consumer.end_offsets(tps)
        records = []
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            assert time.monotonic() < deadline, f"{topic}: read {len(records)} records"
            for batch in consumer.poll(500).values():
                records.extend(batch)
        return records
    finally:
        consumer.close()


def _topic_counts(bootstrap: str) -> Counter:
    values = [json.loads(r.value) for r in _read(bootstrap, OUTPUT)]
    keys = [(v["window_start"], v["kind"]) for v in values]
    assert len(keys) == len(set(keys)), f"a window was sent twice: {sorted(keys)}"
    assert all(v["amount"] == v["events"] for v in values), values
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
    stream = [*common, "--dead-letter-topic", DLQ]
    # Each run a short-lived JVM: the client JIT and the serial collector start it faster
    # and change nothing the job does.
    conf = spark_defaults(tmp_path / "conf", {"spark.driver.extraJavaOptions": TEST_JVM_OPTIONS})

    # Run 1: minutes 0 and 1, an aborted transaction inside minute 1, and an
    # event at 2:15 that moves the watermark past minute 1.
    first = _minute_events(0, 0, 4) + _minute_events(100, 1, 5)
    bad = _produce(broker.bootstrap, first, MALFORMED[:6])
    _produce_aborted(broker.bootstrap, [_event(900 + i, "click", T0 + timedelta(minutes=1, seconds=i))
                                        for i in range(10)])
    tick = [_event(999, "view", T0 + timedelta(minutes=2, seconds=15))]
    _produce(broker.bootstrap, tick)
    _run(conf, "stream", *stream, "--topics", INPUT, "--available-now",
         "--max-offsets-per-trigger", "25")
    want = _expected(first + tick, T0 + timedelta(minutes=2))
    assert _parquet_counts(spark, str(tmp_path / "out")) == want
    assert _topic_counts(broker.bootstrap) == want
    assert _letters(broker.bootstrap, DLQ) == _want_letters(bad, "kafkapy-pipeline")

    # Run 2 from the same checkpoint: minutes 2 and 3 and an event at 5:00.
    second = _minute_events(200, 2, 3) + _minute_events(300, 3, 2)
    bad += _produce(broker.bootstrap, second + [_event(1999, "view", T0 + timedelta(minutes=5))],
                    MALFORMED[6:])
    assert len(bad) == len(MALFORMED)
    _run(conf, "stream", *stream, "--topics", INPUT, "--available-now",
         "--max-offsets-per-trigger", "40")
    want = _expected(first + tick + second, T0 + timedelta(minutes=4))
    assert _parquet_counts(spark, str(tmp_path / "out")) == want
    assert _topic_counts(broker.bootstrap) == want
    assert sum(want.values()) == len(first) + len(tick) + len(second)
    assert _letters(broker.bootstrap, DLQ) == _want_letters(bad, "kafkapy-pipeline")

    # Backfill minutes 1 and 2 with a batch read, by assign and by pattern.
    range_args = ["--from", (T0 + timedelta(minutes=1)).isoformat(),
                  "--to", (T0 + timedelta(minutes=3)).isoformat()]
    want_range = Counter({k: v for k, v in want.items()
                          if T0 + timedelta(minutes=1) <= k[0] < T0 + timedelta(minutes=3)})
    in_range = _want_letters(bad, "kafkapy-pipeline-backfill", lambda sec: 60 <= sec < 180)
    assert 0 < len(in_range) < len(MALFORMED)
    for how, dlq in ((["--assign", f"{INPUT}:0,1"], DLQ_ASSIGN),
                     (["--topic-pattern", "e2e-pipeline-ev.*"], DLQ_PATTERN)):
        out = tmp_path / f"backfill-{how[0][2:]}"
        said = _run(conf, "backfill", *common, *how, *range_args, "--dead-letter-topic", dlq,
                    "--out", str(out))
        assert _parquet_counts(spark, str(out)) == want_range
        assert f"; {len(in_range)} events that fail to parse to topic {dlq}" in said, said
        assert _letters(broker.bootstrap, dlq) == in_range
