"""Kafka 3.9 and kafkapy brokers on one real ZooKeeper (fixtures registered in
tests/mixed/conftest.py).

``Mixed`` is a ``tests.support.cluster.Cluster`` whose nodes are chosen one by one:
``add(node_id, "kafka" | "kafkapy")`` creates a ``KafkaNode`` (Apache Kafka 3.9 in ZooKeeper
mode, small heap through ``kafka_env``) or a ``KafkapyNode`` (``tests/support/broker_process.py``),
both rooted at ``<base>/broker-<id>/``, so both use the SAME log dir
``<base>/broker-<id>/logs`` for one broker id.  ``replace(node_id, kind)`` swaps the node
object (the previous process must be stopped) and is how a broker is replaced in place:
stop Kafka broker N, start kafkapy with the same ``broker.id`` and ``log.dirs`` on the same
chroot.

Everything else (signals, ZooKeeper views, Metadata views, waiting) is the cluster tests'
code, imported rather than copied.  Invariants: every wait bounded; every process started
here is killed at teardown; traffic to 127.0.0.1 only.  Skips without Java or Kafka 3.9.
"""
from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from tests.support import workload
from tests.support.cluster import (CLUSTER_SETTINGS, KAFKA_BIN, Cluster, KafkaNode,
                                    KafkapyNode, kafka_env, kafka_tool, metadata,  # noqa: F401
                                    wait_for, wait_started)
from tests.support.zookeeper_server import zookeeper_server  # noqa: F401  (fixture)

KINDS = ("kafka", "kafkapy")

# One broker holds everything: internal topics at replication factor 1.
SINGLE_BROKER_SETTINGS = dict(CLUSTER_SETTINGS, **{
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "2",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.num.partitions": "2",
    "transaction.state.log.min.isr": "1",
    # The Kafka side must not rewrite anything on its own between the writes and the stop.
    "log.cleaner.backoff.ms": "600000",
})


def _require_kafka() -> None:
    if shutil.which("java") is None:
        pytest.skip("no java on PATH")
    if not (KAFKA_BIN / "kafka-server-start.sh").is_file():
        pytest.skip(f"no Kafka 3.9 at {KAFKA_BIN.parent}")


class Mixed(Cluster):
    """A cluster whose brokers are Kafka 3.9 or kafkapy, one by one (module docstring)."""

    def __init__(self, base: Path, zk_server, settings: dict[str, str]) -> None:
        super().__init__(base, zk_server, ids=(), extra_settings=None)
        self.settings = dict(settings, **{"zookeeper.connect": self.zk_connect})
        self.kinds: dict[int, str] = {}

    def add(self, node_id: int, kind: str, extra: dict[str, str] | None = None):
        """A node (not started) of ``kind`` with ``broker.id`` = ``node_id``."""
        assert kind in KINDS, kind
        cls = KafkaNode if kind == "kafka" else KafkapyNode
        node = cls(node_id, self.base, dict(self.settings, **(extra or {})))
        self.nodes[node_id] = node
        self.kinds[node_id] = kind
        return node

    def replace(self, node_id: int, kind: str, extra: dict[str, str] | None = None):
        """Same broker id and log dir, the other implementation (the old one stopped)."""
        assert node_id not in self.running_ids(), f"broker {node_id} still runs"
        return self.add(node_id, kind, extra)

    def launch_all(self, timeout: float = 120.0) -> None:
        """Start every added node that is not running (Cluster.start without the chroot)."""
        self.ensure_chroot()
        todo = [n for i, n in self.nodes.items() if i not in self.running_ids()]
        for node in todo:
            node.launch()
        for node in todo:
            wait_started(node, timeout)

    def log_dir(self, node_id: int) -> Path:
        return self.nodes[node_id].log_dir


@pytest.fixture
def mixed_factory(tmp_path, zookeeper_server):  # noqa: F811
    """``make(settings) -> Mixed``; every Mixed made is stopped at teardown."""
    _require_kafka()
    made: list[Mixed] = []

    def make(settings: dict[str, str] | None = None, name: str = "mixed") -> Mixed:
        m = Mixed(tmp_path / name, zookeeper_server, settings or SINGLE_BROKER_SETTINGS)
        m.ensure_chroot()
        made.append(m)
        return m
    yield make
    for m in made:
        m.stop()


