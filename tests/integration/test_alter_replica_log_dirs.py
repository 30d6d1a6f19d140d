"""Moving a replica between the two log dirs of one broker (AlterReplicaLogDirs, JBOD).

One broker in ZooKeeper mode (a real ZooKeeper) with ``log.dirs`` naming two dirs.
Each test runs against kafkapy; ``KAFKAPY_ALTER_DIRS_REFERENCE=kafka`` runs the same
tests against Apache Kafka 3.9 (``../shared/kafka_2.13-3.9.0``), which is how the
expectations were checked.

- a partition with several segments moves while a producer writes to it (the move
  throttled by ``replica.alter.log.dirs.io.max.bytes.per.second`` so it is seen in
  flight): DescribeLogDirs shows the future replica in the destination meanwhile,
  then the partition only there; every acknowledged record is read back at its
  offset; the files are in the new dir, the old dir is gone, no ``-future`` is left;
- a move asked for a partition that does not exist yet: answered
  UNKNOWN_TOPIC_OR_PARTITION, and the log is created in that dir when the topic is;
- errors: a dir that is not configured (LOG_DIR_NOT_FOUND);
- kill -9 mid-move: the ``-future`` dir is on disk, and after the restart the move
  resumes and completes;
- Kafka's own kafka-reassign-partitions.sh and kafkapy-reassign-partitions (a plan with
  ``log_dirs``, --execute then --verify) and kafka-log-dirs.sh --describe; a replica
  reassigned to a second broker into that broker's second dir;
- the destination dir fills up mid-move (a 4 MiB tmpfs; needs root, else skipped): it
  goes offline, the move stops, the replica keeps serving from its own dir.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from tests.support.broker_process import SERVER_PROPERTIES, BrokerProcess, free_port
from tests.support.cluster import KAFKA_BIN, _listening, kafka_env, kafka_tool
from tests.support.request_fields import fields
from tests.support.log_dirs import small_dir  # noqa: F401 (fixture)
from tests.support.wire import WireClient
from tests.support.zookeeper_server import (_die_with_parent, zk_connect,  # noqa: F401 (fixtures)
                                    zookeeper_server)

REFERENCE = os.environ.get("KAFKAPY_ALTER_DIRS_REFERENCE", "") == "kafka"
RATE_KEY = "replica.alter.log.dirs.io.max.bytes.per.second"
NONE, UNKNOWN_TOPIC_OR_PARTITION, KAFKA_STORAGE_ERROR, LOG_DIR_NOT_FOUND = 0, 3, 56, 57
SEGMENT = 64 * 1024


class _KafkaBroker:
    """Kafka 3.9 with the same settings (reference runs)."""

    def __init__(self, base: Path, settings: dict[str, str]) -> None:
        self.base = base
        self.port = free_port()
        self.settings = settings
        self.proc: subprocess.Popen | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> "_KafkaBroker":
        settings = dict(self.settings, **{
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}"})
        props = self.base / "server.properties"
        props.write_text(SERVER_PROPERTIES.read_text() + "\n"
                         + "".join(f"{k}={v}\n" for k, v in settings.items()))
        with open(self.base / "kafka.out", "ab") as out:
            self.proc = subprocess.Popen(
                [str(KAFKA_BIN / "kafka-server-start.sh"), str(props)], stdout=out,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=kafka_env(self.base / "app-logs"), preexec_fn=_die_with_parent)
        _wait(lambda: _listening(self.port) or self.proc.poll() is not None, 120, "kafka")
        assert self.proc.poll() is None, (self.base / "kafka.out").read_text()[-4000:]
        return self

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.kill()

    def restart(self, hard: bool = False) -> "_KafkaBroker":
        self.kill() if hard else self.stop()
        return self.start()


def _wait(predicate, timeout: float, what: str, step: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def _start_node(base: Path, zk: str, dirs: list[Path], broker_id: int = 0, **extra: str):
    settings = {"zookeeper.connect": zk, "broker.id": str(broker_id),
                "log.dirs": ",".join(str(d) for d in dirs),
                "num.partitions": "1", "offsets.topic.replication.factor": "1",
                "group.initial.rebalance.delay.ms": "0",
                # Kafka deletes a replaced log after the broker's default delay
                "log.segment.delete.delay.ms": "1000",
                # a killed broker's registration goes soon (Kafka 3.9 refuses to start before)
                "zookeeper.session.timeout.ms": "6000", **extra}
    if REFERENCE:
        if not (KAFKA_BIN / "kafka-server-start.sh").is_file():
            pytest.skip("no Kafka 3.9")
        base.mkdir(parents=True, exist_ok=True)
        broker = _KafkaBroker(base, settings)
    else:
        broker = BrokerProcess(dirs[0], overrides=settings, node_id=broker_id)
    broker.start()
    broker.dirs = [str(d) for d in dirs]
    broker.zk_connect = zk
    return broker


@pytest.fixture
def node(tmp_path, zk_connect):  # noqa: F811
    broker = _start_node(tmp_path, zk_connect, [tmp_path / "d0", tmp_path / "d1"])
    yield broker
    broker.kill()


# ---------------------------------------------------------------- helpers

def _admin(node) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=node.bootstrap, request_timeout_ms=30000)


def _create(node, topic: str, **config: str) -> None:
    admin = _admin(node)
    try:
        admin.create_topics([NewTopic(topic, 1, 1, topic_configs={
            "segment.bytes": str(SEGMENT), **config})])
    finally:
        admin.close()
    _wait(lambda: _where(node, topic, 0)[0] is not None, 30, f"{topic}-0 on disk")


def _set_rate(node, rate: str | None) -> None:
    """The per-broker dynamic throttle (IncrementalAlterConfigs SET, or DELETE for None)."""
    client = WireClient(node.bootstrap, timeout=30)
    try:
        response = client.request(44, 0, **fields(44, resources=[
            {"resource_type": 4, "resource_name": "0", "configs": [
                {"name": RATE_KEY, "config_operation": 0 if rate is not None else 1,
                 "value": rate}]}], validate_only=False))
    finally:
        client.close()
    assert [r.error_code for r in response.responses] == [0], response


def _where(node, topic: str, partition: int) -> tuple[str | None, list[str]]:
    """(dir holding <topic>-<p>, dirs holding a <topic>-<p>.*-future)."""
    current, futures = None, []
    for d in node.dirs:
        names = os.listdir(d) if os.path.isdir(d) else []
        if f"{topic}-{partition}" in names:
            current = d
        if any(re.fullmatch(rf"{re.escape(topic)}-{partition}\.[0-9a-f]{{32}}-future", n)
               for n in names):
            futures.append(d)
    return current, futures


def _alter(node, moves: dict[tuple[str, int], str], version: int = 2) -> dict:
    by_dir: dict[str, dict[str, list[int]]] = {}
    for (topic, p), d in moves.items():
        by_dir.setdefault(d, {}).setdefault(topic, []).append(p)
    client = WireClient(node.bootstrap, timeout=30)
    try:
        response = client.request(34, version, **fields(34, dirs=[
            {"path": d, "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}
            for d, topics in by_dir.items()]))
    finally:
        client.close()
    return {(t.topic_name, p.partition_index): p.error_code
            for t in response.results for p in t.partitions}


def _describe(node, topic: str) -> dict[str, list]:
    """log dir -> [(partition, size, offset_lag, is_future)] of ``topic``."""
    client = WireClient(node.bootstrap, timeout=30)
    try:
        response = client.request(35, 4, topics=None)
    finally:
        client.close()
    out = {}
    for result in response.results:
        assert result.error_code == 0, result
        out[result.log_dir] = [(p.partition_index, p.partition_size, p.offset_lag,
                                p.is_future_key)
                               for t in result.topics if t.name == topic for p in t.partitions]
    return out


class _Writer(threading.Thread):
    """Writes records one by one (acks=1) until stopped or ``limit``; keeps the acked ones."""

    def __init__(self, node, topic: str, limit: int = 3000) -> None:
        super().__init__(daemon=True)
        self.node, self.topic, self.limit = node, topic, limit
        self.acked: list[tuple[int, bytes]] = []
        self.stop = threading.Event()
        self.error: Exception | None = None

    def run(self) -> None:
        producer = KafkaProducer(bootstrap_servers=self.node.bootstrap, acks=1, linger_ms=0,
                                 retries=5)
        try:
            for i in range(self.limit):
                if self.stop.is_set():
                    break
                value = b"live-%06d-" % i + b"y" * 300
                self.acked.append((producer.send(self.topic, value=value, partition=0)
                                   .get(30).offset, value))
                time.sleep(0.005)
        except Exception as err:   # reported by the test
            self.error = err
        finally:
            producer.close()


def _fill(node, topic: str, n: int) -> list[tuple[int, bytes]]:
    producer = KafkaProducer(bootstrap_servers=node.bootstrap, acks=1, linger_ms=5)
    try:
        values = [b"fill-%06d-" % i + b"x" * 500 for i in range(n)]
        futures = [producer.send(topic, value=v, partition=0) for v in values]
        producer.flush(60)
        return [(f.get(30).offset, v) for f, v in zip(futures, values)]
    finally:
        producer.close()


def _read_all(node, topic: str, end: int) -> dict[int, bytes]:
    consumer = KafkaConsumer(bootstrap_servers=node.bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=5000)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    out: dict[int, bytes] = {}
    deadline = time.monotonic() + 60
    try:
        while len(out) < end and time.monotonic() < deadline:
            for records in consumer.poll(2000, max_records=5000).values():
                for r in records:
                    out[r.offset] = r.value
    finally:
        consumer.close()
    return out


def _segments(d: str, topic: str) -> list[str]:
    return sorted(n for n in os.listdir(os.path.join(d, f"{topic}-0")) if n.endswith(".log"))


def _moved(node, topic: str, dst: str) -> bool:
    described = _describe(node, topic)
    return (all(not p for d, p in described.items() if d != dst)
            and [p[3] for p in described.get(dst, [])] == [False])


# ---------------------------------------------------------------- tests

def test_move_with_data_while_producing(node):
    topic = "moving"
    _create(node, topic)
    src, _ = _where(node, topic, 0)
    dst = next(d for d in node.dirs if d != src)
    acked = _fill(node, topic, 3000)          # ~1.5 MB: about 24 segments of 64 KiB
    assert len(_segments(src, topic)) >= 8
    _set_rate(node, "200000")                 # ~5 s for the move: seen in flight
    writer = _Writer(node, topic)
    writer.start()
    try:
        assert _alter(node, {(topic, 0): dst}) == {(topic, 0): NONE}
        future = _wait(lambda: [p for p in _describe(node, topic).get(dst, []) if p[3]], 20,
                       "the future replica in DescribeLogDirs")
        assert future[0][0] == 0 and future[0][2] >= 0
        assert [p[3] for p in _describe(node, topic)[src]] == [False]
        assert _where(node, topic, 0) == (src, [dst])
        # asked again for the same dir while moving: nothing changes
        assert _alter(node, {(topic, 0): dst}) == {(topic, 0): NONE}
        _set_rate(node, None)
        _wait(lambda: _moved(node, topic, dst), 60, "the move to complete", step=0.5)
    finally:
        writer.stop.set()
        writer.join(60)
    assert writer.error is None, writer.error
    assert len(writer.acked) > 0
    acked += writer.acked
    _wait(lambda: _where(node, topic, 0) == (dst, []) and not any(
        n.startswith(f"{topic}-0.") for n in os.listdir(src)), 30, "the old dir to be deleted")
    assert len(_segments(dst, topic)) >= 8
    end = max(o for o, _ in acked) + 1
    read = _read_all(node, topic, end)
    for offset, value in acked:
        assert read.get(offset) == value, offset
    [(_, size, lag, future)] = _describe(node, topic)[dst]
    assert not future and lag == 0 and size > SEGMENT * 8
    # and it takes writes in the new dir
    more = _fill(node, topic, 10)
    assert more[0][0] == end


def test_move_asked_before_the_topic_exists(node):
    # A first topic goes to the first dir; the next would go to the other one.
    _create(node, "first")
    taken, _ = _where(node, "first", 0)
    assert _alter(node, {("later", 0): taken}) == {("later", 0): UNKNOWN_TOPIC_OR_PARTITION}
    _create(node, "later")
    assert _where(node, "later", 0) == (taken, [])
    assert _describe(node, "later")[taken] == [(0, 0, 0, False)]


def test_errors(node):
    _create(node, "errs")
    src, _ = _where(node, "errs", 0)
    nowhere = os.path.join(os.path.dirname(node.dirs[0]), "not-a-log-dir")
    assert _alter(node, {("errs", 0): nowhere}, version=1) == {("errs", 0): LOG_DIR_NOT_FOUND}
    # already there: nothing to do
    assert _alter(node, {("errs", 0): src}, version=0) == {("errs", 0): NONE}
    assert _where(node, "errs", 0) == (src, [])


def test_kill_mid_move_then_restart_completes_it(node):
    topic = "crashy"
    _create(node, topic)
    src, _ = _where(node, topic, 0)
    dst = next(d for d in node.dirs if d != src)
    acked = _fill(node, topic, 2000)
    _set_rate(node, "100000")                 # ~10 s for the move
    assert _alter(node, {(topic, 0): dst}) == {(topic, 0): NONE}
    _wait(lambda: [p for p in _describe(node, topic).get(dst, []) if p[3] and p[1] > 0], 20,
          "some data in the future replica")
    node.kill()
    current, futures = _where(node, topic, 0)
    assert current == src and futures == [dst]
    _wait_unregistered(node)
    node.start()
    _set_rate(node, None)
    _wait(lambda: _moved(node, topic, dst), 60, "the move to complete after the restart",
          step=0.5)
    _wait(lambda: _where(node, topic, 0) == (dst, []) and not any(
        n.startswith(f"{topic}-0") for n in os.listdir(src)), 30, "the old dir to be deleted")
    read = _read_all(node, topic, len(acked))
    for offset, value in acked:
        assert read.get(offset) == value, offset


def _wait_unregistered(node) -> None:
    from kazoo.client import KazooClient
    zk = KazooClient(node.zk_connect)
    zk.start(timeout=15)
    try:
        _wait(lambda: zk.exists("/brokers/ids/0") is None, 30, "the registration to expire")
    finally:
        zk.stop()
        zk.close()


def _tool_json(out: str) -> dict:
    for line in out.splitlines():
        if line.startswith("{"):
            return json.loads(line)
    raise AssertionError(out)


def _reassign_tool(tool: str, *args: str) -> subprocess.CompletedProcess:
    if tool == "kafka":
        return kafka_tool("kafka-reassign-partitions.sh", *args)
    exe = Path(sys.executable).parent / "kafkapy-reassign-partitions"
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("tool", ["kafka", "kafkapy"])
def test_reassign_partitions_tool_with_log_dirs(node, tmp_path, tool):
    """Kafka's kafka-reassign-partitions.sh, and kafkapy's twin, with a plan naming a dir."""
    topic = "tooled"
    _create(node, topic)
    src, _ = _where(node, topic, 0)
    dst = next(d for d in node.dirs if d != src)
    acked = _fill(node, topic, 500)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [0], "log_dirs": [dst]}]}))
    run = _reassign_tool(tool, "--bootstrap-server", node.bootstrap,
                         "--reassignment-json-file", str(plan), "--execute")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Successfully started partition reassignment" in run.stdout, run.stdout
    assert (f"Successfully started moving log directory to {dst} for replica {topic}-0 "
            "with broker 0" in run.stdout), run.stdout

    def verified() -> bool:
        out = _reassign_tool(tool, "--bootstrap-server", node.bootstrap,
                             "--reassignment-json-file", str(plan), "--verify")
        assert out.returncode == 0, out.stdout + out.stderr
        return (f"Reassignment of replica {topic}-0-0 completed successfully." in out.stdout
                and f"Reassignment of partition {topic}-0 is completed." in out.stdout)
    _wait(verified, 60, "--verify to report completion", step=1)
    assert _where(node, topic, 0)[0] == dst
    described = kafka_tool("kafka-log-dirs.sh", "--bootstrap-server", node.bootstrap,
                           "--describe", "--topic-list", topic)
    assert described.returncode == 0, described.stdout + described.stderr
    report = _tool_json(described.stdout)
    [broker] = report["brokers"]
    assert broker["broker"] == 0
    dirs = {d["logDir"]: d for d in broker["logDirs"]}
    assert set(dirs) == set(node.dirs)
    assert [p["partition"] for p in dirs[dst]["partitions"]] == [f"{topic}-0"]
    assert dirs[dst]["partitions"][0]["isFuture"] is False
    assert dirs[dst]["partitions"][0]["offsetLag"] == 0
    assert dirs[src]["partitions"] == []
    assert all(d["error"] is None for d in dirs.values())
    read = _read_all(node, topic, len(acked))
    assert all(read.get(o) == v for o, v in acked)


def test_destination_dir_fails_mid_move(tmp_path, zk_connect, small_dir):  # noqa: F811
    """The destination fills up during the copy: it goes offline, the move stops, the
    replica keeps serving from its dir, and further moves there answer KAFKA_STORAGE_ERROR."""
    big = tmp_path / "big"
    node = _start_node(tmp_path, zk_connect, [big, small_dir],
                       # no index entries: an mmap'd index page on a full tmpfs is SIGBUS
                       **{"log.index.interval.bytes": str(1 << 30)})
    try:
        topic = "overflow"
        _create(node, topic)
        assert _where(node, topic, 0)[0] == str(big)
        acked = _fill(node, topic, 12000)      # ~6 MB: more than the 4 MiB destination
        assert _alter(node, {(topic, 0): str(small_dir)}) == {(topic, 0): NONE}
        client = WireClient(node.bootstrap, timeout=30)

        def dir_errors() -> dict[str, int]:
            return {r.log_dir: r.error_code for r in client.request(35, 4, topics=None).results}
        try:
            _wait(lambda: dir_errors().get(str(small_dir)) == KAFKA_STORAGE_ERROR, 60,
                  "the destination to go offline")
            assert dir_errors()[str(big)] == NONE
        finally:
            client.close()
        assert node.proc.poll() is None
        assert _alter(node, {(topic, 0): str(small_dir)}) == {(topic, 0): KAFKA_STORAGE_ERROR}
        assert _describe_live(node, topic) == {str(big): [False]}
        more = _fill(node, topic, 10)
        assert more[0][0] == len(acked)
        read = _read_all(node, topic, len(acked))
        assert all(read.get(o) == v for o, v in acked)
    finally:
        node.kill()


def _describe_live(node, topic: str) -> dict[str, list[bool]]:
    """is_future of ``topic``'s partition per live dir (offline dirs left out)."""
    client = WireClient(node.bootstrap, timeout=30)
    try:
        response = client.request(35, 4, topics=None)
    finally:
        client.close()
    return {r.log_dir: [p.is_future_key for t in r.topics if t.name == topic
                        for p in t.partitions]
            for r in response.results if r.error_code == 0}


