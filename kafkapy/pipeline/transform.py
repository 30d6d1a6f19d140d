"""The pipeline's transformation logic: pure functions from DataFrame to DataFrame.

Input rows have the columns of Spark's Kafka source: ``key``/``value``
(binary), ``topic``, ``partition``, ``offset``, ``timestamp``,
``timestampType`` and, with ``includeHeaders``, ``headers``
(array<struct<key: string, value: binary>>).

An event is a JSON object in the record value::

    {"event_id": "e-1", "user": "alice", "kind": "click", "amount": 1.5,
     "event_time": "2026-01-01T12:00:03Z"}

``event_id`` and ``kind`` are required; ``event_time`` defaults to the Kafka
record timestamp; ``amount`` to 0 (a present ``amount`` must be a number).
Anything else is rejected (``rejected_events``), never silently counted, with
the first reason that applies, in this order: ``no value`` (a tombstone),
``invalid JSON``, ``not a JSON object``, ``missing event_id``/``missing
kind``/``missing event_id and kind``, ``amount is not a number``, ``invalid
event_time``.

Dead letters (``to_dead_letter_records``): each rejected record as a row for Spark's
Kafka sink, ``key`` and ``value`` the original bytes and these headers, every
value a UTF-8 string (the names a kafkapy share group's dead letters carry)::

    __dlq.errors.topic           the source topic
    __dlq.errors.partition       its partition, decimal
    __dlq.errors.offset          its offset, decimal
    __dlq.errors.group           who rejected it: the Spark application's name
    __dlq.errors.delivery.count  "1": a parse failure is final, never retried
    __dlq.errors.reason          "parse_failed: <reason>" (the reasons above)

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

# from_json writes the text of a value it could not read whole here; a JSON
# object lands here only when a field has the wrong type (amount: all other
# fields are strings, which take any JSON value).
_CORRUPT = "_corrupt_record"
_PARSE_SCHEMA = StructType(EVENT_SCHEMA.fields + [StructField(_CORRUPT, StringType())])

KAFKA_COLUMNS = ("topic", "partition", "offset")
AGGREGATE_COLUMNS = ("window_start", "window_end", "kind", "events", "amount", "max_amount",
                     "first_event_time", "last_event_time")
SOURCE_HEADER = "source"
DEAD_LETTER_HEADERS = ("__dlq.errors.topic", "__dlq.errors.partition", "__dlq.errors.offset",
                       "__dlq.errors.group", "__dlq.errors.delivery.count",
                       "__dlq.errors.reason")


def header_value(headers: Column, name: str) -> Column:
    """The first value of header ``name`` as a string (null when absent)."""
    matching = F.filter(headers, lambda h: h["key"] == F.lit(name))
    return F.try_element_at(matching, F.lit(1))["value"].cast("string")


def _reject_reason(value: Column, text: Column, e: Column) -> Column:
    """Why a record is not a valid event (null when it is one): the first that applies."""
    unread = e.isNull() | e[_CORRUPT].isNotNull()   # from_json could not read it whole
    no_id, no_kind = e["event_id"].isNull(), e["kind"].isNull()
    return (F.when(value.isNull(), F.lit("no value"))
            .when(unread & F.try_parse_json(text).isNull(), F.lit("invalid JSON"))
            .when(unread & F.json_object_keys(text).isNull(), F.lit("not a JSON object"))
            .when(no_id & no_kind, F.lit("missing event_id and kind"))
            .when(no_id, F.lit("missing event_id"))
            .when(no_kind, F.lit("missing kind"))
            # An object from_json could not read whole: a field of the wrong type, and
            # amount is the one field that is not a string.
            .when(unread, F.lit("amount is not a number"))
            .when(e["event_time"].isNotNull()
                  & F.try_to_timestamp(e["event_time"]).isNull(), F.lit("invalid event_time")))


def _parsed(raw: DataFrame) -> DataFrame:
    has_headers = "headers" in raw.columns
    text = F.col("value").cast("string")
    event = F.from_json(text, _PARSE_SCHEMA, {"columnNameOfCorruptRecord": _CORRUPT})
    return raw.select(
        "key", "value", *[F.col(c) for c in KAFKA_COLUMNS],
        F.col("timestamp").alias("kafka_timestamp"),
        text.alias("raw_value"),
        event.alias("e"),
        (header_value(F.col("headers"), SOURCE_HEADER) if has_headers
         else F.lit(None).cast("string")).alias("source"),
    ).select(
        "key", "value", *[F.col(c) for c in KAFKA_COLUMNS], "kafka_timestamp", "raw_value",
        "source",
        F.col("e.event_id").alias("event_id"),
        F.col("e.user").alias("user"),
        F.col("e.kind").alias("kind"),
        F.coalesce(F.col("e.amount"), F.lit(0.0)).alias("amount"),
        F.col("e.event_time").alias("event_time_text"),
        F.coalesce(F.try_to_timestamp(F.col("e.event_time")),
                   F.col("kafka_timestamp")).alias("event_time"),
        _reject_reason(F.col("value"), F.col("raw_value"), F.col("e")).alias("reason"),
    )


def parse_events(raw: DataFrame) -> DataFrame:
    """Valid events: topic, partition, offset, kafka_timestamp, source, event_id, user,
    kind, amount, event_time (timestamp)."""
    return (_parsed(raw).where(F.col("reason").isNull())
            .drop("key", "value", "reason", "raw_value", "event_time_text"))


def rejected_events(raw: DataFrame) -> DataFrame:
    """Records that are not valid events: where they came from, their key and value
    (bytes), their value as text and why they were rejected."""
    return (_parsed(raw).where(F.col("reason").isNotNull())
            .select("key", "value", *KAFKA_COLUMNS, "kafka_timestamp", "raw_value", "reason"))


def _header(name: str, value: Column) -> Column:
    return F.struct(F.lit(name).alias("key"), value.cast("string").cast("binary").alias("value"))


def to_dead_letter_records(rejected: DataFrame, group: str) -> DataFrame:
    """Rejected records (``rejected_events``) as rows for Spark's Kafka sink: the
    original ``key`` and ``value`` and the ``__dlq.errors.*`` headers (module
    docstring); ``group`` names the job that rejected them."""
    values = (F.col("topic"), F.col("partition"), F.col("offset"), F.lit(group), F.lit("1"),
              F.concat(F.lit("parse_failed: "), F.col("reason")))
    headers = F.array(*[_header(name, v) for name, v in zip(DEAD_LETTER_HEADERS, values)])
    return rejected.select("key", "value", headers.alias("headers"))


def in_time_range(events: DataFrame, start_ms: int | None, end_ms: int | None,
                  column: str = "event_time") -> DataFrame:
    """Rows with ``start_ms <= column < end_ms`` (either bound optional)."""
    cond = F.lit(True)
    if start_ms is not None:
        cond = cond & (F.col(column) >= F.timestamp_millis(F.lit(int(start_ms))))
    if end_ms is not None:
        cond = cond & (F.col(column) < F.timestamp_millis(F.lit(int(end_ms))))
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
