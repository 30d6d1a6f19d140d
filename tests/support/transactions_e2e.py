"""End-to-end transactions on a real cluster: Kafka's own transactional copier, the
cluster's transaction.version, and a read_committed reader that runs while the copy does.

``Copier`` runs Kafka 3.9's ``org.apache.kafka.tools.TransactionalMessageCopier`` (the
program Kafka's ``transactions_test`` runs: consume one input partition read_committed,
produce each record to the same partition of the output topic and send the consumer's
positions in the same transaction, abort about one transaction in three with
``--enable-random-aborts``) as a JVM of its own, with kafka-clients 3.9.0 or 4.3.0 on its
classpath (the tools jar and its argparse4j/Jackson from the Kafka 3.9 install).  It prints
one JSON status line per poll (``remaining``: records left up to the end offset it saw at
start, from its group's committed offset); ``progress`` is read from the last one.  A copier
stopped with SIGTERM (clean) or SIGKILL (hard) is started again with the same arguments and
resumes from its group's committed offsets: that is the copier bounce.

``CommittedReader`` is a confluent-kafka consumer at read_committed in a thread of its own,
assigned every output partition from offset 0, keeping every (partition, value) it is given.

``finalize_transaction_version`` finalizes ``transaction.version`` with Kafka 3.9's
``kafka-features.sh upgrade`` (UpdateFeatures to the controller), then waits until every
broker's ApiVersions answer lists the level.

Invariants: every wait is bounded; every copier JVM started here is killed by ``stop``
(and dies with the test process); traffic stays on 127.0.0.1.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

from tests.support.cluster import KAFKA_HOME, kafka_tool, wait_for
from tests.support.java_clients import client_jars
from tests.support.kafka_jvm import CLIENT_JVM_FLAGS
from tests.support.request_fields import fields
from tests.support.wire import WireClient
from tests.support.zookeeper_server import _die_with_parent

COPIER_CLASS = "org.apache.kafka.tools.TransactionalMessageCopier"
# What the 3.9 tools jar needs besides kafka-clients and a logger (TransactionalMessageCopier
# parses its arguments with argparse4j and prints its status with Jackson).
_TOOLS_JARS = ("kafka-tools-3.9.0.jar", "argparse4j-0.7.0.jar", "jackson-core-2.16.2.jar",
               "jackson-databind-2.16.2.jar", "jackson-annotations-2.16.2.jar")


def copier_classpath(client_version: str) -> str:
    """The 3.9 tools jar (and what it needs) with kafka-clients ``client_version``'s jars."""
    jars = client_jars([client_version]) / client_version
    libs = KAFKA_HOME / "libs"
    for name in _TOOLS_JARS:
        assert (libs / name).is_file(), f"no {name} in {libs}"
    return os.pathsep.join([*(str(libs / name) for name in _TOOLS_JARS), str(jars / "*")])


class Copier:
    """One TransactionalMessageCopier for input partition ``partition``; see the module
    docstring.  ``total`` is the number of records of that partition (for ``progress``)."""

    def __init__(self, classpath: str, bootstrap: str, *, transactional_id: str, group: str,
                 input_topic: str, output_topic: str, partition: int, total: int,
                 transaction_size: int, log_path: Path, use_group_metadata: bool,
                 transaction_timeout_ms: int = 40000) -> None:
        self.transactional_id = transactional_id
        self.total = total
        self.log_path = log_path
        self.command = [
            "java", *CLIENT_JVM_FLAGS, "-cp", classpath, COPIER_CLASS,
            "--broker-list", bootstrap, "--transactional-id", transactional_id,
            "--consumer-group", group, "--input-topic", input_topic,
            "--input-partition", str(partition), "--output-topic", output_topic,
            "--transaction-size", str(transaction_size),
            "--transaction-timeout", str(transaction_timeout_ms), "--enable-random-aborts",
            *(["--use-group-metadata"] if use_group_metadata else [])]
        self.proc: subprocess.Popen | None = None
        self.status: dict = {}
        self.starts = 0
        self._reader: threading.Thread | None = None

    def start(self) -> "Copier":
        self.starts += 1
        self.status = {}
        log = open(self.log_path, "ab")
        log.write(f"--- start {self.starts}\n".encode())
        log.flush()
        self.proc = subprocess.Popen(self.command, stdout=subprocess.PIPE, stderr=log,
                                     stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        self._reader = threading.Thread(target=self._read, args=(self.proc, log),
                                        name=f"copier-{self.transactional_id}", daemon=True)
        self._reader.start()
        return self

    def _read(self, proc: subprocess.Popen, log) -> None:
        with log:
            for line in proc.stdout:
                log.write(line)
                log.flush()
                if line.startswith(b"{"):
                    try:
                        self.status = json.loads(line)
                    except ValueError:
                        continue

    @property
    def remaining(self) -> int | None:
        value = self.status.get("remaining")
        return None if value is None else int(value)

    @property
    def progress(self) -> float:
        """Share of the partition copied (committed), from the last status line (0 before
        the first)."""
        remaining = self.remaining
        return 0.0 if remaining is None else 1.0 - remaining / self.total

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, clean: bool, timeout: float = 30.0) -> int:
        """SIGTERM (the copier's shutdown hook closes its clients) or SIGKILL; the exit
        code."""
        proc = self.proc
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM if clean else signal.SIGKILL)
        try:
            code = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait(10)
        self._reader.join(10)
        return code

    def bounce(self, clean: bool) -> None:
        self.stop(clean)
        self.start()

    def wait_done(self, timeout: float) -> None:
        """Until the copier exits 0 having copied everything (AssertionError otherwise)."""
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{self.transactional_id} not done after {timeout:.0f}s: "
                                 f"last status {self.status}\n{self.log_tail()}") from None
        self._reader.join(10)
        assert code == 0 and self.remaining == 0, (
            f"{self.transactional_id} exited {code}, last status {self.status}\n"
            f"{self.log_tail()}")

    def log_tail(self, size: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-size:]
        except OSError:
            return ""


