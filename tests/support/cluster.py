"""A real three-broker cluster on a real ZooKeeper, for the cluster tests (their fixtures are
registered in tests/cluster/conftest.py).

``Cluster`` runs brokers 1, 2 and 3 as separate processes (``tests/support/broker_process.py``:
``python -m kafkapy config/server.properties --override ...``), each on its own loopback
port and log dir, all on one chroot of the session's ZooKeeper (``tests/support/zookeeper_server.py``,
tick 200 ms) with ``zookeeper.session.timeout.ms`` = ``SESSION_TIMEOUT_MS`` (4 s) and the
internal topics at replication factor 3.  It inspects the cluster the way an operator does:
znodes through kazoo (``/controller``, ``/controller_epoch``, ``/brokers/...``), and each
broker's own answer to a raw Metadata request (``metadata``), which is what the broker's
cache holds.  It disturbs brokers with real signals: kill -9, SIGSTOP/SIGCONT, SIGTERM, and
restarts a broker on its own log dir.

Fixtures: ``shared_cluster`` (module scope) for tests that leave every broker running;
``cluster`` (per test) for tests that kill, pause or stop brokers; a module's fixture with
settings of its own is ``yield from running_cluster(base, zookeeper_server, settings)``.

Reference mode: with ``KAFKAPY_CLUSTER_REFERENCE=kafka`` the same tests run against three
Apache Kafka 3.9 brokers in ZooKeeper mode (``../shared/kafka_2.13-3.9.0``), with the same
settings; that is how the tests themselves are checked against the behaviour they demand.
Where the two write different log lines, ``LOG_PATTERNS`` names both.

Invariants: every wait is bounded (``wait_for``); every broker process started here is
killed at teardown (a paused one is killed too: SIGKILL ends a stopped process); traffic
stays on 127.0.0.1.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from kazoo.client import KazooClient

import kafkapy.protocol.inter_broker  # noqa: F401  (registers the inter-broker messages)
from tests.support.broker_process import ROOT, SERVER_PROPERTIES, BrokerProcess, free_port
from tests.support.kafka_jvm import SCRIPT_ENV, kafka_jvm_opts
from tests.support.request_fields import fields
from tests.support.wire import WireClient
from tests.support.zookeeper_server import (_die_with_parent, child_setup,  # noqa: F401
                                            zookeeper_server)  # (fixture)

BROKER_IDS = (1, 2, 3)
SESSION_TIMEOUT_MS = 4000
SESSION_S = SESSION_TIMEOUT_MS / 1000
# How long after a session-ending event a takeover may take: the session timeout itself,
# then the new controller's failover work and the UpdateMetadata round to every broker.
FAILOVER_S = SESSION_S + 16
REFERENCE = os.environ.get("KAFKAPY_CLUSTER_REFERENCE", "")   # "" (kafkapy) or "kafka"
KAFKA_HOME = Path(os.environ.get("KAFKA_HOME", ROOT.parent / "shared" / "kafka_2.13-3.9.0"))
KAFKA_BIN = KAFKA_HOME / "bin"

# Settings every broker of a cluster gets (both implementations).
CLUSTER_SETTINGS = {
    "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
    "num.partitions": "1",
    "default.replication.factor": "1",
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.num.partitions": "3",
    "transaction.state.log.min.isr": "2",
    "group.initial.rebalance.delay.ms": "0",
    "auto.create.topics.enable": "true",
    "delete.topic.enable": "true",
    "controlled.shutdown.enable": "true",
    "controlled.shutdown.retry.backoff.ms": "1000",
    # No automatic preferred-leader elections in the middle of a test: a test that wants
    # one asks for it (ElectLeaders).
    "auto.leader.rebalance.enable": "false",
    # A deleted topic's renamed log dirs go after 1 s instead of Kafka's 60 s.
    "log.segment.delete.delay.ms": "1000",
}

# Log lines by implementation: what a resigning controller and a broker refusing a stale
# controller write.  Kafka: KafkaController.onControllerResignation ("Resigned") in
# controller.log; ReplicaManager "... since its controller epoch N is old" in
# state-change.log.
LOG_PATTERNS = {
    "resigned": re.compile(r"\bResigned\b"),          # kafkapy: "Resigned as the controller"
    "stale_epoch": re.compile(r"STALE_CONTROLLER_EPOCH|stale controller epoch|"
                              r"controller epoch \d+ is old", re.IGNORECASE),
}

STALE_CONTROLLER_EPOCH = 11
STALE_BROKER_EPOCH = 77
NOT_CONTROLLER = 41


# --------------------------------------------------------------------------- waiting

def wait_for(condition, timeout: float, what, interval: float = 0.1):
    """Poll ``condition()`` until it returns something truthy (returned); AssertionError
    naming ``what`` (a string, or a callable giving one at that moment) after ``timeout``
    seconds.  Exceptions from ``condition`` count as
    "not yet" (a broker may be restarting) and the last one is reported."""
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while True:
        try:
            value = condition()
            if value:
                return value
        except Exception as e:  # noqa: BLE001 - retried until the deadline
            last_error = e
        if time.monotonic() >= deadline:
            suffix = f" (last error: {type(last_error).__name__}: {last_error})" if last_error else ""
            text = what() if callable(what) else what
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {text}{suffix}")
        time.sleep(interval)


# --------------------------------------------------------------------------- metadata

@dataclass
class PartitionView:
    error: int
    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    offline: list[int]


@dataclass
class MetadataView:
    """One broker's Metadata v12 answer: what its metadata cache says."""
    controller: int
    brokers: dict[int, int]                 # id -> port
    topics: dict[str, dict[int, PartitionView]] = field(default_factory=dict)
    topic_errors: dict[str, int] = field(default_factory=dict)
    topic_ids: dict[str, str] = field(default_factory=dict)

    def leaders(self, topic: str) -> dict[int, int]:
        return {p: v.leader for p, v in self.topics.get(topic, {}).items()}


