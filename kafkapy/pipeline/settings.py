"""Pipeline settings from flags and environment, and the Kafka source/sink options they imply.

Nothing here imports pyspark: the option dicts are plain data, so they are
unit-tested without Spark and a misconfiguration is reported before a JVM
starts.

Environment (a flag of the same meaning wins):

| variable | default | meaning |
|---|---|---|
| ``KAFKAPY_BOOTSTRAP`` | ``127.0.0.1:9092`` | bootstrap servers (``kafka.bootstrap.servers``) |
| ``KAFKAPY_PIPELINE_INPUT`` | ``events`` | input topics, comma-separated (``subscribe``) |
| ``KAFKAPY_PIPELINE_OUTPUT`` | ``event-aggregates`` | topic the aggregates are written to |
| ``KAFKAPY_PIPELINE_DEAD_LETTERS`` | ``dlq.events`` | topic of the events that fail to parse |
| ``KAFKAPY_PIPELINE_CHECKPOINT`` | ``data/pipeline/checkpoint`` | checkpoint root (one sub-dir per sink) |
| ``KAFKAPY_PIPELINE_PARQUET`` | ``data/pipeline/aggregates`` | Parquet output of the streaming job |
| ``KAFKAPY_SPARK_JARS`` | see below | comma-separated local jars or directories of jars -> ``spark.jars`` |
| ``KAFKAPY_SPARK_PACKAGES`` | | Maven coordinates -> ``spark.jars.packages`` |
| ``KAFKAPY_SPARK_MASTER`` | ``local[2]`` | Spark master URL |

Source options follow Spark's Kafka source: exactly one of ``subscribe``,
``subscribePattern`` or ``assign`` (JSON ``{"topic":[0,1]}``); a start given
as a timestamp (``startingTimestamp``, ms) takes precedence over
``startingOffsets`` in Spark, so only one of them is emitted; ``endingOffsets``
and ``endingTimestamp`` exist for batch reads only, ``maxOffsetsPerTrigger``
for streaming only.

The dead-letter topic's default, ``dlq.events``, has the prefix the broker
gives dead-letter topics by default (``errors.deadletterqueue.topic.name.prefix``,
``dlq.``), so the pipeline's dead letters sit beside a share group's.

The connector (``connector``): ``--jars``/``KAFKAPY_SPARK_JARS`` or
``--packages``/``KAFKAPY_SPARK_PACKAGES`` when given; otherwise, in a source
checkout, the jars in ``<checkout>/../shared/spark-jars``; with none of them
the pipeline stops with one line naming ``KAFKAPY_SPARK_JARS`` before a JVM
starts (Spark would otherwise fail on ``format("kafka")`` with a traceback).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping

SPARK_KAFKA_ARTIFACT = "org.apache.spark:spark-sql-kafka-0-10_2.13"
ISOLATION_LEVELS = ("read_committed", "read_uncommitted")
# <checkout>/../shared/spark-jars: where a source checkout finds the connector
# jars when nothing names them (the checkout is the folder of pyproject.toml).
_CHECKOUT = Path(__file__).resolve().parents[2]
SHARED_SPARK_JARS = _CHECKOUT.parent / "shared" / "spark-jars"
NO_CONNECTOR = ("Spark's Kafka connector is not available: set KAFKAPY_SPARK_JARS to the jars "
                "(spark-sql-kafka-0-10_2.13 and spark-token-provider-kafka-0-10_2.13 4.0.x, "
                "commons-pool2, kafka-clients 3.9.x) or a directory holding them, or use "
                "--packages auto where Maven Central is reachable")


class SettingsError(ValueError):
    """A setting is missing, malformed or contradicts another one."""


@dataclass(frozen=True)
class PipelineSettings:
    bootstrap: str = "127.0.0.1:9092"
    subscribe: str | None = "events"
    subscribe_pattern: str | None = None
    assign: str | None = None
    output_topic: str = "event-aggregates"
    dead_letter_topic: str = "dlq.events"
    checkpoint_dir: str = "data/pipeline/checkpoint"
    parquet_dir: str = "data/pipeline/aggregates"
    starting_offsets: str = "earliest"
    starting_timestamp: int | None = None
    ending_offsets: str = "latest"
    ending_timestamp: int | None = None
    max_offsets_per_trigger: int | None = None
    include_headers: bool = True
    isolation_level: str = "read_committed"
    fail_on_data_loss: bool = True
    window: str = "1 minute"
    slide: str | None = None
    watermark: str = "30 seconds"
    trigger_seconds: float = 5.0
    jars: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()
    master: str = "local[2]"
    shuffle_partitions: int = 2
    kafka_options: Mapping[str, str] = field(default_factory=dict)

    def with_(self, **changes) -> "PipelineSettings":
        return replace(self, **changes)

    def validate(self) -> "PipelineSettings":
        chosen = [n for n, v in (("subscribe", self.subscribe),
                                 ("subscribe_pattern", self.subscribe_pattern),
                                 ("assign", self.assign)) if v]
        if len(chosen) != 1:
            raise SettingsError("exactly one of subscribe, subscribe_pattern or assign must be "
                                f"set (got {', '.join(chosen) or 'none'})")
        if self.assign:
            assign_json(self.assign)  # malformed partitions are refused before a JVM starts
        if self.isolation_level not in ISOLATION_LEVELS:
            raise SettingsError(f"isolation level must be one of {ISOLATION_LEVELS}, "
                                f"not {self.isolation_level!r}")
        if self.max_offsets_per_trigger is not None and self.max_offsets_per_trigger <= 0:
            raise SettingsError("max_offsets_per_trigger must be positive")
        if not self.bootstrap:
            raise SettingsError("bootstrap servers are empty")
        if not self.output_topic:
            raise SettingsError("output topic is empty")
        if not self.dead_letter_topic:
            raise SettingsError("dead-letter topic is empty")
        if self.shuffle_partitions <= 0:
            raise SettingsError("shuffle_partitions must be positive")
        return self

    @property
    def kafka_checkpoint(self) -> str:
        return os.path.join(self.checkpoint_dir, "kafka-sink")

    @property
    def parquet_checkpoint(self) -> str:
        return os.path.join(self.checkpoint_dir, "parquet-sink")

    @property
    def dead_letter_checkpoint(self) -> str:
        return os.path.join(self.checkpoint_dir, "dead-letters")


def assign_json(spec: str) -> str:
    """Spark's ``assign`` JSON from ``topic:0,1;other:2`` (JSON passes through, normalised)."""
    spec = spec.strip()
    if spec.startswith("{"):
        try:
            parsed = json.loads(spec)
        except json.JSONDecodeError as err:
            raise SettingsError(f"assign is not valid JSON: {err}") from None
    else:
        parsed = {}
        for part in filter(None, (p.strip() for p in spec.split(";"))):
            topic, sep, parts = part.partition(":")
            if not sep or not topic.strip():
                raise SettingsError(f"assign entry {part!r} is not topic:p[,p...]")
            try:
                indexes = [int(p) for p in parts.split(",") if p.strip()]
            except ValueError:
                raise SettingsError(f"assign entry {part!r} has a non-integer partition") from None
            parsed.setdefault(topic.strip(), []).extend(indexes)
    if not isinstance(parsed, dict) or not parsed:
        raise SettingsError("assign names no partitions")
    out = {}
    for topic, parts in parsed.items():
        if not isinstance(parts, list) or not parts or not all(
                isinstance(p, int) and p >= 0 for p in parts):
            raise SettingsError(f"assign: partitions of {topic!r} must be a non-empty list of "
                                "non-negative integers")
        out[topic] = sorted(set(parts))
    return json.dumps(out, separators=(",", ":"), sort_keys=True)