def wait_progress(copier: Copier, at_least: float, timeout: float) -> float:
    """Until ``copier`` has copied ``at_least`` of its partition (or finished); its
    progress then."""
    wait_for(lambda: copier.progress >= at_least or not copier.running(), timeout,
             lambda: f"{copier.transactional_id} at {at_least:.0%} (last {copier.status})\n"
                     f"{copier.log_tail()}")
    return copier.progress


class CommittedReader(threading.Thread):
    """A read_committed confluent-kafka consumer of every partition of ``topic`` from
    offset 0, polling until ``stop``; ``records`` holds (partition, value) in the order
    received."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, group: str) -> None:
        super().__init__(name=f"committed-reader-{topic}", daemon=True)
        from confluent_kafka import Consumer, TopicPartition
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                   "isolation.level": "read_committed",
                                   "enable.auto.commit": False,
                                   "enable.partition.eof": False})
        self._consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        self.records: list[tuple[int, bytes]] = []
        self._stopped = threading.Event()

    def run(self) -> None:
        try:
            while not self._stopped.is_set():
                msg = self._consumer.poll(0.2)
                if msg is not None and msg.error() is None:
                    self.records.append((msg.partition(), msg.value()))
        finally:
            self._consumer.close()

    def halt(self) -> None:
        """Stop now (idempotent)."""
        self._stopped.set()
        if self.is_alive():
            self.join(15)

    def stop(self, expected: int, timeout: float) -> list[tuple[int, bytes]]:
        """Until ``expected`` records came (bounded), then 1 s more so that any record
        past them is seen too; the records."""
        deadline = time.monotonic() + timeout
        while len(self.records) < expected and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)
        self._stopped.set()
        self.join(15)
        return list(self.records)


# --------------------------------------------------------------------------- features

def finalized_features(bootstrap: str) -> dict[str, int]:
    """The finalized features of the broker's ApiVersions v3 answer: name -> max level."""
    client = WireClient(bootstrap)
    try:
        r = client.request(18, 3, client_software_name="kafkapy-tests",
                           client_software_version="1")
    finally:
        client.close()
    assert r.error_code == 0, r
    return {f.name: f.max_version_level for f in (r.finalized_features or [])}


def finalize_transaction_version(cluster, level: int, timeout: float = 30.0) -> None:
    """``kafka-features.sh upgrade --feature transaction.version=<level>`` (Kafka 3.9's),
    then until every running broker's ApiVersions lists it finalized.  Nothing to do when
    the cluster is there already."""
    if all(finalized_features(cluster.bootstrap(node)).get("transaction.version") == level
           for node in cluster.running_ids()):
        return
    done = kafka_tool("kafka-features.sh", "--bootstrap-server", cluster.bootstrap(1),
                      "upgrade", "--feature", f"transaction.version={level}", timeout=120)
    assert done.returncode == 0, f"kafka-features.sh: {done.stdout}\n{done.stderr}"
    for node in cluster.running_ids():
        wait_for(lambda: finalized_features(cluster.bootstrap(node)).get(
            "transaction.version") == level, timeout,
            f"broker {node} to list transaction.version={level} as finalized")


# --------------------------------------------------------------------------- cluster state

def wait_fully_replicated(cluster, topics: list[str], timeout: float = 60.0) -> None:
    """Until every partition of ``topics`` has a leader and its whole replica set in sync,
    as every running broker's metadata says (Kafka's await_no_under_replicated_partitions)."""
    def replicated():
        for node in cluster.running_ids():
            view = cluster.metadata(node, topics)
            for topic in topics:
                parts = view.topics.get(topic)
                if not parts:
                    return False
                for p in parts.values():
                    if p.leader < 0 or sorted(p.isr) != sorted(p.replicas):
                        return False
        return True
    wait_for(replicated, timeout, lambda: f"{topics} fully replicated\n{cluster.summary()}")


def describe_transaction(bootstrap: str, transactional_id: str):
    """DescribeTransactions v0 at the transactional id's coordinator (``bootstrap``): its
    state (error code, state, producer id, producer epoch)."""
    client = WireClient(bootstrap)
    try:
        r = client.request(65, 0, transactional_ids=[transactional_id])
    finally:
        client.close()
    s = r.transaction_states[0]
    return s.error_code, s.transaction_state, s.producer_id, s.producer_epoch


def end_offsets(cluster, topic: str, partitions: int, isolation: int) -> dict[int, int]:
    """ListOffsets v5 (latest) at each partition's leader: the high watermark (isolation
    0) or the last stable offset (1) of every partition."""
    leaders = cluster.leaders(topic, cluster.running_ids()[0])
    offsets = {}
    for p in range(partitions):
        client = WireClient(cluster.bootstrap(leaders[p]))
        try:
            r = client.request(2, 5, **fields(2, replica_id=-1, isolation_level=isolation,
                                              topics=[{"name": topic, "partitions": [
                                                  {"partition_index": p,
                                                   "current_leader_epoch": -1,
                                                   "timestamp": -1}]}]))
        finally:
            client.close()
        answer = r.topics[0].partitions[0]
        assert answer.error_code == 0, answer
        offsets[p] = answer.offset
    return offsets