def metadata(port: int, topics: list[str] | None = None, timeout: float = 10.0) -> MetadataView:
    """A Metadata v12 request to the broker on ``port`` (no auto-creation)."""
    client = WireClient(f"127.0.0.1:{port}", timeout=timeout)
    try:
        wanted = None if topics is None else [dict(name=t, topic_id=None) for t in topics]
        r = client.request(3, 12, **fields(3, topics=wanted, allow_auto_topic_creation=False,
                                           include_topic_authorized_operations=False))
    finally:
        client.close()
    view = MetadataView(controller=r.controller_id,
                        brokers={b.node_id: b.port for b in r.brokers})
    for t in r.topics:
        view.topic_errors[t.name] = t.error_code
        view.topic_ids[t.name] = str(t.topic_id)
        view.topics[t.name] = {
            p.partition_index: PartitionView(p.error_code, p.leader_id, p.leader_epoch,
                                             list(p.replica_nodes), list(p.isr_nodes),
                                             list(p.offline_replicas))
            for p in t.partitions}
    return view


# --------------------------------------------------------------------------- brokers

class KafkapyNode:
    """A kafkapy broker of the cluster (``BrokerProcess``) on a fixed port and dir."""

    def __init__(self, node_id: int, base: Path, settings: dict[str, str]) -> None:
        self.node_id = node_id
        self.gid: int | None = None      # the group it runs under (None: the test's)
        self.process = BrokerProcess(base / f"broker-{node_id}" / "logs",
                                     overrides=dict(settings), node_id=node_id)

    @property
    def port(self) -> int:
        return self.process.port

    @property
    def log_dir(self) -> Path:
        return self.process.log_dir

    @property
    def proc(self) -> subprocess.Popen | None:
        return self.process.proc

    def launch(self) -> None:
        """Start the process (as BrokerProcess does, but tied to the test process with
        PR_SET_PDEATHSIG, so a killed pytest leaves no broker behind)."""
        p = self.process
        p.log_dir.mkdir(parents=True, exist_ok=True)
        with open(p.output_path, "ab") as out:
            p.proc = subprocess.Popen(p.command(), stdout=out, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, cwd=ROOT,
                                      env=dict(os.environ, PYTHONUNBUFFERED="1"),
                                      preexec_fn=child_setup(self.gid))

    def start(self, timeout: float = 60.0) -> None:
        self.launch()
        wait_started(self, timeout)

    def log_text(self) -> str:
        try:
            return self.process.output_path.read_text(errors="replace")
        except OSError:
            return ""


