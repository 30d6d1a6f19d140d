"""The streaming job on a Spark standalone cluster, reading a three-broker kafkapy cluster that
loses a broker (kill -9) mid-stream.

Spark: a master and two workers (1 core, 1 GiB each) from pyspark's ``bin/spark-class``
(``tests/support/spark_cluster.py``). Kafka: three kafkapy brokers on ZooKeeper
(``tests/support/cluster.py``), the input topic with 6 partitions, replication factor 3 and
``min.insync.replicas=2``, written by an idempotent acks=all producer. The job runs as a
user runs it, ``python -m kafkapy.pipeline stream --master spark://127.0.0.1:<port>``, with
the connector jars in ``spark.jars`` (from ``KAFKAPY_SPARK_JARS``), rate-limited so it reads
in several micro-batches; a ``spark-defaults.conf`` of its own (``SPARK_CONF_DIR``) only
makes the test's JVMs cheaper: small executors, no locality wait (the Kafka source prefers
an executor per partition; on one core each a task would wait for a busy one), the client
JIT and the serial collector (``spark_cluster.TEST_JVM_OPTIONS``).

Time: the workers start while the topics are created and filled and the driver starts; the
waits poll files (the queries' checkpoints) and read topics up to their end offsets.

Sequence: half the events, the job started, and once its first micro-batch is committed the
leader of partition 0 is killed with kill -9; the other half is sent while leadership moves.
When every query has read everything, an event far ahead closes all the windows (the
watermark is longer than the events' span, so no event can be late).

Checks:
- the input topic holds every event sent, in order (nothing lost by the brokers);
- the Parquet output (exactly-once) equals the same aggregation computed in Python over that
  input (count, sum, max, first and last event time per minute and kind), and counts every
  valid event; the output topic (at-least-once) holds those aggregates and no others;
- the malformed events are in the dead-letter topic with their headers;
- the job ran on the cluster: the master lists the application with both workers' cores,
  and each worker's executor fetched the Kafka connector jar and ran tasks (its log);
- master, workers, executors, the driver and the brokers are all ended afterwards
  (``stop_group`` raises if a process of theirs survives).

Skipped without pyspark, the connector jars or ZooKeeper, except under CI, where that fails.
"""
from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from tests.support import cluster_clients as clients
from tests.support.cluster import wait_for
from tests.support.spark import CONNECTOR_JARS, ROOT, in_ci, require_connector
from tests.support.spark_cluster import (TEST_JVM_OPTIONS, SparkStandalone, local_env,
                                         spark_defaults, start_group, stop_group)
from tests.support.zookeeper_server import ZOOKEEPER_SKIP_REASON, zookeeper_classpath

pytestmark = [pytest.mark.slow, pytest.mark.timeout(480)]

T0 = datetime(2026, 6, 1, 9, 0, 0, tzinfo=timezone.utc)
INPUT, OUTPUT, DLQ = "sc-events", "sc-aggregates", "dlq.sc-events"
PARTITIONS = 6
EVENTS = 360                      # over 4 minutes of event time, half before the kill
PER_TRIGGER = 120                 # maxOffsetsPerTrigger: each half takes two micro-batches
KINDS = ("click", "view", "purchase")
MALFORMED = {40: (b"{not json", "invalid JSON"), 200: (b'{"kind": "view"}', "missing event_id"),
             350: (b'{"event_id": "m", "kind": "click", "amount": "x"}',
                   "amount is not a number")}
QUERIES = ("kafka-sink", "parquet-sink", "dead-letters")
WAIT_S = 150
# The driver's spark-defaults.conf: cheaper JVMs, the same job (module docstring).
DRIVER_DEFAULTS = {
    "spark.executor.memory": "512m",
    "spark.driver.memory": "512m",
    "spark.locality.wait": "0s",
    "spark.driver.extraJavaOptions": TEST_JVM_OPTIONS,
    "spark.executor.extraJavaOptions": TEST_JVM_OPTIONS,
}


