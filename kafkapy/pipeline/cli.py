"""``kafkapy-pipeline``: run the PySpark pipeline against a kafkapy broker.

Sub-commands:
- ``stream``   the structured-streaming job (Kafka source -> windowed
  aggregates -> Kafka sink + Parquet, and the events that fail to parse -> the
  dead-letter topic, checkpointed); runs until stopped, or with
  ``--available-now`` processes what is in the topics and exits.
- ``backfill`` the batch job: aggregates of a time range, to Parquet
  (``--out``) and optionally to the output topic; the range's events that fail
  to parse to the dead-letter topic (unless ``--no-dead-letters``).
- ``send``     produce sample JSON events to the input topic (kafka-python).
- ``show``     print the aggregates from the Parquet output, or from the
  output topic with ``--from-topic``.

Every flag has an environment default (see ``kafkapy.pipeline.settings``).
The connector comes from ``--jars``/``KAFKAPY_SPARK_JARS`` (local files or
directories of jars) or ``--packages``/``KAFKAPY_SPARK_PACKAGES`` (Maven
coordinates; ``--packages auto`` picks spark-sql-kafka-0-10 matching the
installed pyspark), else from ``../shared/spark-jars`` beside a source
checkout; with none, ``stream`` and ``backfill`` stop with one line naming
``KAFKAPY_SPARK_JARS`` before starting a JVM. ``stream`` first makes sure its
input topics exist (``kafkapy.pipeline.topics``), so it can start before any
event was sent.
``stream``, ``backfill`` and ``show`` (from Parquet) need pyspark, which ``make run``
does not install: without it they stop with one line naming the ``spark`` extra, before
anything else (``_require_pyspark``); ``send`` and ``show --from-topic`` need only
kafka-python.
Exit status: 0 done, 2 bad settings or no pyspark (or an input topic the broker will not
create), 1 a query failed or the broker could not be reached (one line).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import time
from datetime import datetime, timezone

from kafka import KafkaConsumer, KafkaProducer
from kafka.errors import KafkaError

from kafkapy.pipeline import topics
from kafkapy.pipeline.settings import (PipelineSettings, SettingsError, connector,
                                       default_packages, expand_jars, from_env)


def _time_ms(text: str | None) -> int | None:
    """Epoch milliseconds from ``1767225600000`` or ISO-8601 (``2026-01-01T00:00:00Z``)."""
    if text is None:
        return None
    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise SettingsError(f"not a time (epoch ms or ISO-8601): {text!r}") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)


def _common(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("Kafka source and sink")
    g.add_argument("--bootstrap", help="bootstrap servers (KAFKAPY_BOOTSTRAP)")
    src = g.add_mutually_exclusive_group()
    src.add_argument("--topics", help="input topics, comma-separated: subscribe "
                                      "(KAFKAPY_PIPELINE_INPUT)")
    src.add_argument("--topic-pattern", help="input topic regex: subscribePattern")
    src.add_argument("--assign", help="input partitions: assign, 'topic:0,1;other:0' or JSON")
    g.add_argument("--output-topic", help="aggregates topic (KAFKAPY_PIPELINE_OUTPUT)")
    g.add_argument("--dead-letter-topic",
                   help="topic of the events that fail to parse (KAFKAPY_PIPELINE_DEAD_LETTERS, "
                        "default dlq.events)")
    g.add_argument("--starting-offsets", help="earliest | latest | JSON per partition")
    g.add_argument("--starting-timestamp", help="start at this record time (ms or ISO-8601)")
    g.add_argument("--max-offsets-per-trigger", type=int, help="rate limit per micro-batch")
    g.add_argument("--no-headers", action="store_true", help="do not read record headers")
    g.add_argument("--isolation-level", choices=("read_committed", "read_uncommitted"),
                   help="the Kafka source's kafka.isolation.level")
    g.add_argument("--no-fail-on-data-loss", action="store_true",
                   help="skip missing offsets instead of failing the query")
    g.add_argument("--kafka-option", action="append", default=[], metavar="KEY=VALUE",
                   help="extra client setting, e.g. fetch.max.bytes=1048576 (repeatable)")
    a = p.add_argument_group("aggregation")
    a.add_argument("--window", help="window length (default '1 minute')")
    a.add_argument("--slide", help="slide for sliding windows (default: tumbling)")
    a.add_argument("--watermark", help="allowed lateness (default '30 seconds')")
    s = p.add_argument_group("Spark")
    s.add_argument("--jars", help="connector jars or directories of jars, comma-separated "
                                  "(KAFKAPY_SPARK_JARS; default ../shared/spark-jars beside "
                                  "a source checkout)")
    s.add_argument("--packages", help="Maven coordinates or 'auto' (KAFKAPY_SPARK_PACKAGES)")
    s.add_argument("--master", help="Spark master (KAFKAPY_SPARK_MASTER, default local[2])")
    s.add_argument("--shuffle-partitions", type=int, help="spark.sql.shuffle.partitions")
    o = p.add_argument_group("output")
    o.add_argument("--checkpoint", help="checkpoint root (KAFKAPY_PIPELINE_CHECKPOINT)")
    o.add_argument("--parquet", help="Parquet output dir (KAFKAPY_PIPELINE_PARQUET)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafkapy-pipeline", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    stream = sub.add_parser("stream", help="run the streaming job")
    _common(stream)
    stream.add_argument("--available-now", action="store_true",
                        help="process the records present now, then exit")
    stream.add_argument("--trigger-seconds", type=float, help="micro-batch interval (default 5)")
    stream.add_argument("--run-seconds", type=float, help="stop after this long")
    stream.add_argument("--sinks", default="kafka,parquet,dead-letters",
                        help="kafka,parquet,dead-letters (default all three)")
    back = sub.add_parser("backfill", help="aggregate a time range (batch job)")
    _common(back)
    back.add_argument("--from", dest="start", help="range start, inclusive (ms or ISO-8601)")
    back.add_argument("--to", dest="end", help="range end, exclusive (ms or ISO-8601)")
    back.add_argument("--ending-offsets",
                      help="where the read ends: latest (default) | JSON per partition; --to "
                           "filters by event time, the read still ends here")
    back.add_argument("--out", required=True, help="Parquet output dir (overwritten)")
    back.add_argument("--to-topic", action="store_true", help="also write to the output topic")
    back.add_argument("--no-dead-letters", action="store_true",
                      help="do not write the range's events that fail to parse to the "
                           "dead-letter topic")
    send = sub.add_parser("send", help="produce sample events")
    send.add_argument("--bootstrap", help="bootstrap servers (KAFKAPY_BOOTSTRAP)")
    send.add_argument("--topic", help="topic (default: the first input topic, else events)")
    send.add_argument("--count", type=int, default=100, help="events to send (default 100)")
    send.add_argument("--kinds", default="click,view,purchase",
                      help="event kinds, comma-separated (default click,view,purchase)")
    send.add_argument("--start", help="event time of the first event (default: now)")
    send.add_argument("--spacing-ms", type=int, default=1000,
                      help="event time between events (default 1000)")
    send.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    show = sub.add_parser("show", help="print the aggregates")
    show.add_argument("--parquet", help="Parquet output dir (KAFKAPY_PIPELINE_PARQUET)")
    show.add_argument("--from-topic", action="store_true",
                      help="read the output topic instead of Parquet")
    show.add_argument("--bootstrap", help="bootstrap servers (KAFKAPY_BOOTSTRAP)")
    show.add_argument("--output-topic", help="aggregates topic (KAFKAPY_PIPELINE_OUTPUT)")
    return parser


def settings_from_args(args: argparse.Namespace,
                       env: dict[str, str] | None = None) -> PipelineSettings:
    s = from_env(env)
    changes: dict = {}

    def take(attr: str, field: str | None = None, conv=lambda v: v):
        value = getattr(args, attr, None)
        if value is not None:
            changes[field or attr] = conv(value)

    take("bootstrap")
    if getattr(args, "topics", None):
        changes.update(subscribe=args.topics, subscribe_pattern=None, assign=None)
    if getattr(args, "topic_pattern", None):
        changes.update(subscribe=None, subscribe_pattern=args.topic_pattern, assign=None)
    if getattr(args, "assign", None):
        changes.update(subscribe=None, subscribe_pattern=None, assign=args.assign)
    take("output_topic")
    take("dead_letter_topic")
    take("starting_offsets")
    take("starting_timestamp", conv=_time_ms)
    take("ending_offsets")
    take("max_offsets_per_trigger")
    if getattr(args, "no_headers", False):
        changes["include_headers"] = False
    take("isolation_level")
    if getattr(args, "no_fail_on_data_loss", False):
        changes["fail_on_data_loss"] = False
    options = {}
    for item in getattr(args, "kafka_option", None) or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SettingsError(f"--kafka-option wants KEY=VALUE, got {item!r}")
        options[key.strip()] = value.strip()
    if options:
        changes["kafka_options"] = options
    take("window")
    take("slide")
    take("watermark")
    take("trigger_seconds")
    take("jars", conv=lambda v: expand_jars(tuple(j.strip() for j in v.split(",") if j.strip())))
    if getattr(args, "packages", None):
        if args.packages == "auto":
            import pyspark  # optional (the spark extra): only this command needs it
            changes["packages"] = default_packages(pyspark.__version__)
        else:
            changes["packages"] = tuple(p.strip() for p in args.packages.split(",") if p.strip())
    take("master")
    take("shuffle_partitions")
    take("checkpoint", "checkpoint_dir")
    take("parquet", "parquet_dir")
    if changes.get("packages") and "jars" not in changes:
        changes["jars"] = ()  # --packages replaces jars that came from the environment
    return s.with_(**changes).validate()


def _cmd_stream(args, s: PipelineSettings) -> int:
    from kafkapy.pipeline import jobs   # imports pyspark, optional (the spark extra)
    s = connector(s)
    topics.ensure_input_topics(s)  # before the JVM: a missing topic is reported in one line
    sinks = [x.strip() for x in args.sinks.split(",")]
    spark = jobs.build_session(s)
    interrupted = Interrupt()       # replaces PySpark's SIGINT handler (see Interrupt)
    try:
        queries = jobs.start_streaming(spark, s, sinks=sinks, available_now=args.available_now)
    except BaseException:
        spark.stop()
        raise
    where = {"kafka": f"aggregates -> topic {s.output_topic}",
             "parquet": f"aggregates -> {s.parquet_dir}",
             "dead-letters": f"events that fail to parse -> topic {s.dead_letter_topic}"}
    print(f"kafkapy-pipeline: reading {s.subscribe or s.subscribe_pattern or s.assign} from "
          f"{s.bootstrap}; {'; '.join(where[x] for x in sinks)}; "
          f"checkpoints in {s.checkpoint_dir}", flush=True)
    deadline = time.monotonic() + args.run_seconds if args.run_seconds else None
    try:
        while not interrupted.requested and any(q.isActive for q in queries):
            if deadline is not None and time.monotonic() >= deadline:
                break
            for q in queries:
                if q.exception() is not None:
                    raise RuntimeError(f"query {q.name} failed: {q.exception()}")
            time.sleep(0.5)
    finally:
        failed = [q for q in queries if q.exception() is not None]
        for q in queries:
            if q.isActive:
                q.stop()
        spark.stop()
    for q in failed:
        print(f"kafkapy-pipeline: query {q.name} failed: {q.exception()}", file=sys.stderr)
    return 1 if failed else 0


class Interrupt:
    """Ctrl-C (SIGINT) only sets ``requested``, from the moment this is made.  PySpark's own
    SIGINT handler calls into the JVM (cancelAllJobs) from inside the signal handler; when
    the main thread is itself inside a call into the JVM, as the stream's loop mostly is,
    that second call breaks the connection ("reentrant call") and the queries and the
    session can no longer be stopped cleanly.  With the flag the loop ends and the main
    thread stops them; a second Ctrl-C does not cut that short.  (A flag, not a
    threading.Event: a handler that takes a lock the interrupted main thread holds would
    wait for ever.)"""

    def __init__(self) -> None:
        self.requested = False
        signal.signal(signal.SIGINT, self._request)

    def _request(self, signum, frame) -> None:
        self.requested = True


def _cmd_backfill(args, s: PipelineSettings) -> int:
    from kafkapy.pipeline import jobs   # imports pyspark, optional (the spark extra)
    start, end = _time_ms(args.start), _time_ms(args.end)
    s = connector(s)
    spark = jobs.build_session(s, "kafkapy-pipeline-backfill")
    try:
        done = jobs.run_backfill(spark, s, start, end, args.out, to_topic=args.to_topic,
                                 dead_letters=not args.no_dead_letters)
    finally:
        spark.stop()
    print(f"kafkapy-pipeline: backfill wrote {done.aggregates} aggregate rows to {args.out}"
          + (f" and topic {s.output_topic}" if args.to_topic else "")
          + (f"; {done.dead_letters} events that fail to parse to topic "
             f"{s.dead_letter_topic}" if not args.no_dead_letters else ""))
    return 0


def sample_events(count: int, kinds: list[str], start_ms: int, spacing_ms: int,
                  seed: int) -> list[dict]:
    rng = random.Random(seed)
    users = ["alice", "bob", "carol", "dave"]
    out = []
    for i in range(count):
        ts = start_ms + i * spacing_ms
        out.append({
            "event_id": f"e-{start_ms}-{i}",
            "user": rng.choice(users),
            "kind": kinds[i % len(kinds)],
            "amount": round(rng.uniform(0, 100), 2),
            "event_time": datetime.fromtimestamp(ts / 1000, timezone.utc)
                                  .isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        })
    return out


def _cmd_send(args) -> int:
    s = from_env()
    bootstrap = args.bootstrap or s.bootstrap
    topic = args.topic or (s.subscribe or "events").split(",")[0]
    start = _time_ms(args.start) if args.start else int(time.time() * 1000)
    events = sample_events(args.count, [k for k in args.kinds.split(",") if k], start,
                           args.spacing_ms, args.seed)
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        for e in events:
            ts = _time_ms(e["event_time"])
            producer.send(topic, key=e["user"].encode(), value=json.dumps(e).encode(),
                          headers=[("source", b"kafkapy-pipeline-send")], timestamp_ms=ts)
        producer.flush()
    finally:
        producer.close()
    print(f"kafkapy-pipeline: sent {len(events)} events to {topic} at {bootstrap}")
    return 0


def _cmd_show(args) -> int:
    s = from_env()
    if args.from_topic:
        consumer = KafkaConsumer(args.output_topic or s.output_topic,
                                 bootstrap_servers=args.bootstrap or s.bootstrap,
                                 auto_offset_reset="earliest", enable_auto_commit=False,
                                 group_id=None, consumer_timeout_ms=3000)
        try:
            for record in consumer:
                print(record.value.decode())
        finally:
            consumer.close()
        return 0
    from pyspark.sql import SparkSession   # optional (the spark extra)
    path = args.parquet or s.parquet_dir
    if not os.path.isdir(path):
        print(f"kafkapy-pipeline: no Parquet output at {path} yet", file=sys.stderr)
        return 1
    spark = (SparkSession.builder.master("local[1]").appName("kafkapy-pipeline-show")
             .config("spark.ui.enabled", "false").config("spark.sql.session.timeZone", "UTC")
             .getOrCreate())
    try:
        (spark.read.parquet(path).orderBy("window_start", "kind")
         .drop("window_date").show(1000, truncate=False))
    finally:
        spark.stop()
    return 0


_PYSPARK_HINT = ("needs pyspark 4.0.x (pip install -e '.[spark]'; Spark also needs Java 17), "
                 "which cannot be imported here")


def _require_pyspark(command: str) -> None:
    """SettingsError (one line) when pyspark cannot be imported, before any job module
    (``jobs``, ``transform``) or Spark itself is touched."""
    try:
        import pyspark  # noqa: F401
    except ImportError as err:
        reason = (str(err).splitlines() or [type(err).__name__])[0]
        raise SettingsError(f"{command} {_PYSPARK_HINT}: {reason}") from None


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command != "send" and not getattr(args, "from_topic", False):
            _require_pyspark(args.command)
        if args.command == "send":
            return _cmd_send(args)
        if args.command == "show":
            return _cmd_show(args)
        s = settings_from_args(args)
        if args.command == "stream":
            return _cmd_stream(args, s)
        return _cmd_backfill(args, s)
    except SettingsError as err:
        print(f"kafkapy-pipeline: {err}", file=sys.stderr)
        return 2
    except KafkaError as err:           # send / show --from-topic: e.g. no broker there
        print(f"kafkapy-pipeline: {args.command}: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