def source_options(s: PipelineSettings, streaming: bool) -> dict[str, str]:
    """Options for ``spark.readStream/read.format("kafka")``."""
    s.validate()
    opts: dict[str, str] = {"kafka.bootstrap.servers": s.bootstrap}
    if s.subscribe:
        opts["subscribe"] = ",".join(t.strip() for t in s.subscribe.split(",") if t.strip())
    elif s.subscribe_pattern:
        opts["subscribePattern"] = s.subscribe_pattern
    else:
        opts["assign"] = assign_json(s.assign or "")
    if s.starting_timestamp is not None:
        opts["startingTimestamp"] = str(int(s.starting_timestamp))
        # No record at or after the timestamp: start at the end (Spark's default
        # strategy, "error", fails the query instead).
        opts["startingOffsetsByTimestampStrategy"] = "latest"
    else:
        if not streaming and s.starting_offsets == "latest":
            raise SettingsError("a batch read cannot start at 'latest'")
        opts["startingOffsets"] = s.starting_offsets
    if streaming:
        if s.max_offsets_per_trigger is not None:
            opts["maxOffsetsPerTrigger"] = str(s.max_offsets_per_trigger)
    else:
        if s.ending_timestamp is not None:
            opts["endingTimestamp"] = str(int(s.ending_timestamp))
        else:
            if s.ending_offsets == "earliest":
                raise SettingsError("a batch read cannot end at 'earliest'")
            opts["endingOffsets"] = s.ending_offsets
    opts["includeHeaders"] = "true" if s.include_headers else "false"
    opts["kafka.isolation.level"] = s.isolation_level
    opts["failOnDataLoss"] = "true" if s.fail_on_data_loss else "false"
    for key, value in s.kafka_options.items():
        opts[key if key.startswith("kafka.") else f"kafka.{key}"] = str(value)
    return opts


