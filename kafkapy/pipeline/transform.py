"""The pipeline's transformation logic: pure functions from DataFrame to DataFrame.

Input rows have the columns of Spark's Kafka source: ``key``/``value``
(binary), ``topic``, ``partition``, ``offset``, ``timestamp``,
``timestampType`` and, with ``includeHeaders``, ``headers``
(array<struct<key: string, value: binary>>).

An event is a JSON object in the record value::

    {"event_id": "e-1", "user": "alice", "kind": "click", "amount": 1.5,
     "event_time": "2026-01-01T12:00:03Z"}

``event_id`` and ``kind`` are required; ``event_time`` defaults to the Kafka
record timestamp; ``amount`` to 0. Anything else is rejected
(``rejected_events``), never silently counted.

The functions work unchanged on streaming and batch DataFrames (a watermark
on a batch DataFrame is a no-op), so the unit tests run them on local
DataFrames and the jobs on the Kafka source. Spark 4 runs with ANSI SQL on,
so parsing uses the ``try_`` functions that yield null instead of failing.
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, StringType, StructField, StructType

EVENT_SCHEMA = StructType([
    StructField("event_id", StringType()),
    StructField("user", StringType()),
    StructField("kind", StringType()),
    StructField("amount", DoubleType()),
    StructField("event_time", StringType()),
])

KAFKA_COLUMNS = ("topic", "partition", "offset")
AGGREGATE_COLUMNS = ("window_start", "window_end", "kind", "events", "amount", "max_amount",
                     "first_event_time", "last_event_time")
SOURCE_HEADER = "source"


def header_value(headers: Column, name: str) -> Column:
    """The first value of header ``name`` as a string (null when absent)."""
    matching = F.filter(headers, lambda h: h["key"] == F.lit(name))
    return F.try_element_at(matching, F.lit(1))["value"].cast("string")


def _parsed(raw: DataFrame) -> DataFrame:
    has_headers = "headers" in raw.columns
    text = F.col("value").cast("string")
    event = F.from_json(text, EVENT_SCHEMA)
    return raw.select(
        *[F.col(c) for c in KAFKA_COLUMNS],
        F.col("timestamp").alias("kafka_timestamp"),
        text.alias("raw_value"),
        event.alias("e"),
        (header_value(F.col("headers"), SOURCE_HEADER) if has_headers
         else F.lit(None).cast("string")).alias("source"),
    ).select(
        *[F.col(c) for c in KAFKA_COLUMNS], "kafka_timestamp", "raw_value", "source",
        F.col("e.event_id").alias("event_id"),
        F.col("e.user").alias("user"),
        F.col("e.kind").alias("kind"),
        F.coalesce(F.col("e.amount"), F.lit(0.0)).alias("amount"),
        F.col("e.event_time").alias("event_time_text"),
        F.coalesce(F.try_to_timestamp(F.col("e.event_time")),
                   F.col("kafka_timestamp")).alias("event_time"),
        (F.col("e").isNotNull() & F.col("e.event_id").isNotNull() & F.col("e.kind").isNotNull()
         & (F.col("e.event_time").isNull() | F.try_to_timestamp(F.col("e.event_time")).isNotNull())
         ).alias("_valid"),
    )


def parse_events(raw: DataFrame) -> DataFrame:
    """Valid events: topic, partition, offset, kafka_timestamp, source, event_id, user,
    kind, amount, event_time (timestamp)."""
    return (_parsed(raw).where(F.col("_valid"))
            .drop("_valid", "raw_value", "event_time_text"))


def rejected_events(raw: DataFrame) -> DataFrame:
    """Records that are not valid events, with where they came from and their text."""
    return (_parsed(raw).where(~F.col("_valid"))
            .select(*KAFKA_COLUMNS, "kafka_timestamp", "raw_value"))


def in_time_range(events: DataFrame, start_ms: int | None, end_ms: int | None) -> DataFrame:
    """Events with ``start_ms <= event_time < end_ms`` (either bound optional)."""
    cond = F.lit(True)
    if start_ms is not None:
        cond = cond & (F.col("event_time") >= F.timestamp_millis(F.lit(int(start_ms))))
    if end_ms is not None:
        cond = cond & (F.col("event_time") < F.timestamp_millis(F.lit(int(end_ms))))
    return events.where(cond)


def windowed_aggregates(events: DataFrame, window: str = "1 minute",
                        watermark: str | None = "30 seconds",
                        slide: str | None = None) -> DataFrame:
    """Per event-time window and kind: event count, amount sum and max, first/last time.

    With a watermark, a streaming query in append mode emits each window once,
    after the watermark (max event time seen minus ``watermark``) passed its end;
    events older than the watermark are dropped as late.
    """
    if watermark:
        events = events.withWatermark("event_time", watermark)
    win = F.window("event_time", window, slide) if slide else F.window("event_time", window)
    return (events.groupBy(win.alias("w"), F.col("kind"))
            .agg(F.count(F.lit(1)).alias("events"),
                 F.sum("amount").alias("amount"),
                 F.max("amount").alias("max_amount"),
                 F.min("event_time").alias("first_event_time"),
                 F.max("event_time").alias("last_event_time"))
            .select(F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"),
                    "kind", "events", "amount", "max_amount", "first_event_time",
                    "last_event_time"))


def _iso(col: Column) -> Column:
    return F.date_format(col, "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'")


def to_kafka_records(aggregates: DataFrame) -> DataFrame:
    """``key``/``value`` strings and ``headers`` for Spark's Kafka sink.

    key ``<kind>@<window start>``; value a JSON object with the aggregate's
    columns (times as ISO-8601 UTC strings); header ``producer: kafkapy-pipeline``.
    """
    value = F.to_json(F.struct(
        _iso(F.col("window_start")).alias("window_start"),
        _iso(F.col("window_end")).alias("window_end"),
        F.col("kind"), F.col("events"), F.col("amount"), F.col("max_amount"),
        _iso(F.col("first_event_time")).alias("first_event_time"),
        _iso(F.col("last_event_time")).alias("last_event_time"),
    ))
    headers = F.array(F.struct(F.lit("producer").alias("key"),
                               F.lit("kafkapy-pipeline").cast("binary").alias("value")))
    return aggregates.select(
        F.concat(F.col("kind"), F.lit("@"), _iso(F.col("window_start"))).alias("key"),
        value.alias("value"),
        headers.alias("headers"))


def to_parquet_rows(aggregates: DataFrame) -> DataFrame:
    """The aggregate rows as stored in Parquet (plus the window's date for pruning)."""
    return aggregates.select(*AGGREGATE_COLUMNS,
                             F.to_date(F.col("window_start")).alias("window_date"))


def pipeline(raw: DataFrame, window: str = "1 minute", watermark: str | None = "30 seconds",
             slide: str | None = None, start_ms: int | None = None,
             end_ms: int | None = None) -> DataFrame:
    """Raw Kafka rows -> aggregates: parse, optional time range, windowed aggregation."""
    events = parse_events(raw)
    if start_ms is not None or end_ms is not None:
        events = in_time_range(events, start_ms, end_ms)
    return windowed_aggregates(events, window, watermark, slide)
