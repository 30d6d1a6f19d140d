"""The PySpark data pipeline that runs on kafkapy.

Spark's built-in Kafka source (``format("kafka")``, connector
spark-sql-kafka-0-10 for Spark 4.0) reads JSON events from a kafkapy topic;
the pipeline parses them, counts and sums them per event-time window and kind
with a watermark, and writes the closed windows to a kafkapy topic (Spark's
Kafka sink) and to Parquet, with checkpoints so a restarted query resumes where
it stopped. A batch job (``spark.read.format("kafka")``) backfills a time range.

Modules:
- ``settings``: flags and environment -> ``PipelineSettings``; the Kafka source
  and sink options as plain dicts (no Spark needed).
- ``transform``: the transformation logic as pure functions on DataFrames.
- ``jobs``: the Spark session (connector from local jars or Maven
  coordinates), the streaming query and the backfill.
- ``topics``: the streaming job's input topics exist before Spark looks them
  up (auto-created as a consumer's metadata request would).
- ``cli``: the ``kafkapy-pipeline`` console script.

pyspark is an optional dependency (``pip install -e '.[spark]'``); only
``jobs``/``transform`` import it, and only when used.
"""
from __future__ import annotations

from kafkapy.pipeline.settings import PipelineSettings

__all__ = ["PipelineSettings"]