class KafkaNode:
    """Reference mode: an Apache Kafka 3.9 broker in ZooKeeper mode, same surface."""

    def __init__(self, node_id: int, base: Path, settings: dict[str, str]) -> None:
        self.node_id = node_id
        self.gid: int | None = None      # the group it runs under (None: the test's)
        self.port = free_port()
        self.base = base / f"broker-{node_id}"
        self.log_dir = self.base / "logs"
        self.app_logs = self.base / "kafka-app-logs"
        self.settings = dict(settings)
        self.proc: subprocess.Popen | None = None
        self.output_path = self.base / "kafka.out"

    def launch(self) -> None:
        self.base.mkdir(parents=True, exist_ok=True)
        settings = {"broker.id": str(self.node_id)}   # unless the settings say otherwise
        settings.update(self.settings)
        settings.update({
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "log.dirs": str(self.log_dir)})
        props = self.base / "server.properties"
        props.write_text(SERVER_PROPERTIES.read_text() + "\n"
                         + "".join(f"{k}={v}\n" for k, v in settings.items()))
        with open(self.output_path, "ab") as out:
            self.proc = subprocess.Popen(
                [str(KAFKA_BIN / "kafka-server-start.sh"), str(props)], stdout=out,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=kafka_env(self.app_logs),
                preexec_fn=child_setup(self.gid))

    def start(self, timeout: float = 120.0) -> None:
        self.launch()
        wait_started(self, timeout)

    def log_text(self) -> str:
        parts = []
        for path in (self.output_path, self.app_logs / "controller.log",
                     self.app_logs / "state-change.log"):
            try:
                parts.append(path.read_text(errors="replace"))
            except OSError:
                pass
        return "\n".join(parts)


def wait_started(node, timeout: float) -> None:
    """Until the node's port accepts connections; RuntimeError if the process exits."""
    wait_for(lambda: node.proc.poll() is not None or _listening(node.port), timeout,
             f"broker {node.node_id} to listen on {node.port}")
    if node.proc.poll() is not None:
        raise RuntimeError(f"broker {node.node_id} exited with {node.proc.returncode}:\n"
                           f"{node.log_text()[-6000:]}")


def _listening(port: int) -> bool:
    import socket
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def kafka_env(log_dir: Path, heap: str = "-Xmx384m -Xms64m") -> dict[str, str]:
    """Environment for Kafka's scripts: small heap, quick JIT, logs under ``log_dir`` (never
    inside the shared install), nothing inherited that could point them elsewhere."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("KAFKA_") and k not in ("JMX_PORT", "LOG_DIR", "CLASSPATH")}
    env.update(KAFKA_HEAP_OPTS=heap, LOG_DIR=str(log_dir),
               KAFKA_JVM_PERFORMANCE_OPTS=kafka_jvm_opts(), **SCRIPT_ENV)
    return env


def kafka_tool(script: str, *args: str, stdin: str | None = None, timeout: float = 120.0,
               log_dir: Path | None = None) -> subprocess.CompletedProcess:
    """Run one of Kafka 3.9's own ``bin/`` scripts (a real Java client / ZooKeeper client)."""
    path = KAFKA_BIN / script
    if not path.is_file():
        pytest.skip(f"no Kafka 3.9 scripts at {KAFKA_BIN}")
    if shutil.which("java") is None:
        pytest.skip("no java on PATH")
    return subprocess.run([str(path), *args], input=stdin, capture_output=True, text=True,
                          timeout=timeout, env=tool_env(log_dir),
                          stdin=None if stdin is not None else subprocess.DEVNULL)


def tool_env(log_dir: Path | None = None) -> dict[str, str]:
    """``kafka_env`` for one of Kafka's command-line tools: a smaller heap, and its logs in
    ``log_dir`` or one shared folder outside every test's files."""
    logs = log_dir or Path(os.environ.get("TMPDIR", "/tmp")) / "kafkapy-cluster-tool-logs"
    logs.mkdir(parents=True, exist_ok=True)
    return kafka_env(logs, heap="-Xmx256m -Xms32m")


# --------------------------------------------------------------------------- the cluster