# --------------------------------------------------------------------------- file views

def file_digests(log_dir: Path) -> dict[str, str]:
    """``{relative path: sha256}`` of every regular file under ``log_dir``."""
    out = {}
    for root, _dirs, files in os.walk(log_dir):
        for name in files:
            p = Path(root) / name
            out[str(p.relative_to(log_dir))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def segment_files(m: Mixed, node_id: int, topic: str, partition: int) -> dict[str, bytes]:
    """``{name: bytes}`` of the partition's ``.log`` segments on broker ``node_id`` (replicas
    compared byte for byte across kinds)."""
    d = m.log_dir(node_id) / f"{topic}-{partition}"
    return {p.name: p.read_bytes() for p in sorted(d.glob("*.log"))}


# The scouting cluster (_start_mixed): 2 Kafka + 1 kafkapy.
SCOUTING_SETTINGS = dict(CLUSTER_SETTINGS, **{
    "inter.broker.protocol.version": "3.9",
    # A paused follower leaves the ISR after 2 to 3 s instead of 30 s, well within its
    # ZooKeeper session: the ISR shrinks through AlterPartition, not through a broker death.
    # A ZooKeeper client resumed after two thirds of its session timeout drops its
    # connection and reconnects, racing the server's expiry; 10 s sessions keep a pause
    # stretched by a loaded machine (6.7 s of room) clear of that race.
    "replica.lag.time.max.ms": "2000",
    "zookeeper.session.timeout.ms": "10000",
    "replica.fetch.wait.max.ms": "200",
})

KAFKA_IDS = (1, 2)
KAFKAPY_ID = 3


def _start_mixed(base: Path, zk_server, first: str) -> Mixed:
    """2 Kafka + 1 kafkapy; ``first`` ("kafka" or "kafkapy") starts alone and becomes the
    controller before the others start.  A failed start stops what it launched (the
    callers' teardown only covers a cluster they got)."""
    m = Mixed(base, zk_server, SCOUTING_SETTINGS)
    m.ensure_chroot()
    first_id = 1 if first == "kafka" else KAFKAPY_ID
    try:
        m.add(first_id, first)
        m.launch_all(timeout=120)
        m.wait_ready([first_id], timeout=120)
        for i in (1, 2, KAFKAPY_ID):
            if i != first_id:
                m.add(i, "kafka" if i in KAFKA_IDS else "kafkapy")
        m.launch_all(timeout=120)
        m.wait_ready(timeout=120)
        assert m.controller_id() == first_id, m.summary()
    except BaseException:
        m.stop()
        raise
    return m


PARTITIONS = 3     # the rolling-migration topics'


def read_log(bootstrap: str, topic: str, partitions: int = PARTITIONS,
             timeout: float = 90.0) -> list[tuple[int, int, str]]:
    """Every record of ``topic`` from the beginning to each partition's end:
    (partition, offset, value) (``workload.read``: confluent-kafka, no group)."""
    return [(r.partition, r.offset, r.value.decode())
            for r in workload.read(bootstrap, which={topic: partitions}, timeout=timeout)]


def consumer_groups_describe(bootstrap: str, group: str) -> dict[tuple[str, int], dict]:
    """``kafka-consumer-groups.sh --describe``: {(topic, partition): {column: value}}."""
    out = kafka_tool("kafka-consumer-groups.sh", "--bootstrap-server", bootstrap,
                     "--describe", "--group", group)
    assert out.returncode == 0, out.stdout + out.stderr[-3000:]
    rows: dict[tuple[str, int], dict] = {}
    header = None
    for line in out.stdout.splitlines():
        cols = line.split()
        if cols[:2] == ["GROUP", "TOPIC"]:
            header = cols
        elif header and len(cols) >= 6 and cols[0] == group:
            row = dict(zip(header, cols))
            rows[(row["TOPIC"], int(row["PARTITION"]))] = row
    assert rows, out.stdout
    return rows
