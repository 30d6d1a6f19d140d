"""The pipeline's transformation logic on local DataFrames (pyspark 4.0.x, local[1], no broker).

Rows are built with the columns of Spark's Kafka source (binary key/value,
topic, partition, offset, timestamp, timestampType, headers), so the functions
see exactly what the Kafka source gives them. The streaming test runs the
real streaming topology (``jobs.start_streaming``) with a file source in that
shape instead of Kafka: append mode with a watermark, the Parquet sink, and a
restart from the checkpoint that must not count anything twice.

Skipped (with the reason) only when pyspark 4.0.x or java is missing.
"""
from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone

import pytest

from tests.support.spark import pyspark_skip_reason

_reason = pyspark_skip_reason()
pytestmark = [pytest.mark.skipif(_reason is not None, reason=_reason or ""),
              pytest.mark.timeout(600)]

if _reason is None:
    from pyspark.sql import Row
    from pyspark.sql import functions as F
    from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, LongType, StringType,
                                   StructField, StructType, TimestampType)

    from kafkapy.pipeline import jobs, transform
    from kafkapy.pipeline.settings import PipelineSettings

    KAFKA_SCHEMA = StructType([
        StructField("key", BinaryType()), StructField("value", BinaryType()),
        StructField("topic", StringType()), StructField("partition", IntegerType()),
        StructField("offset", LongType()), StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
        StructField("headers", ArrayType(StructType([StructField("key", StringType()),
                                                     StructField("value", BinaryType())]))),
    ])

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=timezone.utc)


def _iso(dt: datetime) -> str:
    return dt.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def event(i: int, kind: str, seconds: float, amount: float | None = 1.0, **extra) -> dict:
    e = {"event_id": f"e{i}", "user": f"u{i % 3}", "kind": kind,
         "event_time": _iso(T0 + timedelta(seconds=seconds))}
    if amount is not None:
        e["amount"] = amount
    e.update(extra)
    return e


def kafka_rows(values: list, topic: str = "events", partition: int = 0,
               kafka_time: datetime = T0, headers=None, keys=None) -> list:
    rows = []
    for offset, v in enumerate(values):
        value = v if isinstance(v, (bytes, type(None))) else json.dumps(v).encode()
        rows.append(Row(key=keys[offset] if keys else None, value=value, topic=topic,
                        partition=partition, offset=offset,
                        timestamp=kafka_time.replace(tzinfo=None), timestampType=0,
                        headers=headers if headers is not None else []))
    return rows


def raw_df(spark, values, **kw):
    return spark.createDataFrame(kafka_rows(values, **kw), KAFKA_SCHEMA)


def test_parse_events_valid_and_rejected(spark):
    values = [
        event(1, "click", 1, 2.5),
        event(2, "view", 2, None),                        # amount defaults to 0
        {"event_id": "e3", "kind": "click"},              # event time from the record timestamp
        b"not json",
        {"event_id": "e5", "user": "u"},                  # no kind
        {"kind": "click"},                                # no id
        event(7, "click", 3, 1.0, event_time="yesterday"),  # unparsable time
        None,                                             # tombstone
    ]
    raw = raw_df(spark, values, headers=[Row(key="source", value=b"unit-test")])
    got = {r.event_id: r for r in transform.parse_events(raw).collect()}
    assert set(got) == {"e1", "e2", "e3"}
    assert got["e1"].amount == 2.5 and got["e1"].kind == "click" and got["e1"].user == "u1"
    assert got["e1"].event_time.replace(tzinfo=timezone.utc) == T0 + timedelta(seconds=1)
    assert got["e2"].amount == 0.0
    assert got["e3"].event_time.replace(tzinfo=timezone.utc) == T0
    assert got["e1"].source == "unit-test"
    assert (got["e1"].topic, got["e1"].partition, got["e1"].offset) == ("events", 0, 0)
    rejected = sorted(r.offset for r in transform.rejected_events(raw).collect())
    assert rejected == [3, 4, 5, 6, 7]


MALFORMED = [                                          # (value, reason)
    (b"not json", "invalid JSON"),
    (b'{"event_id": "m1", "kind": "click",}', "invalid JSON"),
    (b"", "invalid JSON"),
    (b"[1, 2]", "not a JSON object"),
    (b"null", "not a JSON object"),
    (b"{}", "missing event_id and kind"),
    (b'{"kind": "click"}', "missing event_id"),
    (b'{"event_id": "m2", "kind": null}', "missing kind"),
    (b'{"event_id": "m3", "kind": "click", "amount": "1.5"}', "amount is not a number"),
    (b'{"event_id": "m4", "kind": "view", "event_time": "yesterday"}', "invalid event_time"),
    (None, "no value"),
]