def test_reassignment_to_another_broker_into_a_named_dir(tmp_path, zk_connect):  # noqa: F811
    """A plan moving a replica to a broker that does not host it yet, into that broker's
    second dir.  The tool sends AlterReplicaLogDirs right after the reassignment: if it
    comes before the controller's LeaderAndIsr (answered REPLICA_NOT_AVAILABLE, the dir
    remembered) the log is created in that dir, else it is created in the first dir and
    moved; either way it ends there (Kafka 3.9 usually takes the first path, kafkapy's
    quicker controller the second)."""
    nodes = [_start_node(tmp_path / f"b{i}", zk_connect,
                         [tmp_path / f"b{i}" / "d0", tmp_path / f"b{i}" / "d1"], broker_id=i)
             for i in (0, 1)]
    try:
        topic = "across"
        admin = _admin(nodes[0])
        try:
            admin.create_topics([NewTopic(topic, replica_assignments={0: [0]},
                                          topic_configs={"segment.bytes": str(SEGMENT)})])
        finally:
            admin.close()
        _wait(lambda: _where(nodes[0], topic, 0)[0] is not None, 30, "the replica on broker 0")
        acked = _fill(nodes[0], topic, 500)
        target = nodes[1].dirs[1]      # not the dir broker 1 would pick (its first)
        plan = tmp_path / "plan.json"
        plan.write_text(json.dumps({"version": 1, "partitions": [
            {"topic": topic, "partition": 0, "replicas": [1], "log_dirs": [target]}]}))
        bootstrap = ",".join(n.bootstrap for n in nodes)
        run = kafka_tool("kafka-reassign-partitions.sh", "--bootstrap-server", bootstrap,
                         "--reassignment-json-file", str(plan), "--execute")
        assert run.returncode == 0, run.stdout + run.stderr
        assert f"Successfully started moving log directory to {target}" in run.stdout, run.stdout

        def verified() -> bool:
            out = kafka_tool("kafka-reassign-partitions.sh", "--bootstrap-server", bootstrap,
                             "--reassignment-json-file", str(plan), "--verify")
            assert out.returncode == 0, out.stdout + out.stderr
            return f"Reassignment of partition {topic}-0 is completed." in out.stdout \
                and f"Reassignment of replica {topic}-0-1 completed successfully." in out.stdout
        _wait(verified, 90, "--verify to report completion", step=1)
        assert _where(nodes[1], topic, 0) == (target, [])
        _wait(lambda: _where(nodes[0], topic, 0) == (None, []) and not any(
            n.startswith(f"{topic}-0") for d in nodes[0].dirs for n in os.listdir(d)), 60,
            "broker 0's replica to be deleted")
        read = _read_all(nodes[1], topic, len(acked))
        assert all(read.get(o) == v for o, v in acked)
    finally:
        for n in nodes:
            n.kill()
