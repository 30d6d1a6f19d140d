"""The Spark side of the pipeline: session, streaming query, backfill.

- ``build_session``: a SparkSession whose Kafka connector comes from local
  jar files (``spark.jars``) or Maven coordinates (``spark.jars.packages``),
  as ``settings.connector`` settles them.
- ``start_streaming``: makes sure the input topics exist (``topics``: as a
  Kafka consumer's first Metadata request would, so the broker's
  ``auto.create.topics.enable`` decides; Spark's source looks its topics up
  with Admin.describeTopics, which fails on a missing topic), then reads them
  with Spark's Kafka source, runs
  ``transform.pipeline`` and starts one query per sink: the Kafka sink (topic
  ``output_topic``) and the Parquet sink (``parquet_dir``), both in append
  mode (a window is written once, when the watermark closes it), and the
  dead letters (``transform.to_dead_letter_records``: every record that fails
  to parse, to ``dead_letter_topic`` with Spark's Kafka sink, group header the
  Spark application's name), each with its
  own checkpoint under ``checkpoint_dir`` so that a restarted query resumes at
  the offsets its last committed micro-batch ended at. The Parquet sink is
  exactly-once; the Kafka sinks at-least-once (a batch replayed after a crash
  may be written twice), as with Apache Kafka.
- ``run_backfill``: a batch read (``spark.read.format("kafka")``) of a time
  range, bounded by offsets per partition: from the first offset whose
  timestamp is at or after ``start_ms`` (ListOffsets by time) to the log end
  (ListOffsets latest), then filtered by event time. The end cannot be found
  by time: record timestamps are not ordered within a partition (producers
  set them, and a transaction marker carries the coordinator's clock), so the
  first offset at or after ``end_ms`` may come before records of the range.
  The start can, as long as an event's record timestamp is not before its
  event time (it is the event time, or when it was sent). Aggregated without
  a watermark and written to Parquet (overwrite) and optionally to the topic.
  The records of the read that fail to parse and whose record timestamp is in
  the range (they have no event time) go to the dead-letter topic, unless
  ``dead_letters=False``.

``raw`` arguments let tests and callers substitute any DataFrame with the
Kafka source's columns for the Kafka read.
"""
from __future__ import annotations

from typing import Iterable, NamedTuple

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from kafkapy.pipeline import topics, transform
from kafkapy.pipeline.settings import (PipelineSettings, SettingsError, connector,
                                       dead_letter_sink_options, sink_options, source_options,
                                       spark_conf)

SINKS = ("kafka", "parquet", "dead-letters")


class Backfilled(NamedTuple):
    aggregates: int     # aggregate rows written
    dead_letters: int   # records that failed to parse, written to the dead-letter topic


def build_session(s: PipelineSettings, app_name: str = "kafkapy-pipeline") -> SparkSession:
    s = connector(s)
    builder = SparkSession.builder.appName(app_name).master(s.master)
    for key, value in spark_conf(s).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def read_kafka_stream(spark: SparkSession, s: PipelineSettings) -> DataFrame:
    reader = spark.readStream.format("kafka")
    for key, value in source_options(s, streaming=True).items():
        reader = reader.option(key, value)
    return reader.load()


def read_kafka_batch(spark: SparkSession, s: PipelineSettings) -> DataFrame:
    reader = spark.read.format("kafka")
    for key, value in source_options(s, streaming=False).items():
        reader = reader.option(key, value)
    return reader.load()


def _with_options(writer, options: dict[str, str]):
    for key, value in options.items():
        writer = writer.option(key, value)
    return writer