def sink_options(s: PipelineSettings) -> dict[str, str]:
    """Options for Spark's Kafka sink (``format("kafka")`` on a writer)."""
    s.validate()
    return {"kafka.bootstrap.servers": s.bootstrap, "topic": s.output_topic}


def dead_letter_sink_options(s: PipelineSettings) -> dict[str, str]:
    """Options for the Kafka sink of the events that fail to parse."""
    s.validate()
    return {"kafka.bootstrap.servers": s.bootstrap, "topic": s.dead_letter_topic}


def spark_conf(s: PipelineSettings) -> dict[str, str]:
    """Spark session settings: connector jars/packages, small local defaults."""
    conf = {
        "spark.sql.shuffle.partitions": str(s.shuffle_partitions),
        "spark.ui.enabled": "false",
        "spark.sql.session.timeZone": "UTC",
        # The Kafka sink's producer and the source's consumers are closed when
        # idle; keep small local runs from holding sockets for minutes.
        "spark.kafka.consumer.cache.timeout": "30s",
    }
    if s.jars:
        conf["spark.jars"] = ",".join(s.jars)
    if s.packages:
        conf["spark.jars.packages"] = ",".join(s.packages)
    return conf


def default_packages(pyspark_version: str) -> tuple[str, ...]:
    """Maven coordinates of the connector matching the installed pyspark."""
    return (f"{SPARK_KAFKA_ARTIFACT}:{pyspark_version}",)


def _split(value: str | None) -> tuple[str, ...]:
    return tuple(p.strip() for p in (value or "").split(",") if p.strip())


def from_env(env: Mapping[str, str] | None = None,
             base: PipelineSettings | None = None) -> PipelineSettings:
    """Settings from ``KAFKAPY_*`` environment variables over ``base`` (defaults)."""
    env = os.environ if env is None else env
    s = base or PipelineSettings()
    changes: dict = {}
    if env.get("KAFKAPY_BOOTSTRAP"):
        changes["bootstrap"] = env["KAFKAPY_BOOTSTRAP"]
    if env.get("KAFKAPY_PIPELINE_INPUT"):
        changes["subscribe"] = env["KAFKAPY_PIPELINE_INPUT"]
    if env.get("KAFKAPY_PIPELINE_OUTPUT"):
        changes["output_topic"] = env["KAFKAPY_PIPELINE_OUTPUT"]
    if env.get("KAFKAPY_PIPELINE_DEAD_LETTERS"):
        changes["dead_letter_topic"] = env["KAFKAPY_PIPELINE_DEAD_LETTERS"]
    if env.get("KAFKAPY_PIPELINE_CHECKPOINT"):
        changes["checkpoint_dir"] = env["KAFKAPY_PIPELINE_CHECKPOINT"]
    if env.get("KAFKAPY_PIPELINE_PARQUET"):
        changes["parquet_dir"] = env["KAFKAPY_PIPELINE_PARQUET"]
    if env.get("KAFKAPY_SPARK_JARS", "").strip():
        changes["jars"] = expand_jars(_split(env["KAFKAPY_SPARK_JARS"]))
    if env.get("KAFKAPY_SPARK_PACKAGES"):
        changes["packages"] = _split(env["KAFKAPY_SPARK_PACKAGES"])
    if env.get("KAFKAPY_SPARK_MASTER"):
        changes["master"] = env["KAFKAPY_SPARK_MASTER"]
    return replace(s, **changes)


def missing_jars(s: PipelineSettings) -> list[str]:
    """The ``spark.jars`` entries that are not readable files."""
    return [j for j in s.jars if not os.path.isfile(j)]


def expand_jars(entries: tuple[str, ...]) -> tuple[str, ...]:
    """Jar paths, a directory standing for the ``*.jar`` files in it (sorted)."""
    out: list[str] = []
    for entry in entries:
        if os.path.isdir(entry):
            out.extend(sorted(str(p) for p in Path(entry).glob("*.jar")))
        else:
            out.append(entry)
    return tuple(out)


def shared_jars() -> tuple[str, ...]:
    """The jars in ``<checkout>/../shared/spark-jars``; empty outside a source checkout."""
    if not (_CHECKOUT / "pyproject.toml").is_file() or not SHARED_SPARK_JARS.is_dir():
        return ()
    return expand_jars((str(SHARED_SPARK_JARS),))


def connector(s: PipelineSettings) -> PipelineSettings:
    """``s`` with the connector settled: its own jars/packages, else the shared jars.

    Raises ``SettingsError`` (one line naming ``KAFKAPY_SPARK_JARS``) when there
    is no connector at all, or a named jar is not a file.
    """
    if not s.jars and not s.packages:
        s = s.with_(jars=shared_jars())
        if not s.jars:
            raise SettingsError(NO_CONNECTOR)
    missing = missing_jars(s)
    if missing:
        raise SettingsError(f"connector jars not found: {', '.join(missing)} "
                            "(from --jars or KAFKAPY_SPARK_JARS)")
    return s