@pytest.fixture(scope="module", autouse=True)
def _tools():
    require_connector()
    if zookeeper_classpath() is None:
        if in_ci():
            pytest.fail(f"CI must run the Spark cluster test: {ZOOKEEPER_SKIP_REASON}",
                        pytrace=False)
        pytest.skip(ZOOKEEPER_SKIP_REASON)


@pytest.fixture
def spark_cluster(tmp_path):
    """Its master launched, not waited for: the test's other fixtures start meanwhile."""
    standalone = SparkStandalone(tmp_path / "spark", workers=2, cores=1, memory="1g")
    try:
        standalone.launch()
        yield standalone
    finally:
        standalone.stop()


def _iso(at: datetime) -> str:
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _events() -> list[bytes]:
    """EVENTS values in event-time order, the malformed ones at their MALFORMED positions."""
    out = []
    for i in range(EVENTS):
        if i in MALFORMED:
            out.append(MALFORMED[i][0])
            continue
        at = T0 + timedelta(milliseconds=i * 240_000 // EVENTS)
        out.append(json.dumps({"event_id": f"e{i}", "user": f"u{i % 5}", "kind": KINDS[i % 3],
                               "amount": float(i % 10), "event_time": _iso(at)}).encode())
    return out


def _by_partition(values: list[bytes], first: int) -> dict[int, list[bytes]]:
    """Event ``first + n`` to partition ``(first + n) % PARTITIONS``."""
    out: dict[int, list[bytes]] = defaultdict(list)
    for n, value in enumerate(values):
        out[(first + n) % PARTITIONS].append(value)
    return dict(out)


def _python_aggregates(values: list[bytes]) -> dict[tuple, tuple]:
    """The pipeline's aggregation, in Python: (window start, kind) -> (events, amount sum,
    max amount, first and last event time); amounts are whole numbers, so any summing
    order gives the same sum."""
    groups: dict[tuple, list] = defaultdict(list)
    for value in values:
        try:
            e = json.loads(value)
        except ValueError:
            continue
        if not isinstance(e, dict) or "event_id" not in e or "kind" not in e \
                or not isinstance(e.get("amount", 0.0), (int, float)):
            continue
        at = datetime.fromisoformat(e["event_time"].replace("Z", "+00:00"))
        groups[(at.replace(second=0, microsecond=0), e["kind"])].append((e["amount"], at))
    return {key: (len(rows), sum(a for a, _ in rows), max(a for a, _ in rows),
                  min(t for _, t in rows), max(t for _, t in rows))
            for key, rows in groups.items()}


def _committed(checkpoint: Path) -> int:
    """Input records the query's last committed micro-batch ended at, over all partitions."""
    commits = [int(p.name) for p in (checkpoint / "commits").glob("[0-9]*")]
    if not commits:
        return 0
    lines = (checkpoint / "offsets" / str(max(commits))).read_text().splitlines()
    return sum(json.loads(lines[-1])[INPUT].values())


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=timezone.utc)


def _parquet(spark, path: Path) -> dict[tuple, tuple]:
    if not (path / "_spark_metadata").is_dir():
        return {}
    rows = spark.read.parquet(str(path)).collect()
    assert len(rows) == len({(r.window_start, r.kind) for r in rows}), "a window written twice"
    return {(_utc(r.window_start), r.kind): (r.events, r.amount, r.max_amount,
                                             _utc(r.first_event_time), _utc(r.last_event_time))
            for r in rows}


def _topic_values(bootstrap: str, topic: str) -> list:
    """Every record of ``topic`` up to its partitions' end offsets when called."""
    from kafka import KafkaConsumer, TopicPartition
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        deadline = time.monotonic() + 30
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