def start_streaming(spark: SparkSession, s: PipelineSettings, *,
                    sinks: Iterable[str] = SINKS, raw: DataFrame | None = None,
                    available_now: bool = False,
                    query_prefix: str = "kafkapy-pipeline") -> list[StreamingQuery]:
    """Start the streaming queries (one per sink); the caller awaits or stops them."""
    sinks = tuple(sinks)
    unknown = [x for x in sinks if x not in SINKS]
    if unknown or not sinks:
        raise SettingsError(f"sinks must be among {SINKS}, got {sinks}")
    if raw is None:
        topics.ensure_input_topics(s)
        raw = read_kafka_stream(spark, s)
    aggregates = transform.pipeline(raw, s.window, s.watermark, s.slide)
    queries = []

    def trigger(writer):
        if available_now:
            return writer.trigger(availableNow=True)
        return writer.trigger(processingTime=f"{s.trigger_seconds} seconds")

    if "kafka" in sinks:
        writer = (transform.to_kafka_records(aggregates).writeStream.format("kafka")
                  .outputMode("append").queryName(f"{query_prefix}-kafka")
                  .option("checkpointLocation", s.kafka_checkpoint))
        queries.append(trigger(_with_options(writer, sink_options(s))).start())
    if "parquet" in sinks:
        writer = (transform.to_parquet_rows(aggregates).writeStream.format("parquet")
                  .outputMode("append").queryName(f"{query_prefix}-parquet")
                  .option("checkpointLocation", s.parquet_checkpoint)
                  .option("path", s.parquet_dir))
        queries.append(trigger(writer).start())
    if "dead-letters" in sinks:
        rows = transform.to_dead_letter_records(transform.rejected_events(raw),
                                                spark.sparkContext.appName)
        writer = (rows.writeStream.format("kafka").outputMode("append")
                  .queryName(f"{query_prefix}-dead-letters")
                  .option("checkpointLocation", s.dead_letter_checkpoint))
        queries.append(trigger(_with_options(writer, dead_letter_sink_options(s))).start())
    return queries


def backfill_aggregates(spark: SparkSession, s: PipelineSettings, start_ms: int | None,
                        end_ms: int | None, raw: DataFrame | None = None) -> DataFrame:
    """The aggregates of events with ``start_ms <= event_time < end_ms``.

    The Kafka read starts per partition at the first offset whose timestamp is
    at or after ``start_ms`` (``startingTimestamp``) and ends at the offsets
    ``s.ending_offsets`` names (by default the log end), never at a timestamp:
    see the module docstring. The event-time filter then keeps exactly the range.
    """
    if raw is None:
        raw = _backfill_read(spark, s, start_ms)
    return transform.pipeline(raw, s.window, None, s.slide, start_ms, end_ms)


def _backfill_read(spark: SparkSession, s: PipelineSettings, start_ms: int | None) -> DataFrame:
    return read_kafka_batch(spark, s.with_(starting_timestamp=start_ms, ending_timestamp=None))


def _write_dead_letters(spark: SparkSession, s: PipelineSettings, raw: DataFrame,
                        start_ms: int | None, end_ms: int | None) -> int:
    """The read's rejected records with a record timestamp in the range, to the
    dead-letter topic; how many."""
    rejected = transform.in_time_range(transform.rejected_events(raw), start_ms, end_ms,
                                       column="kafka_timestamp")
    rows = transform.to_dead_letter_records(rejected, spark.sparkContext.appName).cache()
    try:
        count = rows.count()
        if count:
            _with_options(rows.write.format("kafka"), dead_letter_sink_options(s)).save()
        return count
    finally:
        rows.unpersist()


def run_backfill(spark: SparkSession, s: PipelineSettings, start_ms: int | None,
                 end_ms: int | None, out_path: str, *, to_topic: bool = False,
                 dead_letters: bool = True, raw: DataFrame | None = None) -> Backfilled:
    """Write the backfilled aggregates to Parquet at ``out_path`` (and the topic), and the
    range's records that fail to parse to the dead-letter topic; what was written."""
    if raw is None:
        raw = _backfill_read(spark, s, start_ms)
    aggregates = backfill_aggregates(spark, s, start_ms, end_ms, raw).cache()
    try:
        transform.to_parquet_rows(aggregates).write.mode("overwrite").parquet(out_path)
        if to_topic:
            _with_options(transform.to_kafka_records(aggregates).write.format("kafka"),
                          sink_options(s)).save()
        written = aggregates.count()
    finally:
        aggregates.unpersist()
    rejected = _write_dead_letters(spark, s, raw, start_ms, end_ms) if dead_letters else 0
    return Backfilled(written, rejected)