def test_dead_letter_records_of_malformed_input(spark):
    good = [event(1, "click", 1, 2.5), event(2, "view", 2)]
    values = good[:1] + [v for v, _ in MALFORMED] + good[1:]
    keys = [None if offset % 2 else f"k{offset}".encode() for offset in range(len(values))]
    raw = raw_df(spark, values, topic="raw-events", partition=3, keys=keys)
    letters = transform.to_dead_letter_records(transform.rejected_events(raw), "my-app")
    assert letters.columns == ["key", "value", "headers"]      # what Spark's Kafka sink takes
    got = [(None if r.key is None else bytes(r.key), None if r.value is None else bytes(r.value),
            [(h.key, bytes(h.value)) for h in r.headers]) for r in letters.collect()]
    want = []
    for offset, (value, reason) in enumerate(MALFORMED, start=1):
        want.append((keys[offset], value, [
            ("__dlq.errors.topic", b"raw-events"), ("__dlq.errors.partition", b"3"),
            ("__dlq.errors.offset", str(offset).encode()), ("__dlq.errors.group", b"my-app"),
            ("__dlq.errors.delivery.count", b"1"),
            ("__dlq.errors.reason", f"parse_failed: {reason}".encode())]))
    assert sorted(got, key=lambda r: r[2][2]) == sorted(want, key=lambda r: r[2][2])
    assert transform.DEAD_LETTER_HEADERS == tuple(h for h, _ in want[0][2])


def test_malformed_input_leaves_the_aggregates_unchanged(spark):
    good = [event(i, kind, sec, amt) for i, (kind, sec, amt) in enumerate([
        ("click", 0, 1.0), ("view", 30, 5.0), ("click", 61, 6.0), ("view", 150, 1.5)])]
    mixed = [good[0], *[v for v, _ in MALFORMED[:6]], *good[1:3], *[v for v, _ in MALFORMED[6:]],
             good[3]]

    def aggregates(values):
        aggs = transform.pipeline(raw_df(spark, values), window="1 minute", watermark=None)
        return sorted(tuple(r) for r in aggs.collect())

    assert aggregates(mixed) == aggregates(good)
    assert len(aggregates(good)) == 4


def test_parse_events_without_headers_column(spark):
    raw = raw_df(spark, [event(1, "click", 1)]).drop("headers")
    rows = transform.parse_events(raw).collect()
    assert len(rows) == 1 and rows[0].source is None


def test_header_value_picks_the_named_header(spark):
    raw = raw_df(spark, [event(1, "click", 1)],
                 headers=[Row(key="other", value=b"x"), Row(key="source", value=b"s1"),
                          Row(key="source", value=b"s2")])
    assert transform.parse_events(raw).first().source == "s1"


def test_windowed_aggregates_tumbling(spark):
    values = [event(i, kind, sec, amt) for i, (kind, sec, amt) in enumerate([
        ("click", 0, 1.0), ("click", 59.999, 2.0), ("view", 30, 5.0),
        ("click", 60, 4.0), ("click", 61, 6.0), ("view", 150, 1.5)])]
    aggs = transform.pipeline(raw_df(spark, values), window="1 minute", watermark=None)
    got = {(r.window_start.replace(tzinfo=timezone.utc), r.kind): r for r in aggs.collect()}
    m = lambda n: T0 + timedelta(minutes=n)  # noqa: E731
    assert set(got) == {(m(0), "click"), (m(0), "view"), (m(1), "click"), (m(2), "view")}
    c0 = got[(m(0), "click")]
    assert (c0.events, c0.amount, c0.max_amount) == (2, 3.0, 2.0)
    assert c0.window_end.replace(tzinfo=timezone.utc) == m(1)
    assert c0.first_event_time.replace(tzinfo=timezone.utc) == m(0)
    assert c0.last_event_time.replace(tzinfo=timezone.utc) == m(0) + timedelta(seconds=59.999)
    assert (got[(m(1), "click")].events, got[(m(1), "click")].amount) == (2, 10.0)
    assert sum(r.events for r in got.values()) == len(values)


def test_windowed_aggregates_sliding_counts_each_event_per_window(spark):
    values = [event(i, "click", s) for i, s in enumerate([10, 40, 70])]
    aggs = transform.pipeline(raw_df(spark, values), window="1 minute", slide="30 seconds",
                              watermark=None)
    counts = {r.window_start.replace(tzinfo=timezone.utc): r.events for r in aggs.collect()}
    s = lambda n: T0 + timedelta(seconds=n)  # noqa: E731
    assert counts == {s(-30): 1, s(0): 2, s(30): 2, s(60): 1}