class Cluster:
    """Three brokers on one ZooKeeper chroot; see the module docstring."""

    def __init__(self, base: Path, zk_server, ids=BROKER_IDS,
                 extra_settings: dict[str, str] | None = None) -> None:
        self.base = Path(base)
        self.zk_server = zk_server
        self.chroot = f"/cluster-{uuid.uuid4().hex[:10]}"
        self.zk_connect = f"{zk_server.connect_string}{self.chroot}"
        settings = dict(CLUSTER_SETTINGS, **{"zookeeper.connect": self.zk_connect})
        settings.update(extra_settings or {})
        node_cls = KafkaNode if REFERENCE == "kafka" else KafkapyNode
        self.nodes = {i: node_cls(i, self.base, settings) for i in ids}
        self.paused: set[int] = set()
        self._zk: KazooClient | None = None

    # -- lifecycle ------------------------------------------------------------------------
    def start(self, timeout: float = 90.0) -> "Cluster":
        self.ensure_chroot()
        # Launched from this thread: PR_SET_PDEATHSIG fires when the *thread* that forked
        # the child ends, so no thread pool here.
        for node in self.nodes.values():
            node.launch()
        for node in self.nodes.values():
            wait_started(node, timeout)
        self.wait_ready(timeout=timeout)
        return self

    def ensure_chroot(self) -> None:
        """Create the chroot through the server's root: it must exist before a client
        connects under it (Kafka creates it itself, kafkapy may not)."""
        root = KazooClient(self.zk_server.connect_string)
        root.start(timeout=15)
        try:
            root.ensure_path(self.chroot)
        finally:
            root.stop()
            root.close()

    def wait_ready(self, ids=None, timeout: float = 60.0) -> None:
        """Until every broker in ``ids`` (default: all running) is registered, a controller
        is elected, and each of them answers Metadata listing all of them and naming the
        controller."""
        ids = sorted(ids if ids is not None else self.running_ids())

        def ready():
            if not set(ids) <= set(self.registered()):
                return False
            controller = self.controller_id()
            if controller is None:
                return False
            for i in ids:
                view = metadata(self.nodes[i].port)
                if view.controller != controller or not set(ids) <= set(view.brokers):
                    return False
            return True
        wait_for(ready, timeout, lambda: f"brokers {ids} registered, a controller elected and "
                 "every broker's metadata naming all of them\n" + self.summary())

    def stop(self) -> None:
        for node in self.nodes.values():
            self.kill(node.node_id)
        if self._zk is not None:
            self._zk.stop()
            self._zk.close()
            self._zk = None

    def add_broker(self, key: int, extra_settings: dict[str, str] | None = None,
                   timeout: float = 90.0):
        """Start one more broker (``key`` names its dir, and is its broker.id unless
        ``extra_settings`` set one) on the same chroot; returns its node."""
        settings = dict(CLUSTER_SETTINGS, **{"zookeeper.connect": self.zk_connect})
        settings.update(extra_settings or {})
        node_cls = KafkaNode if REFERENCE == "kafka" else KafkapyNode
        node = self.nodes[key] = node_cls(key, self.base, settings)
        node.start(timeout=timeout)
        return node

    def running_ids(self) -> list[int]:
        return [i for i, n in self.nodes.items() if n.proc is not None and n.proc.poll() is None]

    # -- signals --------------------------------------------------------------------------
    def kill(self, node_id: int) -> None:
        """kill -9 (also ends a SIGSTOPped process)."""
        proc = self.nodes[node_id].proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
        self.paused.discard(node_id)

    def pause(self, node_id: int) -> None:
        self.nodes[node_id].proc.send_signal(signal.SIGSTOP)
        self.paused.add(node_id)

    def resume(self, node_id: int) -> None:
        self.nodes[node_id].proc.send_signal(signal.SIGCONT)
        self.paused.discard(node_id)

    def terminate(self, node_id: int, timeout: float = 60.0) -> int:
        """SIGTERM and wait for the exit; returns the exit code."""
        proc = self.nodes[node_id].proc
        proc.send_signal(signal.SIGTERM)
        return proc.wait(timeout)

    def restart(self, node_id: int, timeout: float = 90.0) -> None:
        """Start a stopped broker again on its own port and log dir."""
        assert node_id not in self.running_ids(), f"broker {node_id} is still running"
        self.nodes[node_id].start(timeout=timeout)

    # -- ZooKeeper ------------------------------------------------------------------------
    @property
    def zk(self) -> KazooClient:
        if self._zk is None:
            self._zk = KazooClient(self.zk_connect)
            self._zk.start(timeout=15)
        return self._zk

    def znode_json(self, path: str):
        data, _ = self.zk.get(path)
        return json.loads(data)

    def controller_id(self) -> int | None:
        try:
            return self.znode_json("/controller")["brokerid"]
        except Exception:  # noqa: BLE001 - NoNodeError: no controller right now
            return None

    def controller_epoch(self) -> int:
        data, _ = self.zk.get("/controller_epoch")
        return int(data)

    def registered(self) -> list[int]:
        try:
            return sorted(int(c) for c in self.zk.get_children("/brokers/ids"))
        except Exception:  # noqa: BLE001
            return []

    def broker_epoch(self, node_id: int) -> int:
        """czxid of the broker's registration (Kafka's broker epoch)."""
        _, stat = self.zk.get(f"/brokers/ids/{node_id}")
        return stat.czxid

    def assignment(self, topic: str) -> dict[int, list[int]]:
        return {int(p): r for p, r in self.znode_json(f"/brokers/topics/{topic}")["partitions"].items()}

    def partition_state(self, topic: str, partition: int) -> dict:
        return self.znode_json(f"/brokers/topics/{topic}/partitions/{partition}/state")

    def states(self, topic: str) -> dict[int, dict]:
        return {p: self.partition_state(topic, p) for p in self.assignment(topic)}

    # -- brokers' views -------------------------------------------------------------------
    def bootstrap(self, node_id: int) -> str:
        return f"127.0.0.1:{self.nodes[node_id].port}"

    def metadata(self, node_id: int, topics: list[str] | None = None) -> MetadataView:
        return metadata(self.nodes[node_id].port, topics)

    def leaders(self, topic: str, via: int) -> dict[int, int]:
        return metadata(self.nodes[via].port, [topic]).leaders(topic)

    def wait_topic(self, topic: str, partitions: int, via=None, timeout: float = 30.0,
                   leaders_in=None) -> dict[int, int]:
        """Until every broker in ``via`` (default: all running) reports ``partitions``
        partitions of ``topic`` with a leader (in ``leaders_in`` when given); the leaders."""
        via = list(via if via is not None else self.running_ids())
        allowed = set(leaders_in) if leaders_in is not None else set(self.nodes)

        def settled():
            seen = None
            for i in via:
                leaders = self.leaders(topic, i)
                if sorted(leaders) != list(range(partitions)):
                    return None
                if not all(l in allowed for l in leaders.values()):
                    return None
                if seen is not None and leaders != seen:
                    return None
                seen = leaders
            return seen
        return wait_for(settled, timeout, f"{topic}: {partitions} partitions with leaders "
                                          f"in {sorted(allowed)} on brokers {via}")

    def log_text(self, node_id: int) -> str:
        return self.nodes[node_id].log_text()

    def summary(self) -> str:
        """Who is registered, who controls, and each broker's output tail (for failures)."""
        lines = [f"registered={self.registered()} controller={self.controller_id()} "
                 f"running={self.running_ids()} paused={sorted(self.paused)}"]
        for i, n in self.nodes.items():
            lines.append(f"--- broker {i} (port {n.port}) output tail ---")
            lines.append(n.log_text()[-2500:])
        return "\n".join(lines)