def _aggregates_on_topic(bootstrap: str) -> set[tuple]:
    """Distinct aggregates on the output topic (a replayed batch may repeat one, identical)."""
    out = set()
    for record in _topic_values(bootstrap, OUTPUT):
        v = json.loads(record.value)
        out.add((v["window_start"], v["kind"], v["events"], v["amount"], v["max_amount"],
                 v["first_event_time"], v["last_event_time"]))
    return out


def _as_topic(aggregates: dict[tuple, tuple]) -> set[tuple]:
    return {(_iso(start), kind, n, total, top, _iso(first), _iso(last))
            for (start, kind), (n, total, top, first, last) in aggregates.items()}


def _start_driver(spark_cluster, bootstrap: str, work: Path):
    cmd = [sys.executable, "-m", "kafkapy.pipeline", "stream",
           "--master", spark_cluster.master_url, "--bootstrap", bootstrap, "--topics", INPUT,
           "--output-topic", OUTPUT, "--dead-letter-topic", DLQ,
           "--checkpoint", str(work / "checkpoint"), "--parquet", str(work / "out"),
           "--watermark", "5 minutes", "--trigger-seconds", "1", "--shuffle-partitions", "1",
           "--max-offsets-per-trigger", str(PER_TRIGGER),
           # Spark's source finds the latest offsets with Kafka's Admin client, whose
           # listOffsets waits for a dead leader until default.api.timeout.ms (60 s by
           # default, and no less than request.timeout.ms); Spark then retries with a new
           # Admin client, which finds the new leader.
           "--kafka-option", "request.timeout.ms=10000",
           "--kafka-option", "default.api.timeout.ms=15000"]
    conf = spark_defaults(work / "conf", DRIVER_DEFAULTS)
    env = local_env(KAFKAPY_SPARK_JARS=",".join(CONNECTOR_JARS), PYSPARK_PYTHON=sys.executable,
                    SPARK_CONF_DIR=str(conf))
    return start_group(cmd, work / "driver.log", env, cwd=ROOT)


def _stop_driver(driver, log: Path) -> int:
    """Ctrl-C, as a user stops it: the queries stop, then the Spark session."""
    driver.send_signal(signal.SIGINT)
    try:
        return driver.wait(60)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the driver did not stop on SIGINT\n{_tail(log)}") from None


def _tail(path: Path, n: int = 6000) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return ""


def _dead_letters(bootstrap: str) -> set[tuple]:
    return {(r.key, r.value, tuple(r.headers)) for r in _topic_values(bootstrap, DLQ)}


def _want_dead_letters(offsets: dict[int, list[int]], values: dict[int, list[bytes]]) -> set:
    want = set()
    for p, vals in values.items():
        for value, offset in zip(vals, offsets[p]):
            reason = next((r for v, r in MALFORMED.values() if v == value), None)
            if reason is not None:
                headers = (INPUT, str(p), str(offset), "kafkapy-pipeline", "1",
                           f"parse_failed: {reason}")
                want.add((None, value, tuple(zip(
                    ("__dlq.errors.topic", "__dlq.errors.partition", "__dlq.errors.offset",
                     "__dlq.errors.group", "__dlq.errors.delivery.count",
                     "__dlq.errors.reason"), (h.encode() for h in headers)))))
    return want


def _check_ran_on_the_cluster(spark_cluster) -> None:
    apps = [a for a in spark_cluster.state()["completedapps"] if a["name"] == "kafkapy-pipeline"]
    assert len(apps) == 1 and apps[0]["cores"] == 2, spark_cluster.state()
    for index in range(2):
        finished = spark_cluster.worker_state(index)["finishedexecutors"]
        assert {e["appid"] for e in finished} == {apps[0]["id"]}, finished
        logs = "".join(p.read_text(errors="replace") for p in spark_cluster.executor_logs(index))
        fetched = re.search(r"Fetching spark://\S+/jars/spark-sql-kafka-0-10_\S+\.jar", logs)
        assert fetched and "ConsumerConfig values" in logs and "Running task" in logs, (
            f"worker {index}'s executor ran no Kafka task with the connector:\n{logs[-4000:]}")