def test_time_range_filter_for_backfill(spark):
    values = [event(i, "click", s) for i, s in enumerate([0, 30, 60, 90, 120])]
    start = int((T0 + timedelta(seconds=30)).timestamp() * 1000)
    end = int((T0 + timedelta(seconds=90)).timestamp() * 1000)
    aggs = jobs.backfill_aggregates(spark, PipelineSettings(), start, end,
                                    raw=raw_df(spark, values))
    got = sorted((r.window_start.replace(tzinfo=timezone.utc), r.events) for r in aggs.collect())
    assert got == [(T0, 1), (T0 + timedelta(minutes=1), 1)]  # 30 s and 60 s; 90 s excluded


def test_to_kafka_records_and_parquet_rows(spark):
    aggs = transform.pipeline(raw_df(spark, [event(1, "click", 5, 2.0), event(2, "click", 6, 3.0)]),
                              watermark=None)
    rec = transform.to_kafka_records(aggs).collect()
    assert len(rec) == 1
    assert rec[0].key == "click@2026-01-01T12:00:00.000Z"
    body = json.loads(rec[0].value)
    assert body == {"window_start": "2026-01-01T12:00:00.000Z",
                    "window_end": "2026-01-01T12:01:00.000Z", "kind": "click", "events": 2,
                    "amount": 5.0, "max_amount": 3.0,
                    "first_event_time": "2026-01-01T12:00:05.000Z",
                    "last_event_time": "2026-01-01T12:00:06.000Z"}
    assert [(h.key, bytes(h.value)) for h in rec[0].headers] == [("producer", b"kafkapy-pipeline")]
    rows = transform.to_parquet_rows(aggs).collect()
    assert rows[0].window_date.isoformat() == "2026-01-01"
    assert tuple(transform.to_parquet_rows(aggs).columns) == transform.AGGREGATE_COLUMNS + (
        "window_date",)


def _write_batch(folder, name, values, first_offset):
    """One JSON-lines file shaped like Kafka source rows (value as a string)."""
    with open(os.path.join(folder, name), "w") as f:
        for i, v in enumerate(values):
            f.write(json.dumps({"value": json.dumps(v), "topic": "events", "partition": 0,
                                "offset": first_offset + i,
                                "timestamp": _iso(T0)}) + "\n")


def _file_stream(spark, folder):
    schema = "value string, topic string, partition int, offset long, timestamp timestamp"
    return (spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).json(folder)
            .select(F.lit(None).cast("binary").alias("key"),
                    F.col("value").cast("binary").alias("value"), "topic", "partition", "offset",
                    "timestamp", F.lit(0).alias("timestampType")))


def _run_available_now(spark, settings, folder):
    queries = jobs.start_streaming(spark, settings, sinks=["parquet"],
                                   raw=_file_stream(spark, folder), available_now=True,
                                   query_prefix="unit")
    for q in queries:
        q.awaitTermination(240)
        assert q.exception() is None, q.exception()
        assert not q.isActive


def test_streaming_topology_watermark_append_and_checkpoint_restart(spark, tmp_path):
    """Windows are emitted once when the watermark closes them; a restart resumes."""
    inbox = tmp_path / "in"
    inbox.mkdir()
    settings = PipelineSettings(checkpoint_dir=str(tmp_path / "ckpt"),
                                parquet_dir=str(tmp_path / "out"), window="1 minute",
                                watermark="10 seconds")
    # Run 1: minute 0 (3 clicks, 1 view), then an event at 1:30 moves the
    # watermark to 1:20, which closes minute 0 only.
    _write_batch(inbox, "a.json", [event(0, "click", 1), event(1, "click", 20),
                                   event(2, "view", 30), event(3, "click", 59)], 0)
    _write_batch(inbox, "b.json", [event(4, "click", 90, 10.0)], 4)
    _run_available_now(spark, settings, str(inbox))

    def output():
        if not (tmp_path / "out").exists():
            return []
        return sorted((r.window_start.replace(tzinfo=timezone.utc), r.kind, r.events, r.amount)
                      for r in spark.read.parquet(str(tmp_path / "out")).collect())

    m = lambda n: T0 + timedelta(minutes=n)  # noqa: E731
    assert output() == [(m(0), "click", 3, 3.0), (m(0), "view", 1, 1.0)]

    # Run 2, same checkpoint: a late event for minute 0 (dropped, behind the
    # watermark), more of minute 1, and an event at 3:00 that closes minute 1.
    _write_batch(inbox, "c.json", [event(5, "click", 2), event(6, "click", 100, 5.0)], 5)
    _write_batch(inbox, "d.json", [event(7, "view", 180)], 7)
    _run_available_now(spark, settings, str(inbox))
    assert output() == [(m(0), "click", 3, 3.0), (m(0), "view", 1, 1.0),
                        (m(1), "click", 2, 15.0)]
