"""The two brokers under comparison: Apache Kafka 3.9 and kafkapy, both in ZooKeeper mode.

Both start from the repo's ``config/server.properties`` (shaped like Kafka's sample) and get
the same ``SHARED_SETTINGS`` (broker.id, replication factors of the internal
topics, rebalance delay, ...), their own free loopback port, their own log dir and their
own chroot on one ZooKeeper (``/kafka`` and ``/kafkapy``).  Kafka runs from
``<repo>/../shared/kafka_2.13-3.9.0`` (or ``$KAFKA_HOME``) with a small heap, tied to the
test process with ``PR_SET_PDEATHSIG`` like the ZooKeeper server.

``find_kafka_home()`` returns None when Kafka or Java is missing; the fixtures then skip,
except under ``CI=true`` where a missing reference is a failure, not a skip.

For the consumer group protocol, which Kafka 3.9 serves only in KRaft mode, ``kraft_kafka``
starts Kafka 3.9 as one KRaft node (``tests/support/kafka_kraft.py``: ``bench/peers.py``'s
broker, Kafka's own ``config/kraft/server.properties``) with the shared settings that apply
to KRaft (``KRAFT_SETTINGS``) and the protocol turned on as Kafka 4.0 has it by default
(``KRAFT_CONSUMER_PROTOCOL``); its kafkapy counterpart is another ``kafkapy_process``.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

from tests.support.broker_process import ROOT, SERVER_PROPERTIES, BrokerProcess, free_port
from tests.conformance.client import Connection
from tests.support.kafka_jvm import kafka_jvm_opts
from tests.support.kafka_kraft import start_kraft_kafka
from tests.support.zookeeper_server import _die_with_parent

SHARED_SETTINGS = {
    "broker.id": "1",
    "num.partitions": "1",
    "default.replication.factor": "1",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "3",
    "group.initial.rebalance.delay.ms": "0",
    "auto.create.topics.enable": "true",
    "delete.topic.enable": "true",
    "zookeeper.session.timeout.ms": "18000",
}
# CONFORMANCE_AUTHORIZER=1: both sides run Kafka's AclAuthorizer (the client, User:ANONYMOUS
# on PLAINTEXT, is a super user), so the ACL APIs (29-31) are compared with ACLs stored.
if os.environ.get("CONFORMANCE_AUTHORIZER") == "1":
    SHARED_SETTINGS.update({"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                            "super.users": "User:ANONYMOUS"})
# The shared settings a KRaft node takes (its id is node.id; it has no ZooKeeper).
KRAFT_SETTINGS = {k: v for k, v in SHARED_SETTINGS.items()
                  if k not in ("broker.id", "zookeeper.session.timeout.ms")}
# Kafka 3.9 serves ConsumerGroupHeartbeat v0 and ConsumerGroupDescribe v0 (its preview of
# the protocol) once "consumer" is among its rebalance protocols (KafkaApis
# .isConsumerGroupProtocolEnabled reads only this key; unstable.api.versions.enable is not
# needed).  Kafka 4.0's defaults, which kafkapy has: both protocols, and classic groups
# converted to consumer groups and back (3.9's migration policy default is "disabled").
KRAFT_CONSUMER_PROTOCOL = {"group.coordinator.rebalance.protocols": "classic,consumer",
                           "group.consumer.migration.policy": "bidirectional"}
KAFKA_HEAP_OPTS = "-Xmx512m -Xms256m"
START_TIMEOUT_S = 90.0


def find_kafka_home() -> Path | None:
    """Kafka 3.9's install dir beside the repo (or $KAFKA_HOME), if it and java exist."""
    if shutil.which("java") is None:
        return None
    home = Path(os.environ.get("KAFKA_HOME", ROOT.parent / "shared" / "kafka_2.13-3.9.0"))
    return home if (home / "bin" / "kafka-server-start.sh").exists() else None


class KafkaProcess:
    """One Kafka 3.9 broker started with ``bin/kafka-server-start.sh`` on a generated file."""

    def __init__(self, home: Path, base_dir: Path, zk_connect: str) -> None:
        self.home = home
        self.base_dir = base_dir
        self.port = free_port()
        self.zk_connect = zk_connect
        self.proc: subprocess.Popen | None = None
        self.output_path = base_dir / "kafka.out"

    def _properties(self) -> Path:
        settings = dict(SHARED_SETTINGS)
        settings.update({
            "zookeeper.connect": self.zk_connect,
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "log.dirs": str(self.base_dir / "logs"),
        })
        # kafkapy starts from the repo's config/server.properties (Kafka's sample): Kafka gets
        # the same file, so both report the same static settings; later keys win in Java too.
        path = self.base_dir / "server.properties"
        path.write_text(SERVER_PROPERTIES.read_text() + "\n"
                        + "".join(f"{k}={v}\n" for k, v in settings.items()))
        return path

    def start(self) -> "KafkaProcess":
        self.base_dir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, KAFKA_HEAP_OPTS=KAFKA_HEAP_OPTS,
                   LOG_DIR=str(self.base_dir / "kafka-app-logs"),
                   KAFKA_JVM_PERFORMANCE_OPTS=kafka_jvm_opts())
        with open(self.output_path, "ab") as out:
            self.proc = subprocess.Popen(
                [str(self.home / "bin" / "kafka-server-start.sh"), str(self._properties())],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                preexec_fn=_die_with_parent)
        return self

    def output(self) -> str:
        try:
            return self.output_path.read_text(errors="replace")[-6000:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def kraft_kafka(base_dir: Path):
    """Kafka 3.9, one KRaft node serving the consumer group protocol's preview, started."""
    return start_kraft_kafka(base_dir, dict(KRAFT_SETTINGS, **KRAFT_CONSUMER_PROTOCOL),
                             timeout=START_TIMEOUT_S)


def kafkapy_process(base_dir: Path, zk_connect: str) -> BrokerProcess:
    """A kafkapy broker with the shared settings, in its own chroot."""
    overrides = dict(SHARED_SETTINGS, **{"zookeeper.connect": zk_connect})
    return BrokerProcess(base_dir / "logs", overrides=overrides, node_id=1)


def wait_ready(port: int, proc: subprocess.Popen, output, timeout: float = START_TIMEOUT_S) -> None:
    """Until Metadata names a controller (topics can be created from then on)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"broker exited with {proc.returncode}:\n{output()}")
        conn = Connection("127.0.0.1", port)
        try:
            answer = conn.exchange(3, 1, {"topics": []})
            if answer.response is not None and answer.response.controller_id >= 0:
                return
        except OSError:
            pass
        finally:
            conn.close()
        time.sleep(0.2)
    raise RuntimeError(f"broker on {port} not ready within {timeout}s:\n{output()}")