def test_stream_on_a_spark_cluster_survives_a_broker_kill(spark_cluster, cluster, spark,
                                                          tmp_path):
    spark_cluster.launch_workers()          # started while the topics are made and filled
    bootstrap = ",".join(cluster.bootstrap(i) for i in sorted(cluster.nodes))
    clients.create_topic(bootstrap, INPUT, partitions=PARTITIONS, replication=3,
                         configs={"min.insync.replicas": "2"})
    for topic in (OUTPUT, DLQ):
        clients.create_topic(bootstrap, topic, partitions=1, replication=3)
    leaders = cluster.wait_topic(INPUT, PARTITIONS)
    for topic in (OUTPUT, DLQ):
        cluster.wait_topic(topic, 1)

    events = _events()
    half = EVENTS // 2
    offsets = clients.produce_confluent(bootstrap, INPUT, _by_partition(events[:half], 0))
    work = tmp_path / "job"
    work.mkdir()
    driver = _start_driver(spark_cluster, bootstrap, work)
    try:
        # Started meanwhile: the master gives the application an executor on each
        # worker as it registers (``_check_ran_on_the_cluster`` sees both at the end).
        spark_cluster.wait_workers()
        checkpoints = [work / "checkpoint" / q for q in QUERIES]
        wait_for(lambda: driver.poll() is not None or _committed(checkpoints[1]) > 0, WAIT_S,
                 lambda: f"a first committed micro-batch\n{_tail(work / 'driver.log')}")
        assert driver.poll() is None, _tail(work / "driver.log")
        cluster.kill(leaders[0])                                       # kill -9
        later = clients.produce_confluent(bootstrap, INPUT, _by_partition(events[half:], half),
                                          timeout=90)
        for p, more in later.items():
            offsets.setdefault(p, []).extend(more)
        wait_for(lambda: driver.poll() is not None
                 or all(_committed(c) == EVENTS for c in checkpoints), WAIT_S,
                 lambda: f"every query to read all {EVENTS} events: "
                         f"{[_committed(c) for c in checkpoints]}\n{_tail(work / 'driver.log')}")
        assert driver.poll() is None, _tail(work / "driver.log")
        tick = json.dumps({"event_id": "tick", "kind": "view",
                           "event_time": _iso(T0 + timedelta(minutes=10))}).encode()
        clients.produce_confluent(bootstrap, INPUT, {0: [tick]})

        sent = _by_partition(events, 0)
        want = _python_aggregates(events)
        assert sum(n for n, *_ in want.values()) == EVENTS - len(MALFORMED)
        wait_for(lambda: driver.poll() is not None
                 or len(_parquet(spark, work / "out")) >= len(want), WAIT_S,
                 lambda: f"{len(want)} aggregates in Parquet\n{_tail(work / 'driver.log')}",
                 interval=1.0)      # a Spark read each time: not every 0.1 s
        wait_for(lambda: driver.poll() is not None
                 or len(_aggregates_on_topic(bootstrap)) >= len(want), WAIT_S,
                 lambda: f"{len(want)} aggregates on {OUTPUT}\n{_tail(work / 'driver.log')}",
                 interval=0.5)
        assert _stop_driver(driver, work / "driver.log") == 0, _tail(work / "driver.log")
    finally:
        stop_group(driver)

    survivor = next(i for i in cluster.running_ids())
    read = clients.read_all(cluster.bootstrap(survivor), INPUT, PARTITIONS, EVENTS + 1,
                            "read_committed", "sc-reader")
    assert read == {p: sent[p] + ([tick] if p == 0 else []) for p in range(PARTITIONS)}
    assert _parquet(spark, work / "out") == want
    assert _aggregates_on_topic(bootstrap) == _as_topic(want)
    assert _dead_letters(bootstrap) == _want_dead_letters(offsets, sent)
    _check_ran_on_the_cluster(spark_cluster)