# --------------------------------------------------------------------------- fixtures

def _skip_without_reference() -> None:
    if REFERENCE == "kafka" and not (KAFKA_BIN / "kafka-server-start.sh").is_file():
        pytest.skip(f"KAFKAPY_CLUSTER_REFERENCE=kafka but no Kafka at {KAFKA_HOME}")


def running_cluster(base: Path, zk_server, extra_settings: dict[str, str] | None = None,
                    prepare=None):
    """The body of every cluster fixture (``yield from`` it): a started Cluster under
    ``base``, whose brokers are killed however the test ends.  ``prepare(c)`` runs between
    construction and start (to rewire a node, say); what it returns runs after the stop."""
    _skip_without_reference()
    c = Cluster(base, zk_server, extra_settings=extra_settings)
    cleanup = prepare(c) if prepare is not None else None
    try:
        c.start()
        yield c
    finally:
        c.stop()
        if cleanup is not None:
            cleanup()


@pytest.fixture(scope="module")
def shared_cluster(tmp_path_factory, zookeeper_server):  # noqa: F811
    """One cluster for a module whose tests leave every broker running."""
    yield from running_cluster(tmp_path_factory.mktemp("cluster"), zookeeper_server)


@pytest.fixture
def cluster(tmp_path, zookeeper_server):  # noqa: F811
    """A cluster of this test's own, for tests that kill, pause or stop brokers."""
    yield from running_cluster(tmp_path / "cluster", zookeeper_server)


@pytest.fixture
def unique():
    """Topic names of this test's own (a module cluster is shared between tests)."""
    suffix = uuid.uuid4().hex[:6]
    return lambda name: f"{name}-{suffix}"
